package io.kvidx.daemon.writer;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.EngineDecoders;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.YieldingIdleStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class WriterPoolTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;
    private IndexWriter index;
    private IndexReader reader;
    private WriterPool pool;
    private IngestCounters counters;
    private final PodDirectory directory = new PodDirectory(64);
    private final IngestErrors errors = new IngestErrors();
    private final Capture capture = Capture.load("kv_event_base.json");

    @BeforeEach
    void setUp() {
        index = IndexWriter.create(new IndexWriterContext().dir(dir).shardCount(16).capacityBlocks(4096));
        reader = IndexReader.attach(new IndexReaderContext().dir(dir));
        counters = IngestCounters.local();
        pool = new WriterPool(2, 1 << 16, index, directory, counters, errors, SystemEpochClock.INSTANCE, 0,
            YieldingIdleStrategy::new, () -> new SleepingMillisIdleStrategy(1), EngineDecoders.standard()).start();
    }

    @AfterEach
    void tearDown() {
        pool.close();
        reader.close();
        index.close();
        counters.close();
    }

    private void send(final int pod, final byte[] payload) {
        assertTrue(pool.offer(pod, WriterMessages.VLLM_BATCH, new UnsafeBuffer(payload), 0, payload.length));
    }

    private void awaitApplied() throws InterruptedException {
        while (!pool.isIdle()) {
            Thread.sleep(1);
        }
    }

    private int depth(final String podId, final String lora) {
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final long[] keys = new long[64];
        final int n = hasher.keys(RouterKeyHasher.chainSeed(MODEL, lora, null), capture.tokenIds(),
            capture.tokenIds().length, keys);
        final PrefixResult result = new PrefixResult();
        reader.query(keys, n, null, result);
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            if (reader.isAlive(slot) && podId.equals(reader.pod(slot).podId())) {
                return result.depthOf(slot);
            }
        }
        return 0;
    }

    @Test
    void shouldIndexCaptureThenRemoveTailThenClear() throws InterruptedException {
        final int pod = directory.podNumber("pod-a", MODEL);
        send(pod, new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(capture.blockHashes(), null, capture.tokenIds(), 16, null, "GPU").batch(0));
        awaitApplied();
        assertEquals(25, depth("pod-a", null));
        assertEquals(25, counters.value(CounterType.BLOCKS_STORED));

        send(pod, new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.BIN32)
            .removed(Arrays.copyOfRange(capture.blockHashes(), 18, 25), "GPU").batch(0));
        awaitApplied();
        assertEquals(18, depth("pod-a", null));
        assertEquals(7, counters.value(CounterType.BLOCKS_REMOVED));

        send(pod, new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64).cleared().batch(0));
        awaitApplied();
        assertEquals(0, depth("pod-a", null));
    }

    @Test
    void shouldChainEventsThroughTheParentsRouterKeyAndSeparateLoras() throws InterruptedException {
        final int pod = directory.podNumber("pod-b", MODEL);
        final long[] h = capture.blockHashes();
        final int[] t = capture.tokenIds();
        // Three events: blocks 0..9, 10..19 (parent 9), 20..24 (parent 19); plus the LoRA chain.
        send(pod, new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
            .stored(Arrays.copyOfRange(h, 0, 10), null, Arrays.copyOfRange(t, 0, 160), 16, null, null)
            .stored(Arrays.copyOfRange(h, 10, 20), h[9], Arrays.copyOfRange(t, 160, 320), 16, null, null)
            .batch(null));
        send(pod, new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.INT64)
            .stored(Arrays.copyOfRange(h, 20, 25), h[19], Arrays.copyOfRange(t, 320, 400), 16, null, "GPU")
            .batch(null));
        final Capture lora = Capture.load("kv_event_lora.json");
        send(pod, new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(Arrays.copyOfRange(lora.blockHashes(), 0, 12), null, Arrays.copyOfRange(t, 0, 192), 16,
                "Alice", "GPU").batch(null));
        awaitApplied();
        assertEquals(25, depth("pod-b", null));
        assertEquals(12, depth("pod-b", "Alice"));
        assertEquals(0, depth("pod-b", "Bob"));
    }

    @Test
    void shouldKeepBlocksHeldOnAnotherMedium() throws InterruptedException {
        final int pod = directory.podNumber("pod-c", MODEL);
        final long[] h = capture.blockHashes();
        send(pod, new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(h, null, capture.tokenIds(), 16, null, "GPU")
            .stored(h, null, capture.tokenIds(), 16, null, "CPU")
            .removed(Arrays.copyOfRange(h, 10, 25), "GPU").batch(0));
        awaitApplied();
        assertEquals(25, depth("pod-c", null));
        assertEquals(25, counters.value(CounterType.DUPLICATE_BLOCKS));
        send(pod, new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .removed(Arrays.copyOfRange(h, 10, 25), "CPU").batch(0));
        awaitApplied();
        assertEquals(10, depth("pod-c", null));
    }

    @Test
    void shouldCountAndLogOnceBadEventsWithoutLosingOthers() throws InterruptedException {
        final int pod = directory.podNumber("pod-d", MODEL);
        final long[] h = capture.blockHashes();
        final int[] t = capture.tokenIds();
        send(pod, new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(Arrays.copyOfRange(h, 0, 2), null, Arrays.copyOfRange(t, 0, 64), 32, null, null)
            .stored(Arrays.copyOfRange(h, 0, 2), null, Arrays.copyOfRange(t, 0, 64), 32, null, null)
            .stored(Arrays.copyOfRange(h, 0, 2), null, Arrays.copyOfRange(t, 0, 31), 16, null, null)
            .stored(Arrays.copyOfRange(h, 5, 6), 424242L, Arrays.copyOfRange(t, 80, 96), 16, null, null)
            .unknown()
            .removed(new long[] {99, 98}, null)
            .stored(Arrays.copyOfRange(h, 0, 3), null, Arrays.copyOfRange(t, 0, 48), 16, null, null)
            .batch(0));
        send(pod, new byte[] {(byte) 0x93, 0x01});
        awaitApplied();
        assertEquals(2, counters.value(CounterType.BLOCK_SIZE_MISMATCHES));
        assertEquals(1, counters.value(CounterType.TOKEN_COUNT_MISMATCHES));
        assertEquals(1, counters.value(CounterType.UNKNOWN_PARENTS));
        assertEquals(1, counters.value(CounterType.UNKNOWN_EVENT_TYPES));
        assertEquals(2, counters.value(CounterType.UNKNOWN_REMOVALS));
        assertEquals(1, counters.value(CounterType.DECODE_ERRORS));
        assertEquals(3, depth("pod-d", null));
        // One distinct log entry per problem kind and pod, however often it happened.
        assertEquals(5, errors.distinctCount(), errors.dump());
    }

    @Test
    void shouldTakeSilentPodDownAfterTimeout() throws InterruptedException {
        pool.close();
        pool = new WriterPool(1, 1 << 16, index, directory, counters, errors, SystemEpochClock.INSTANCE, 200,
            YieldingIdleStrategy::new, () -> new SleepingMillisIdleStrategy(1), EngineDecoders.standard()).start();
        final int pod = directory.podNumber("pod-e", MODEL);
        send(pod, new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(capture.blockHashes(), null, capture.tokenIds(), 16, null, null).batch(0));
        awaitApplied();
        assertEquals(25, depth("pod-e", null));
        for (int i = 0; i < 5; i++) {
            Thread.sleep(100);
            pool.offer(pod, WriterMessages.HEARTBEAT);
        }
        assertEquals(25, depth("pod-e", null));
        final long deadline = System.currentTimeMillis() + 5_000;
        while (counters.value(CounterType.PODS_TIMED_OUT) == 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(1, counters.value(CounterType.PODS_TIMED_OUT));
        assertEquals(0, depth("pod-e", null));
        assertEquals(0, counters.value(CounterType.PODS_ALIVE));
    }

    /** A pool whose one writer the test runs by hand ({@link #drain}). */
    private WriterPool handPool() {
        return new WriterPool(1, 1 << 16, index, directory, counters, errors, SystemEpochClock.INSTANCE, 0,
            YieldingIdleStrategy::new, () -> new SleepingMillisIdleStrategy(1), EngineDecoders.standard());
    }

    private static void drain(final WriterPool hand) {
        final WriterAgent agent = hand.agents()[0];
        while (!hand.isIdle()) {
            agent.doWork();
        }
    }

    private byte[] stored(final int blocks) {
        return new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(Arrays.copyOf(capture.blockHashes(), blocks), null,
                Arrays.copyOf(capture.tokenIds(), blocks * 16), 16, null, "GPU").batch(0);
    }

    private static boolean offer(final WriterPool hand, final int pod, final byte[] payload) {
        return hand.offer(pod, WriterMessages.VLLM_BATCH, new UnsafeBuffer(payload), 0, payload.length);
    }

    @Test
    void shouldDropAndCountAMessageQueuedWithAnOldHandleAfterItsNumberWentToAnotherPod() {
        final WriterPool hand = handPool();
        final int old = directory.podNumber("pod-old", MODEL);
        assertTrue(offer(hand, old, stored(25)));
        drain(hand);
        assertEquals(25, depth("pod-old", null));
        assertTrue(hand.offer(old, WriterMessages.POD_DOWN));
        drain(hand);
        assertFalse(directory.isCurrent(old), "the writer freed the number of the pod it took down");
        assertEquals(0, hand.agents()[0].podCount());

        final int fresh = directory.podNumber("pod-new", MODEL);
        assertEquals(PodDirectory.number(old), PodDirectory.number(fresh), "the number went to the new pod");
        assertEquals(hand.writerOf(old), hand.writerOf(fresh), "same writer: routing is by number");
        // A transport that cached the old handle queues the old pod's batch after the number changed hands.
        assertTrue(offer(hand, old, stored(25)));
        assertTrue(offer(hand, fresh, stored(10)));
        assertTrue(offer(hand, old, stored(25)));
        drain(hand);
        assertEquals(2, counters.value(CounterType.STALE_POD_MESSAGES));
        assertEquals(10, depth("pod-new", null), "the old pod's batches never reach the new one");
        assertEquals(0, depth("pod-old", null));
        assertEquals(1, counters.value(CounterType.PODS_ALIVE));
        assertEquals(1, hand.agents()[0].podCount());
    }

    @Test
    void shouldTakeTheOldPodDownWhenItsNumberChangedHandsBehindTheWritersBack() {
        final WriterPool hand = handPool();
        final int old = directory.podNumber("pod-gone", MODEL);
        assertTrue(offer(hand, old, stored(25)));
        drain(hand);
        assertEquals(25, depth("pod-gone", null));
        // Freed elsewhere (a transport that saw the pod's PodDown) and given to another pod before the writer heard.
        assertTrue(directory.release(old));
        final int fresh = directory.podNumber("pod-next", MODEL);
        assertEquals(PodDirectory.number(old), PodDirectory.number(fresh));
        assertTrue(offer(hand, fresh, stored(5)));
        drain(hand);
        assertEquals(0, depth("pod-gone", null), "the old state was taken down, not inherited");
        assertEquals(5, depth("pod-next", null));
        assertEquals(1, counters.value(CounterType.PODS_ALIVE));
        assertEquals(0, counters.value(CounterType.STALE_POD_MESSAGES));
    }

    @Test
    void shouldKeepAPinnedPodsNumberWhenItGoesDown() {
        final WriterPool hand = handPool();
        final int pinned = directory.pin("engine", MODEL);
        assertTrue(offer(hand, pinned, stored(25)));
        drain(hand);
        assertTrue(hand.offer(pinned, WriterMessages.POD_DOWN));
        drain(hand);
        assertEquals(0, depth("engine", null), "taken down");
        assertTrue(directory.isCurrent(pinned), "but it keeps its number");
        assertTrue(offer(hand, pinned, stored(7)));
        drain(hand);
        assertEquals(7, depth("engine", null), "and comes back under the same handle");
        assertEquals(0, counters.value(CounterType.STALE_POD_MESSAGES));
    }

    @Test
    void shouldKeepTheWritersStateBoundedByTheLivePodsUnderChurn() throws InterruptedException {
        pool.close();
        final long timeoutMs = 50;
        pool = new WriterPool(2, 1 << 16, index, directory, counters, errors, SystemEpochClock.INSTANCE, timeoutMs,
            YieldingIdleStrategy::new, () -> new SleepingMillisIdleStrategy(1), EngineDecoders.standard()).start();
        final byte[] batch = stored(2);
        // 300 names through a directory of 64: bursts of 20, each silent after its batch; a burst starts once the
        // writers have timed out enough silent pods for it (at least 200 ms after the last, and at most 10 s: on a
        // loaded machine the writers' timeout checks wait for a CPU).
        for (int i = 0; i < 300; i++) {
            if (i % 20 == 0 && i > 0) {
                Thread.sleep(200);
                final long freeBy = System.currentTimeMillis() + 10_000;
                while (directory.count() > 64 - 20 && System.currentTimeMillis() < freeBy) {
                    Thread.sleep(10);
                }
                // The maintenance agent's part: sweep the pods taken down so that their index slots are free again.
                while (index.sweepStep() > 0) {
                    Thread.onSpinWait();
                }
            }
            final int pod = directory.podNumber("churn-" + i, MODEL);
            assertTrue(pod >= 0, "pod " + i + ": directory full at " + directory.count());
            send(pod, batch);
        }
        final long deadline = System.currentTimeMillis() + 10_000;
        while (directory.count() > 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, directory.count(), "every silent pod's number was freed");
        assertTrue(directory.numbersHandedOut() < 64, "numbers handed out: " + directory.numbersHandedOut());
        for (final WriterAgent agent : pool.agents()) {
            assertTrue(agent.podCapacity() <= 64, "per-number arrays: " + agent.podCapacity());
        }
        assertEquals(300, counters.value(CounterType.PODS_TIMED_OUT));
    }

    @Test
    void shouldKeyLoraIdOnlyEventsApartFromTheBaseModel() throws InterruptedException {
        final int pod = directory.podNumber("pod-f", MODEL);
        send(pod, new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
            .storedWithLoraId(capture.blockHashes(), capture.tokenIds(), 16, 3).batch(0));
        awaitApplied();
        assertEquals(25, counters.value(CounterType.BLOCKS_STORED));
        assertEquals(0, depth("pod-f", null));
        assertEquals(25, depth("pod-f", "lora-id:3"));
    }
}
