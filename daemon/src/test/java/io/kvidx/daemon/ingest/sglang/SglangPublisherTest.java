package io.kvidx.daemon.ingest.sglang;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.ingest.zmq.ZmqIngestTestAccess;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.List;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A real SGLang-format publisher in Python (sglang_publisher.py: pyzmq + msgpack, the framing and event shapes of
 * SGLang's kv_events.py) in its own process, feeding the real daemon over loopback TCP through an endpoint
 * configured with engine {@code sglang}: array events (with the trailing metadata map of a salted store) and tagged
 * map events with {@code cache_salt} and {@code session_id}; signed 64-bit hashes; EAGLE's bigram token pairs; the
 * HiCache host tier; replay replies without a topic frame, for an endpoint that names its pod and for one that takes
 * it from the topic (with the epoch a snapshot-enabled publisher appends after a NUL); {@code attn_dp_rank} making
 * rank 1 a pod of its own; a publisher restart.
 */
@Timeout(120)
class SglangPublisherTest {
    static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    static int depth(final IndexReader reader, final String podId, final Capture capture) {
        return depth(reader, podId, capture, null);
    }

    static int depth(final IndexReader reader, final String podId, final Capture capture, final String salt) {
        return ZmqIngestTestAccess.depth(reader, podId, capture, null, salt);
    }

    static void pingUntil(final String what, final List<PyPeer> peers, final BooleanSupplier condition)
        throws Exception {
        final long deadline = System.currentTimeMillis() + 20_000;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            for (final PyPeer p : peers) {
                p.command("ping");
            }
            Thread.sleep(20);
        }
    }

    @ParameterizedTest(name = "{0} events")
    @CsvSource({"array", "map"})
    void shouldIndexWhatARealSglangFormatPublisherSends(final String shape) throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        try (PyPeer fixed = new PyPeer(PyPeer.SGLANG, "--shape", shape, "--rank", "0");
            PyPeer topic = new PyPeer(PyPeer.SGLANG, "--shape", shape, "--rank", "1", "--topic",
                "kv@sg-topic@" + MODEL, "--epoch", "5f0c")) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.zmq().addEndpoint(new ZmqEndpoint(fixed.endpoint, "sg", MODEL, fixed.replayEndpoint,
                    ZmqEndpoint.Engine.SGLANG))
                .addEndpoint(new ZmqEndpoint(topic.endpoint, null, null, topic.replayEndpoint))
                .engine(topic.endpoint, "sglang");
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                final List<PyPeer> both = List.of(fixed, topic);
                for (final PyPeer p : both) {
                    p.command("store kv_event_base.json tenant-a session-7");
                }
                // The event-level cache salt seeds the chain: only a query with the same salt matches.
                pingUntil("both pods hold the salted store", both, () -> depth(reader, "sg", base, "tenant-a") == 25
                    && depth(reader, "sg-topic#1", base, "tenant-a") == 25);
                assertEquals(0, depth(reader, "sg", base), "an unsalted query must not match a salted chain");
                assertEquals(0, depth(reader, "sg", base, "tenant-b"), "nor another tenant's salt");

                for (final PyPeer p : both) {
                    p.command("remove kv_event_base.json 15 25");
                }
                pingUntil("depth 15", both, () -> depth(reader, "sg", base, "tenant-a") == 15
                    && depth(reader, "sg-topic#1", base, "tenant-a") == 15);

                // Lost batches come back through replay replies without a topic frame.
                for (final PyPeer p : both) {
                    p.command("lose remove kv_event_base.json 5 15");
                    p.command("ping");
                }
                pingUntil("depth 5 after replay", both, () -> depth(reader, "sg", base, "tenant-a") == 5
                    && depth(reader, "sg-topic#1", base, "tenant-a") == 5);

                fixed.command("store-bigram kv_event_base.json");
                pingUntil("EAGLE bigram pages keyed by their first tokens", both,
                    () -> depth(reader, "sg", base) == 25);

                fixed.command("remove kv_event_base.json 0 25 GPU");
                fixed.command("store-cpu kv_event_base.json");
                fixed.command("ping");
                pingUntil("the HiCache host tier", both, () -> depth(reader, "sg", base) == 25);

                topic.command("clear");
                pingUntil("cleared", both, () -> depth(reader, "sg-topic#1", base) == 0);

                fixed.command("restart");
                fixed.command("ping");
                pingUntil("cleared by the restart", both, () -> depth(reader, "sg", base) == 0);
                fixed.command("store kv_event_base.json");
                pingUntil("depth 25 after the restart", both, () -> depth(reader, "sg", base) == 25);

                final var c = daemon.counters();
                assertEquals(0, c.value(CounterType.EVENTS_DROPPED));
                assertEquals(0, c.value(CounterType.DECODE_ERRORS));
                assertEquals(0, c.value(CounterType.UNKNOWN_EVENT_TYPES));
                assertEquals(0, c.value(CounterType.FRAMING_ERRORS));
                assertEquals(0, c.value(CounterType.REPLAY_FAILURES));
                assertEquals(0, c.value(CounterType.TOKEN_COUNT_MISMATCHES));
                assertEquals(1, c.value(CounterType.SEQUENCE_RESETS));
            }
        }
    }
}
