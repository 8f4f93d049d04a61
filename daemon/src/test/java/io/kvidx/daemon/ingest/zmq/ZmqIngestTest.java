package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Real JeroMQ publisher (PUB + ROUTER replay) into the real daemon (JeroMQ SUB, writer agents, index), checked
 * through a real {@link IndexReader}.
 */
@Timeout(60)
class ZmqIngestTest {
    static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;

    static int depth(final IndexReader reader, final String podId, final Capture capture, final String lora) {
        return depth(reader, podId, capture, lora, null);
    }

    /** Depth the pod holds of the capture's chain, keyed with the model, LoRA name and cache salt given. */
    static int depth(final IndexReader reader, final String podId, final Capture capture, final String lora,
        final String salt) {
        final long[] keys = new long[64];
        final int n = new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed(MODEL, lora, salt), capture.tokenIds(),
            capture.tokenIds().length, keys);
        return depthOfKeys(reader, podId, keys, n);
    }

    /** Depth the pod holds of the chain {@code keys[0..n)}. */
    static int depthOfKeys(final IndexReader reader, final String podId, final long[] keys, final int n) {
        return io.kvidx.daemon.index.TestIndexes.depthOf(reader, podId, keys, n);
    }

    static void await(final String what, final BooleanSupplier condition) throws InterruptedException {
        final long deadline = System.currentTimeMillis() + 10_000;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(2);
        }
    }

    private static VllmPayloads payloads(final String shape) {
        return new VllmPayloads(VllmPayloads.Shape.valueOf(shape), VllmPayloads.HashWidth.UINT64);
    }

    private static boolean keepOnGap(final String shape) {
        return "ARRAY".equals(shape);
    }

    @ParameterizedTest(name = "{0} events, new replay framing {1}, pod from topic {2}")
    @CsvSource({"ARRAY, false, false", "MAP, true, true", "MAP, false, true", "ARRAY, true, false"})
    void shouldIngestStoreRemoveGapReplayClearRestartAndBadInput(final String shape, final boolean newFraming,
        final boolean podFromTopic) throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");
        final long[] h = base.blockHashes();
        final String pod = "pod-" + shape.toLowerCase() + "-" + newFraming;
        try (JavaVllmPublisher publisher = new JavaVllmPublisher("kv@" + pod + "@" + MODEL, newFraming)) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.zmq().replayTimeoutMs(2_000).replayGapPolicy(keepOnGap(shape) ? "keep" : "clear")
                .addEndpoint(new ZmqEndpoint(publisher.endpoint(), podFromTopic ? null : pod,
                    podFromTopic ? null : MODEL, publisher.replayEndpoint()));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                // Slow joiner: publish empty batches until one arrives; the first one triggers a replay from 0.
                final byte[] ping = payloads(shape).batch(0);
                while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
                    publisher.publish(ping);
                    Thread.sleep(20);
                }

                publisher.publish(payloads(shape).stored(h, null, base.tokenIds(), 16, null, "GPU")
                    .stored(lora.blockHashes(), null, lora.tokenIds(), 16, "Alice", "GPU").batch(0));
                await("depth 25", () -> depth(reader, pod, base, null) == 25);
                await("lora depth 25", () -> depth(reader, pod, lora, "Alice") == 25);

                publisher.publish(payloads(shape).removed(Arrays.copyOfRange(h, 18, 25), null).batch(0));
                await("depth 18", () -> depth(reader, pod, base, null) == 18);

                // A lost message: the next one reveals the gap; the replay brings the lost removal back.
                publisher.lose(payloads(shape).removed(Arrays.copyOfRange(h, 10, 18), "GPU").batch(0));
                publisher.publish(ping);
                await("depth 10 after replay", () -> depth(reader, pod, base, null) == 10);

                // Bad input: wrong frame counts, a short sequence frame, garbage and truncated msgpack.
                final byte[] topic = ("kv@" + pod + "@" + MODEL).getBytes();
                publisher.sendRaw(topic, new byte[8]);
                publisher.sendRaw(topic, new byte[8], ping, ping);
                publisher.sendRaw(topic, new byte[7], ping);
                publisher.publish(new byte[] {(byte) 0xc1, 0x00, 0x13});
                final byte[] good = payloads(shape).stored(h, null, base.tokenIds(), 16, null, null).batch(0);
                publisher.publish(Arrays.copyOf(good, good.length / 2));
                publisher.publish(good);
                await("depth 25 after bad input", () -> depth(reader, pod, base, null) == 25);
                assertEquals(3, daemon.counters().value(CounterType.FRAMING_ERRORS));
                assertEquals(2, daemon.counters().value(CounterType.DECODE_ERRORS));
                // The ingest agent has moved past the replay: it filled the gap completely.
                assertEquals(1, daemon.counters().value(CounterType.SEQUENCE_GAPS));
                assertEquals(0, daemon.counters().value(CounterType.REPLAY_FAILURES));

                publisher.publish(payloads(shape).cleared().batch(0));
                await("depth 0 after clear", () -> depth(reader, pod, base, null) == 0
                    && depth(reader, pod, lora, "Alice") == 0);

                publisher.publish(payloads(shape).stored(lora.blockHashes(), null, lora.tokenIds(), 16, "Alice",
                    null).batch(0));
                await("lora depth 25", () -> depth(reader, pod, lora, "Alice") == 25);

                // Publisher restart: sequence back to 0. The pod is cleared, then the new stream applies.
                publisher.restart();
                publisher.publish(payloads(shape).stored(h, null, base.tokenIds(), 16, null, null).batch(0));
                await("depth 25 after restart", () -> depth(reader, pod, base, null) == 25);
                assertEquals(0, depth(reader, pod, lora, "Alice"), "the restart cleared the pod first");
                assertEquals(1, daemon.counters().value(CounterType.SEQUENCE_RESETS));

                // A gap the engine can no longer replay (the lost batch cleared the pod).
                publisher.lose(payloads(shape).cleared().batch(0));
                publisher.dropReplayBuffer();
                publisher.publish(payloads(shape).removed(Arrays.copyOfRange(h, 20, 25), null).batch(0));
                if (keepOnGap(shape)) {
                    // Policy keep: counted, pod marked suspect, its blocks kept, later batches still apply.
                    await("depth 20 after unreplayable gap", () -> depth(reader, pod, base, null) == 20);
                    await("replay failure", () -> daemon.counters().value(CounterType.REPLAY_FAILURES) == 1);
                    await("suspect", () -> daemon.counters().value(CounterType.SUSPECT_PODS) == 1);
                } else {
                    // Policy clear: the pod is cleared and rebuilt from what the engine still buffers, so the lost
                    // clear takes effect and no block the engine dropped stays indexed.
                    await("depth 0 after unreplayable gap", () -> depth(reader, pod, base, null) == 0
                        && daemon.counters().value(CounterType.REPLAY_GAP_CLEARS) == 1);
                    assertEquals(0, daemon.counters().value(CounterType.REPLAY_FAILURES));
                }
                assertTrue(daemon.counters().value(CounterType.REPLAYS) >= 2);
            }
        }
    }

    @org.junit.jupiter.api.Test
    void shouldKeepConnectedPodAliveAndTakeItDownAfterDisconnect() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final JavaVllmPublisher publisher = new JavaVllmPublisher("kv@hb@" + MODEL, true);
        final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
            .podTimeoutMs(400).heartbeatIntervalMs(50).idleStrategy("backoff");
        ctx.zmq().addEndpoint(new ZmqEndpoint(publisher.endpoint(), "hb", MODEL, null));
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
            final byte[] store = payloads("MAP").stored(base.blockHashes(), null, base.tokenIds(), 16, null, null)
                .batch(0);
            while (depth(reader, "hb", base, null) != 25) {
                publisher.publish(store);
                Thread.sleep(20);
            }
            // Silent but connected for several pod timeouts: the connection's heartbeats keep it.
            Thread.sleep(1_500);
            assertEquals(25, depth(reader, "hb", base, null));
            assertEquals(0, daemon.counters().value(CounterType.PODS_TIMED_OUT));
            publisher.close();
            await("pod down after disconnect", () -> daemon.counters().value(CounterType.PODS_TIMED_OUT) == 1);
            assertEquals(0, depth(reader, "hb", base, null));
        } finally {
            publisher.close();
        }
    }
}
