package io.kvidx.daemon.snapshot;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.state.PodBlockMap;
import io.kvidx.daemon.state.PodBlockMaps;
import io.kvidx.daemon.state.PublisherProgress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A snapshot loaded by several threads (pods shared out over them) gives the same cell as one thread does: the same
 * slots for the same pods, the same holders for every block (shared prefixes included, held by many pods at once
 * from different threads), the same parents and engine-hash maps, the same counts.
 */
@Timeout(60)
class SnapshotParallelLoadTest {
    private static final long MAX = 1L << 26;
    private static final int PODS = 24;
    private static final SnapshotEncoder.Geometry GEOMETRY = new SnapshotEncoder.Geometry(16, 1, 64);

    @TempDir
    Path dir;

    /** Pods holding prefixes of a few shared chains (a common system prompt, conversations), in map order. */
    private static byte[] snapshot(final List<long[]> chains) throws SnapshotException {
        final SplittableRandom random = new SplittableRandom(11);
        for (int c = 0; c < 6; c++) {
            final long[] chain = new long[400];
            for (int i = 0; i < chain.length; i++) {
                chain[i] = random.nextLong() | 1;
            }
            chains.add(chain);
        }
        final List<byte[]> pods = new ArrayList<>();
        for (int p = 0; p < PODS; p++) {
            final Map<Long, Long> held = new LinkedHashMap<>();
            for (int c = 0; c < 3; c++) {
                final long[] chain = chains.get(random.nextInt(chains.size()));
                final int depth = 1 + random.nextInt(chain.length);
                for (int i = 0; i < depth; i++) {
                    held.putIfAbsent(chain[i], i == 0 ? 0 : chain[i - 1]);
                }
            }
            final int n = held.size();
            final long[] hashes = new long[n];
            final long[] keys = new long[n];
            final long[] media = new long[n];
            final long[] parents = new long[n];
            int i = 0;
            for (final Map.Entry<Long, Long> e : held.entrySet()) {
                hashes[i] = e.getKey() * 31 + p;
                keys[i] = e.getKey();
                media[i] = 1;
                parents[i] = e.getValue();
                i++;
            }
            pods.add(SnapshotEncoder.podRecord("pod-" + p, "m", p % 5 == 0 ? SnapshotDescriptor.POD_FLAG_SUSPECT : 0,
                -1, hashes, keys, media, parents));
        }
        return SnapshotEncoder.encode(GEOMETRY, 7, List.of(), pods, new byte[0], MAX);
    }

    private IndexWriterContext context(final String cell) {
        return new IndexWriterContext().dir(dir).cell(cell).shardCount(16).capacityBlocks(1 << 15).maxPods(64)
            .blockSize(16).deleteOnClose(true);
    }

    @Test
    void loadsTheSameCellWithOneThreadAndWithFour() throws Exception {
        final List<long[]> chains = new ArrayList<>();
        final byte[] bytes = snapshot(chains);
        final Path stateOne = dir.resolve("one").resolve(PodBlockMaps.STATE_DIR_NAME);
        final Path stateFour = dir.resolve("four").resolve(PodBlockMaps.STATE_DIR_NAME);
        final PodBlockMaps mapsOne = new PodBlockMaps(stateOne, 4_096);
        final PodBlockMaps mapsFour = new PodBlockMaps(stateFour, 4_096);
        try (IndexWriter one = IndexWriter.create(context("one"));
            IndexWriter four = IndexWriter.create(context("four"));
            IndexReader readOne = IndexReader.attach(new IndexReaderContext().dir(dir).cell("one")
                .attachTimeoutMs(1_000).heartbeatTimeoutMs(0));
            IndexReader readFour = IndexReader.attach(new IndexReaderContext().dir(dir).cell("four")
                .attachTimeoutMs(1_000).heartbeatTimeoutMs(0))) {
            final SnapshotLoader.Loaded a = new SnapshotLoader(one, mapsOne, new PublisherProgress(stateOne), MAX, 1)
                .load(bytes);
            final SnapshotLoader.Loaded b = new SnapshotLoader(four, mapsFour, new PublisherProgress(stateFour), MAX,
                4).load(bytes);
            assertEquals(PODS, a.pods());
            assertEquals(a.pods(), b.pods());
            assertEquals(a.blocks(), b.blocks());
            assertEquals(a.skippedBlocks(), b.skippedBlocks());
            final long[] wordsOne = new long[4];
            final long[] wordsFour = new long[4];
            int checked = 0;
            for (int p = 0; p < PODS; p++) {
                final String id = "pod-" + p;
                final int slot = one.slotOf(id);
                assertEquals(slot, four.slotOf(id), id + ": the same slot");
                assertEquals(one.isSuspect(slot), four.isSuspect(slot), id);
                try (PodBlockMap m1 = mapsOne.open(slot, id, one.generation(slot));
                    PodBlockMap m4 = mapsFour.open(slot, id, four.generation(slot))) {
                    assertEquals(m1.size(), m4.size(), id + ": engine-hash map size");
                    for (final long[] chain : chains) {
                        for (final long key : chain) {
                            assertEquals(m1.get(key * 31 + p), m4.get(key * 31 + p), id);
                        }
                    }
                }
            }
            for (final long[] chain : chains) {
                for (int i = 0; i < chain.length; i++) {
                    final boolean held = readOne.lookup(chain[i], wordsOne);
                    assertEquals(held, readFour.lookup(chain[i], wordsFour));
                    assertArrayEquals(wordsOne, wordsFour, "holders of block " + i);
                    assertEquals(one.parentOf(chain[i]), four.parentOf(chain[i]), "parent of block " + i);
                    checked += held ? 1 : 0;
                }
            }
            assertTrue(checked > 1_000, "blocks held: " + checked + " of " + chains.size() * 400);
        }
    }

    @Test
    void refusesNoLoadThreads() {
        assertThrows(IllegalArgumentException.class, () -> new SnapshotLoader(null, null, null, MAX, 0));
    }
}
