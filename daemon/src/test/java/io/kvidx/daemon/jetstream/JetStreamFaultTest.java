package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.nats.client.Connection;
import io.nats.client.Nats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Faults with real processes (nats-server, the Python publisher): a NATS server restarted while events flow (the
 * relay resends what was not acknowledged, the consumer's ordered consumer resumes: exact, nothing lost); the
 * consumer's connection alone cut twice (through a forwarder; exact, nothing lost); a consumer kept away longer
 * than the stream's retention (the loss counted, the daemon stops, and its restart makes a new index from the
 * newest snapshot: exact); a stream
 * deleted under a running consumer (counted, logged, {@code /health} not ready with the reason); a snapshot older
 * than the stream's first sequence (loaded, the messages between counted as lost, not ready).
 */
@Timeout(180)
class JetStreamFaultTest {
    private static final String PODS = "pod-a,pod-b,10.0.0.9:8000";

    @TempDir
    Path dir;

    private String stream(final PyPeer peer, final int seed, final int count, final int rate, final String name)
        throws Exception {
        final Path docs = dir.resolve(name + "-docs.txt");
        peer.command("stream " + seed + " " + count + " " + rate + " " + PODS + " " + StreamFleet.MODEL + " " + docs
            + " " + dir.resolve(name + "-log.txt"));
        return docs.toString();
    }

    @Test
    void shouldStayExactThroughANatsServerRestart() throws Exception {
        PyPeer.requirePython();
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL);
            KvidxDaemon relay = KvidxDaemon.start(StreamFleet.relay(dir, "relay", peer, nats.url()));
            KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()))) {
            StreamFleet.awaitSubscribed(peer, relay);
            final String docs = stream(peer, 31, 1_200, 300, "a");
            // Mid-stream: the consumer has applied some of it (not a fixed time, which a loaded machine stretches).
            JetStreamRelayTest.await("the consumer mid-stream", 20_000,
                () -> consumer.counters().value(CounterType.JETSTREAM_APPLIED) > 100);
            nats.stop();
            Thread.sleep(1_500);
            nats.restart();
            peer.command("stream-wait 60");
            JetStreamConsumerTest.agree(relay, consumer, StreamFleet.documents(Path.of(docs)));
            assertTrue(consumer.counters().value(CounterType.JETSTREAM_ERRORS) > 0, "the outage was counted");
            assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_LOST));
            assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_BAD_MESSAGES));
            assertEquals(200, StreamFleet.health(consumer.httpPort()));
        }
    }

    @Test
    void shouldStayExactWhenTheConsumersConnectionAloneDrops() throws Exception {
        PyPeer.requirePython();
        try (NatsServer nats = NatsServer.start(dir);
            TcpCutter cutter = new TcpCutter(nats.port());
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL);
            KvidxDaemon relay = KvidxDaemon.start(StreamFleet.relay(dir, "relay", peer, nats.url()));
            KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", cutter.url()))) {
            StreamFleet.awaitSubscribed(peer, relay);
            final String docs = stream(peer, 35, 1_200, 300, "a");
            JetStreamRelayTest.await("the consumer mid-stream", 20_000,
                () -> consumer.counters().value(CounterType.JETSTREAM_APPLIED) > 100);
            cutter.cut();
            final long appliedAtFirstCut = consumer.counters().value(CounterType.JETSTREAM_APPLIED);
            JetStreamRelayTest.await("the consumer back and further on", 20_000,
                () -> consumer.counters().value(CounterType.JETSTREAM_APPLIED) > appliedAtFirstCut + 50);
            cutter.cut();
            peer.command("stream-wait 60");
            JetStreamConsumerTest.agree(relay, consumer, StreamFleet.documents(Path.of(docs)));
            assertTrue(consumer.counters().value(CounterType.JETSTREAM_ERRORS) > 0, "the drops were counted");
            assertEquals(0, relay.counters().value(CounterType.JETSTREAM_ERRORS), "the relay's connection held");
            assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_LOST));
            assertEquals(200, StreamFleet.health(consumer.httpPort()));
        }
    }

    @Test
    void shouldStopAndRestartFromTheNewestSnapshotAfterFallingBehindTheRetention() throws Exception {
        PyPeer.requirePython();
        try (NatsServer nats = NatsServer.start(dir);
            TcpCutter cutter = new TcpCutter(nats.port());
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL)) {
            final DaemonContext relayContext = StreamFleet.relay(dir, "relay", peer, nats.url());
            relayContext.jetstream().maxAgeMs(4_000).duplicateWindowMs(1_000);
            final DaemonContext keeperContext = StreamFleet.consumer(dir, "keeper", nats.url());
            keeperContext.jetstream().snapshotIntervalMs(1_000).snapshotEvents(20);
            try (KvidxDaemon relay = KvidxDaemon.start(relayContext);
                KvidxDaemon keeper = KvidxDaemon.start(keeperContext)) {
                StreamFleet.awaitSubscribed(peer, relay);
                final String docs = stream(peer, 36, 1_000, 100, "a");
                String fatal;
                try (KvidxDaemon behind = KvidxDaemon.start(StreamFleet.consumer(dir, "behind", cutter.url()))) {
                    JetStreamRelayTest.await("the consumer running", 10_000,
                        () -> behind.counters().value(CounterType.JETSTREAM_APPLIED) > 10);
                    // Away for longer than the stream keeps messages: what it needs next ages out meanwhile.
                    cutter.block(true);
                    Thread.sleep(6_000);
                    cutter.block(false);
                    JetStreamRelayTest.await("the loss found and the daemon stopped", 20_000,
                        () -> behind.fatalError() != null);
                    fatal = behind.fatalError();
                    assertTrue(behind.counters().value(CounterType.JETSTREAM_LOST) > 0);
                }
                assertTrue(fatal.contains("lost") && fatal.contains("exitOnLoss"), fatal);
                peer.command("stream-wait 60");
                // Its supervisor starts it again: a new index from the keeper's newest snapshot, then the stream.
                try (KvidxDaemon restarted = KvidxDaemon.start(StreamFleet.consumer(dir, "behind", nats.url()))) {
                    assertTrue(restarted.catchUp() != null, "the newest snapshot was loaded");
                    JetStreamConsumerTest.agree(relay, restarted, StreamFleet.documents(Path.of(docs)));
                    assertEquals(200, StreamFleet.health(restarted.httpPort()));
                    assertEquals(null, restarted.fatalError());
                }
                assertTrue(keeper.counters().value(CounterType.JETSTREAM_SNAPSHOTS_STORED) > 0);
            }
        }
    }

    @Test
    void shouldReportAStreamDeletedUnderARunningConsumer() throws Exception {
        PyPeer.requirePython();
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL);
            KvidxDaemon relay = KvidxDaemon.start(StreamFleet.relay(dir, "relay", peer, nats.url()));
            KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()))) {
            StreamFleet.awaitSubscribed(peer, relay);
            final String docs = stream(peer, 32, 200, 400, "a");
            peer.command("stream-wait 60");
            JetStreamConsumerTest.agree(relay, consumer, StreamFleet.documents(Path.of(docs)));
            assertEquals(200, StreamFleet.health(consumer.httpPort()));
            try (Connection nc = Nats.connect(nats.url())) {
                assertTrue(nc.jetStreamManagement().deleteStream("KVIDX_EVENTS"));
            }
            JetStreamRelayTest.await("the consumer not ready", 10_000, () -> {
                try {
                    return StreamFleet.health(consumer.httpPort()) == 503;
                } catch (final Exception ex) {
                    throw new AssertionError(ex);
                }
            });
            assertTrue(consumer.counters().value(CounterType.JETSTREAM_ERRORS) > 0);
        }
    }

    @Test
    void shouldCountTheMessagesASnapshotOlderThanTheStreamMisses() throws Exception {
        PyPeer.requirePython();
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL)) {
            final DaemonContext relayContext = StreamFleet.relay(dir, "relay", peer, nats.url());
            relayContext.jetstream().maxAgeMs(2_000).duplicateWindowMs(1_000);
            try (KvidxDaemon relay = KvidxDaemon.start(relayContext)) {
                StreamFleet.awaitSubscribed(peer, relay);
                final DaemonContext first = StreamFleet.consumer(dir, "first", nats.url());
                first.jetstream().snapshotIntervalMs(1_000).snapshotEvents(50);
                try (KvidxDaemon snapshotting = KvidxDaemon.start(first)) {
                    stream(peer, 33, 200, 400, "a");
                    peer.command("stream-wait 60");
                    JetStreamRelayTest.await("a snapshot stored", 20_000,
                        () -> snapshotting.counters().value(CounterType.JETSTREAM_SNAPSHOTS_STORED) > 0);
                }
                // Everything the stream held ages out; new events follow.
                Thread.sleep(3_000);
                stream(peer, 34, 100, 400, "b");
                peer.command("stream-wait 60");
                try (KvidxDaemon late = KvidxDaemon.start(StreamFleet.consumer(dir, "late", nats.url()))) {
                    assertTrue(late.catchUp() != null, "the snapshot was loaded all the same");
                    JetStreamRelayTest.await("the loss counted", 10_000,
                        () -> late.counters().value(CounterType.JETSTREAM_LOST) > 0);
                    assertEquals(503, StreamFleet.health(late.httpPort()));
                }
            }
        }
    }
}
