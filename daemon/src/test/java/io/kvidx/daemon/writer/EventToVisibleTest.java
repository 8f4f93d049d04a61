package io.kvidx.daemon.writer;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.EngineDecoders;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.sbe.events.BlockStoredEncoder;
import io.kvidx.sbe.events.BooleanType;
import io.kvidx.sbe.events.Medium;
import io.kvidx.sbe.events.MessageHeaderEncoder;
import org.agrona.concurrent.CachedEpochClock;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.YieldingIdleStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which batches a writer observes as event-to-visible time: live ones (from their engine timestamp), not replayed
 * ones (their timestamps measure the gap or the daemon's downtime), not SBE events (no timestamp in the schema).
 */
@Timeout(30)
class EventToVisibleTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";
    /** {@link VllmPayloads#batch}'s timestamp, in ms. */
    private static final long BATCH_TS_MS = 1_763_800_000_250L;
    private static final long HOUR_MS = 3_600_000L;

    @TempDir
    Path dir;
    private IndexWriter index;
    private WriterPool pool;
    private IngestCounters counters;
    private final PodDirectory directory = new PodDirectory(64);
    private final CachedEpochClock clock = new CachedEpochClock();
    /** Every batch observed: its event-to-visible ms (-1 for none). */
    private final List<Long> observed = Collections.synchronizedList(new ArrayList<>());
    private final Capture capture = Capture.load("kv_event_base.json");

    @BeforeEach
    void setUp() {
        index = IndexWriter.create(new IndexWriterContext().dir(dir).shardCount(16).capacityBlocks(4096));
        counters = IngestCounters.local();
        // An hour after the batches' timestamp: a replay after a long gap or a daemon restart.
        clock.update(BATCH_TS_MS + HOUR_MS);
        pool = new WriterPool(1, 1 << 16, index, directory, counters, new IngestErrors(), clock, 0,
            YieldingIdleStrategy::new, () -> new SleepingMillisIdleStrategy(1), EngineDecoders.standard())
            .observe(null, (ingestNanos, queueNanos, applyNanos, eventToVisibleMs) -> observed.add(eventToVisibleMs))
            .start();
    }

    @AfterEach
    void tearDown() {
        pool.close();
        index.close();
        counters.close();
    }

    private byte[] batch(final int from, final int to) {
        return new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
            .stored(Arrays.copyOfRange(capture.blockHashes(), from, to), from == 0 ? null
                : capture.blockHashes()[from - 1], Arrays.copyOfRange(capture.tokenIds(), from * 16, to * 16), 16,
                null, "GPU").batch(0);
    }

    private void send(final int pod, final int type, final byte[] payload) throws InterruptedException {
        assertTrue(pool.offer(pod, type, new UnsafeBuffer(payload), 0, payload.length));
        while (!pool.isIdle()) {
            Thread.sleep(1);
        }
    }

    @Test
    void shouldObserveEachStageOfABatch() throws InterruptedException {
        pool.close();
        final List<long[]> stages = new java.util.concurrent.CopyOnWriteArrayList<>();
        pool = new WriterPool(1, 1 << 16, index, directory, counters, new IngestErrors(), clock, 0,
            YieldingIdleStrategy::new, () -> new SleepingMillisIdleStrategy(1), EngineDecoders.standard())
            .observe(null, (ingest, queue, apply, visible) -> stages.add(new long[] {ingest, queue, apply}));
        final int pod = directory.podNumber("pod-s", MODEL);
        final byte[] payload = batch(0, 10);
        // Received 40 ms before it was queued; then it waits in the queue until the writer starts, 40 ms on.
        assertTrue(pool.offer(pod, WriterMessages.VLLM_BATCH, new UnsafeBuffer(payload), 0, payload.length,
            System.nanoTime() - 40_000_000L));
        Thread.sleep(40);
        pool.start();
        while (stages.isEmpty()) {
            Thread.sleep(1);
        }
        final long[] s = stages.get(0);
        assertTrue(s[0] >= 40_000_000L && s[0] < 10_000_000_000L, "receive to queued: " + s[0]);
        assertTrue(s[1] >= 40_000_000L && s[1] < 10_000_000_000L, "queue wait: " + s[1]);
        assertTrue(s[2] > 0 && s[2] < 10_000_000_000L, "decode and apply: " + s[2]);
        assertEquals(10, counters.value(CounterType.BLOCKS_STORED));
    }

    @Test
    void shouldObserveLiveBatchesButNotReplayedOnes() throws InterruptedException {
        final int pod = directory.podNumber("pod-a", MODEL);
        send(pod, WriterMessages.VLLM_BATCH_REPLAYED, batch(0, 10));
        assertEquals(List.of(-1L), observed, "a replayed batch: apply time only, no event-to-visible time");
        // Applied all the same, through the same path.
        assertEquals(10, counters.value(CounterType.BLOCKS_STORED));

        send(pod, WriterMessages.VLLM_BATCH, batch(10, 20));
        assertEquals(List.of(-1L, HOUR_MS), observed, "a live batch: its timestamp to now");
        assertEquals(20, counters.value(CounterType.BLOCKS_STORED));
        assertEquals(2, counters.value(CounterType.MESSAGES_RECEIVED), "replayed batches are received messages too");
    }

    @Test
    void shouldObserveNoEventToVisibleTimeForSbeEvents() throws InterruptedException {
        final int pod = directory.podNumber("pod-s", MODEL);
        final UnsafeBuffer b = new UnsafeBuffer(new byte[8192]);
        final BlockStoredEncoder e = new BlockStoredEncoder().wrapAndApplyHeader(b, 0, new MessageHeaderEncoder())
            .sequence(0).dpRank(-1).blockSize(16).medium(Medium.GPU).hasParent(BooleanType.F).parentHash(0);
        final BlockStoredEncoder.BlocksEncoder blocks = e.blocksCount(capture.blockHashes().length);
        for (final long h : capture.blockHashes()) {
            blocks.next().hash(h);
        }
        final BlockStoredEncoder.TokensEncoder tokens = e.tokensCount(capture.tokenIds().length);
        for (final int t : capture.tokenIds()) {
            tokens.next().token(t);
        }
        final byte[] podId = "pod-s".getBytes(StandardCharsets.UTF_8);
        final byte[] model = MODEL.getBytes(StandardCharsets.UTF_8);
        e.putPodId(podId, 0, podId.length).putModel(model, 0, model.length).putLoraName(new byte[0], 0, 0);
        send(pod, WriterMessages.SBE_EVENT,
            Arrays.copyOf(b.byteArray(), MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength()));
        assertEquals(capture.blockHashes().length, counters.value(CounterType.BLOCKS_STORED));
        assertEquals(List.of(-1L), observed, "the kvidx SBE schema carries no timestamp");
    }

    @Test
    void shouldNameReplayedBatchTypes() {
        assertEquals(WriterMessages.VLLM_BATCH, WriterMessages.batchType(false, false));
        assertEquals(WriterMessages.VLLM_BATCH_REPLAYED, WriterMessages.batchType(false, true));
        assertEquals(WriterMessages.SGLANG_BATCH, WriterMessages.batchType(true, false));
        assertEquals(WriterMessages.SGLANG_BATCH_REPLAYED, WriterMessages.batchType(true, true));
        int carrying = 0;
        for (int t = 1; t <= WriterMessages.SGLANG_BATCH_REPLAYED; t++) {
            carrying += WriterMessages.carriesEvents(t) ? 1 : 0;
        }
        assertEquals(5, carrying, "vLLM, SGLang (live and replayed) and SBE carry events");
    }
}
