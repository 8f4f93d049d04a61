package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.ObjectStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Snapshots in the object store: a consumer stores its snapshots in the bucket as it applies the stream (the older
 * ones deleted); a daemon started later in a new cell loads the newest one, consumes the stream from the sequence
 * after it (not from the start) and answers every query as the relay does; a corrupt newest snapshot is counted and
 * skipped for the next older one, and the late daemon is still exact.
 */
@Timeout(180)
class JetStreamSnapshotTest {
    private static final String PODS = "pod-a,pod-b,10.0.0.9:8000";

    @TempDir
    Path dir;

    private DaemonContext snapshotting(final String url) {
        final DaemonContext c = StreamFleet.consumer(dir, "first", url);
        c.jetstream().snapshotIntervalMs(1_000).snapshotEvents(150);
        return c;
    }

    @Test
    void shouldLoadTheNewestSnapshotAndReplayTheStreamFromItsSequence() throws Exception {
        PyPeer.requirePython();
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL);
            KvidxDaemon relay = KvidxDaemon.start(StreamFleet.relay(dir, "relay", peer, nats.url()))) {
            StreamFleet.awaitSubscribed(peer, relay);
            final Path docs = dir.resolve("docs.txt");
            final List<int[]> documents;
            try (KvidxDaemon first = KvidxDaemon.start(snapshotting(nats.url()))) {
                peer.command("stream 21 900 600 " + PODS + " " + StreamFleet.MODEL + " " + docs + " "
                    + dir.resolve("log-1.txt"));
                peer.command("stream-wait 60");
                documents = StreamFleet.documents(docs);
                JetStreamConsumerTest.agree(relay, first, documents);
                JetStreamRelayTest.await("snapshots stored", 20_000,
                    () -> first.counters().value(CounterType.JETSTREAM_SNAPSHOTS_STORED) >= 2);
            }
            // More events after the newest snapshot: the late daemon must replay them from the stream.
            peer.command("stream 22 300 600 " + PODS + " " + StreamFleet.MODEL + " " + dir.resolve("docs-2.txt")
                + " " + dir.resolve("log-2.txt"));
            peer.command("stream-wait 60");
            final List<int[]> later = StreamFleet.documents(dir.resolve("docs-2.txt"));

            final List<SnapshotBucket.Entry> stored;
            final long streamLast;
            try (Connection nc = Nats.connect(nats.url())) {
                stored = new SnapshotBucket(nc.objectStore("KVIDX_SNAPSHOTS")).list();
                streamLast = nc.jetStreamManagement().getStreamInfo("KVIDX_EVENTS").getStreamState()
                    .getLastSequence();
            }
            assertTrue(stored.size() <= SnapshotBucket.KEPT && !stored.isEmpty(), "older snapshots deleted: "
                + stored);
            final long covered = stored.get(0).sequence();
            assertTrue(covered > 0 && covered < streamLast, covered + " of " + streamLast);

            final long start = System.nanoTime();
            try (KvidxDaemon late = KvidxDaemon.start(StreamFleet.consumer(dir, "late", nats.url()))) {
                assertNotNull(late.catchUp(), "the late daemon loaded a snapshot");
                JetStreamConsumerTest.agree(relay, late, documents);
                JetStreamConsumerTest.agree(relay, late, later);
                final long exactMs = (System.nanoTime() - start) / 1_000_000;
                System.out.println("late replica exact " + exactMs + " ms after its start (snapshot covering "
                    + covered + " of " + streamLast + " stream messages)");
                // From the start it would have applied at least the `covered` messages the snapshot holds.
                assertTrue(late.counters().value(CounterType.JETSTREAM_APPLIED) < covered,
                    "consumed from the snapshot's sequence, not from the start: "
                        + late.counters().value(CounterType.JETSTREAM_APPLIED) + " applied, " + covered + " covered");
                assertEquals(0, late.counters().value(CounterType.JETSTREAM_LOST));
                assertEquals(200, StreamFleet.health(late.httpPort()));
            }

            // A corrupt snapshot newer than every good one: skipped (counted), the next older one loaded.
            try (Connection nc = Nats.connect(nats.url())) {
                final ObjectStore bucket = nc.objectStore("KVIDX_SNAPSHOTS");
                bucket.put(SnapshotBucket.objectName(streamLast), "not a snapshot".getBytes());
            }
            try (KvidxDaemon third = KvidxDaemon.start(StreamFleet.consumer(dir, "third", nats.url()))) {
                assertNotNull(third.catchUp(), "the next older snapshot was loaded");
                assertEquals(1, third.counters().value(CounterType.JETSTREAM_SNAPSHOT_FAILURES));
                JetStreamConsumerTest.agree(relay, third, documents);
                JetStreamConsumerTest.agree(relay, third, later);
            }
        }
    }
}
