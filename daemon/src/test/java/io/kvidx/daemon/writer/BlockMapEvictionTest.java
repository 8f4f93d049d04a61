package io.kvidx.daemon.writer;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.index.TestIndexes;
import io.kvidx.daemon.ingest.EngineDecoders;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.state.PodBlockMaps;
import org.agrona.concurrent.NoOpIdleStrategy;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A pod that never removes what it stores, past its block map's bound: the map evicts its least recently stored
 * mappings in batches (and one at a time once the map is too small for batch choices), and the index holds exactly
 * the pod's mapped blocks, never one no mapping reaches, with the newest event's blocks always among them.
 */
@Timeout(60)
class BlockMapEvictionTest {
    private static final int BLOCK_SIZE = 16;
    private static final int EVENT_BLOCKS = 40;

    @TempDir
    Path dir;

    @Test
    void shouldIndexExactlyTheMappedBlocksWhileEvictingInBatches() throws Exception {
        assertBounded(1_000, 75);
    }

    @Test
    void shouldIndexExactlyTheMappedBlocksWhenTheMapIsTooSmallForBatches() throws Exception {
        assertBounded(60, 10);
    }

    private void assertBounded(final int maxBlocks, final int events) throws Exception {
        try (IndexWriter index = IndexWriter.create(new IndexWriterContext().dir(dir).shardCount(16)
                .capacityBlocks(1 << 14).deleteOnClose(true));
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir));
            IngestCounters counters = IngestCounters.local()) {
            final PodDirectory directory = new PodDirectory(4);
            final int pod = directory.podNumber("p", "m");
            final WriterPool pool = new WriterPool(1, 1 << 20, index,
                PodBlockMaps.beside(index.context().indexFile(), maxBlocks), directory, counters, new IngestErrors(),
                SystemEpochClock.INSTANCE, 0, NoOpIdleStrategy::new, NoOpIdleStrategy::new, EngineDecoders.standard());
            final WriterAgent agent = pool.agents()[0];
            final RouterKeyHasher hasher = new RouterKeyHasher(BLOCK_SIZE);
            final long seed = RouterKeyHasher.chainSeed("m", null, null);
            final SplittableRandom random = new SplittableRandom(7);
            final List<long[]> eventKeys = new ArrayList<>();
            for (int ev = 0; ev < events; ev++) {
                final int[] tokens = new int[EVENT_BLOCKS * BLOCK_SIZE];
                for (int t = 0; t < tokens.length; t++) {
                    tokens[t] = 1 + random.nextInt(150_000);
                }
                final long[] hashes = new long[EVENT_BLOCKS];
                for (int b = 0; b < EVENT_BLOCKS; b++) {
                    hashes[b] = random.nextLong() | 1;
                }
                final long[] keys = new long[EVENT_BLOCKS];
                hasher.keys(seed, tokens, tokens.length, keys);
                eventKeys.add(keys);
                final byte[] batch = new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
                    .stored(hashes, null, tokens, BLOCK_SIZE, null, "GPU").batch(0);
                assertTrue(pool.offer(pod, WriterMessages.VLLM_BATCH, new UnsafeBuffer(batch), 0, batch.length));
                while (!pool.isIdle()) {
                    agent.doWork();
                }
            }
            final int slot = index.slotOf("p");
            final long[] words = new long[4];
            int held = 0;
            for (final long[] keys : eventKeys) {
                for (final long key : keys) {
                    TestIndexes.unbusy(() -> reader.lookup(key, words));
                    held += (int) (words[slot >>> 6] >>> slot) & 1;
                }
            }
            assertEquals(maxBlocks, held, "the pod's indexed blocks: exactly its block map's bound");
            for (final long key : eventKeys.get(events - 1)) {
                TestIndexes.unbusy(() -> reader.lookup(key, words));
                assertEquals(1, (words[slot >>> 6] >>> slot) & 1, "the newest event's blocks are held");
            }
            assertEquals((long) events * EVENT_BLOCKS - maxBlocks, counters.value(CounterType.BLOCK_MAP_EVICTIONS));
            pool.close();
        }
    }
}
