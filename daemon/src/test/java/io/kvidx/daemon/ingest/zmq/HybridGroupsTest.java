package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.MODEL;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A hybrid model's engine (a real Python publisher in vLLM's format) stores every block in a full-attention group
 * and a sliding-window group, and drops blocks from the sliding-window group that the full-attention group still
 * holds. The index follows the full-attention group only: the other group's events are counted, never applied.
 */
@Timeout(90)
class HybridGroupsTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PythonPublisherTest.requirePython();
    }

    @ParameterizedTest(name = "{0} events")
    @ValueSource(strings = {"array", "map"})
    void shouldFollowTheFullAttentionGroupOnly(final String shape) throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String pod = "hybrid-" + shape;
        try (PythonPublisherTest.Peer peer =
                 new PythonPublisherTest.Peer("kv@" + pod + "@" + MODEL, shape, "new", "uint")) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, peer.replayEndpoint));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
                    peer.command("ping");
                    Thread.sleep(20);
                }
                final var c = daemon.counters();
                // Group 0 is a sliding window here: a hybrid model need not put full attention first.
                peer.command("store-group kv_event_base.json 0 sliding_window");
                await("sliding-window store counted", () -> c.value(CounterType.OTHER_GROUP_EVENTS) == 1);
                assertEquals(0, depth(reader, pod, base, null), "a sliding-window store must not index blocks");

                peer.command("store-group kv_event_base.json 1 full_attention");
                await("depth 25", () -> depth(reader, pod, base, null) == 25);

                // The sliding window slides: its group drops the blocks the full-attention group still holds.
                peer.command("remove-group kv_event_base.json 0 20 0");
                await("sliding-window removal counted", () -> c.value(CounterType.OTHER_GROUP_EVENTS) == 2);
                assertEquals(25, depth(reader, pod, base, null));

                // Another full-attention kind in a second group (its blocks carry the same hashes) changes nothing.
                peer.command("store-group kv_event_base.json 2 mla_attention");
                peer.command("remove-group kv_event_base.json 10 25 2");
                await("second group counted", () -> c.value(CounterType.OTHER_GROUP_EVENTS) == 4);
                assertEquals(25, depth(reader, pod, base, null));

                // The full-attention group's own removal is applied.
                peer.command("remove-group kv_event_base.json 15 25 1");
                await("depth 15", () -> depth(reader, pod, base, null) == 15);
                assertEquals(0, c.value(CounterType.EVENTS_DROPPED));
            }
        }
    }
}
