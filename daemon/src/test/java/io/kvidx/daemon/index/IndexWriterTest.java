package io.kvidx.daemon.index;

import io.kvidx.client.index.ChainTooLongException;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PodCapacityExceededException;
import io.kvidx.client.index.PodSet;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.ffm.Layouts;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class IndexWriterTest {
    @TempDir
    Path dir;

    private IndexWriter writer;
    private IndexReader reader;
    private final PrefixResult result = new PrefixResult();

    @BeforeEach
    void setUp() {
        writer = IndexWriter.create(TestIndexes.small(dir));
        reader = IndexReader.attach(TestIndexes.reader(dir));
    }

    @AfterEach
    void tearDown() {
        reader.close();
        writer.close();
    }

    @Test
    void shouldKeepEveryPodOfADirectCellIncludingSlot63() throws Exception {
        // A cell of at most 64 pods stores plain 64-bit bitmaps; slot 63 is the sign bit of the pods word.
        final Path directDir = Files.createDirectories(dir.resolve("direct"));
        try (IndexWriter w = IndexWriter.create(TestIndexes.small(directDir).maxPods(64));
             IndexReader r = IndexReader.attach(TestIndexes.reader(directDir))) {
            assertEquals(IndexDescriptor.tablesOffset(64, 4) + 4L * 64 * 16, Files.size(w.context().indexFile()),
                "no overflow area");
            final int[] slots = new int[64];
            for (int i = 0; i < 64; i++) {
                slots[i] = w.registerPod("pod-" + i, "m");
            }
            assertEquals(63, slots[63]);
            assertThrows(PodCapacityExceededException.class, () -> w.registerPod("pod-64", "m"));
            final long[] keys = TestIndexes.chain(7, 20);
            for (int i = 0; i < 64; i++) {
                assertEquals(1 + i % 20, w.store(slots[i], keys, 0, 1 + i % 20));
            }
            assertEquals(0, w.store(slots[63], keys, 0, 4), "idempotent");
            assertEquals(20, r.query(keys, 20, null, result));
            assertEquals(64, result.count());
            for (int i = 0; i < 64; i++) {
                assertEquals(1 + i % 20, result.depthOf(slots[i]), "pod " + i);
            }
            final long[] bits = new long[4];
            assertTrue(r.lookup(keys[0], bits));
            assertEquals(-1L, bits[0], "all 64 pods hold block 0");

            // Remove slot 63's tail, clear slot 0, then down slot 62 and sweep: sign bit and last holders.
            assertEquals(2, w.remove(slots[63], keys, 2, 18));
            w.clearPod(slots[0]);
            assertTrue(w.podDown(slots[62]));
            while (w.isSweeping()) {
                w.sweepStep();
            }
            r.queryExact(keys, 20, null, result);
            assertEquals(2, result.depthOf(slots[63]));
            assertEquals(0, result.depthOf(slots[0]));
            assertEquals(0, result.depthOf(slots[62]));
            assertEquals(1 + 61 % 20, result.depthOf(slots[61]));
            assertTrue(r.lookup(keys[0], bits));
            assertEquals(~((1L << 0) | (1L << 62)), bits[0]);

            // The last holder of a block leaves: the entry is freed.
            final long before = w.entryCount();
            for (int i = 1; i < 64; i++) {
                if (i != 62) {
                    w.remove(slots[i], keys, 19, 1);
                }
            }
            assertFalse(r.lookup(keys[19], bits));
            assertEquals(before - 1, w.entryCount());
        }
    }

    @Test
    void shouldAnswerDepthPerPodForPrefixes() {
        final int a = writer.registerPod("pod-a", "m");
        final int b = writer.registerPod("pod-b", "m");
        final int c = writer.registerPod("pod-c", "m");
        final long[] keys = TestIndexes.chain(1, 32);
        writer.store(a, keys, 0, 32);
        writer.store(b, keys, 0, 17);
        writer.store(c, keys, 0, 1);

        assertEquals(32, reader.query(keys, 32, null, result));
        assertEquals(3, result.count());
        assertEquals(32, result.depthOf(a));
        assertEquals(17, result.depthOf(b));
        assertEquals(1, result.depthOf(c));

        assertEquals(32, reader.queryExact(keys, 32, null, result));
        assertEquals(17, result.depthOf(b));
        assertEquals(32, result.probes());
    }

    @Test
    void shouldMoveToAnOverflowBitmapBeyondSevenPodsAndBack() {
        final long[] keys = TestIndexes.chain(10, 4);
        final int[] slots = new int[20];
        for (int p = 0; p < slots.length; p++) {
            slots[p] = writer.registerPod("pod-" + p, "m");
            writer.store(slots[p], keys, 0, 1 + (p % 4));
        }
        reader.query(keys, 4, null, result);
        assertEquals(20, result.count());
        for (int p = 0; p < slots.length; p++) {
            assertEquals(1 + (p % 4), result.depthOf(slots[p]), "pod " + p);
        }
        // Pods leave one by one: the overflow entry keeps answering, and is freed with the last pod.
        for (int p = 0; p < slots.length; p++) {
            writer.remove(slots[p], keys, 0, 4);
            reader.query(keys, 4, null, result);
            assertEquals(slots.length - p - 1, result.count());
        }
        assertEquals(0, writer.entryCount());
    }

    @Test
    void shouldSweepOverflowEntriesAndRecycleTheirBitmaps() {
        final long[] keys = TestIndexes.chain(11, 8);
        final int[] slots = new int[12];
        for (int round = 0; round < 5; round++) {
            for (int p = 0; p < slots.length; p++) {
                slots[p] = writer.registerPod("pod-" + round + "-" + p, "m");
                writer.store(slots[p], keys, 0, 8);
            }
            reader.query(keys, 8, null, result);
            assertEquals(12, result.count());
            for (final int slot : slots) {
                writer.podDown(slot);
            }
            while (writer.sweepStep() > 0) {
                assertTrue(writer.isSweeping() || writer.entryCount() == 0);
            }
            assertEquals(0, writer.entryCount(), "round " + round);
        }
    }

    @Test
    void shouldRefuseAHolderRatherThanEvictAPopularBlockWhenTheOverflowPoolIsExhausted() {
        // 4 shards x 64 slots: 8 overflow bitmaps per shard, 32 in all. 60 blocks held by 9 pods need 60.
        final int[] slots = new int[9];
        for (int p = 0; p < slots.length; p++) {
            slots[p] = writer.registerPod("pod-" + p, "m");
        }
        final long[] keys = TestIndexes.chain(12, 60);
        for (final int slot : slots) {
            writer.store(slot, keys, 0, 60);
        }
        assertEquals(0, writer.evictions(), "no block is evicted to give another an 8th holder");
        assertTrue(writer.holdersRefused() > 0);
        for (final long key : keys) {
            assertTrue(reader.lookup(key, new long[4]), "every block stays indexed");
        }
        final long[] out = new long[4];
        int crowded = 0;
        for (final long key : keys) {
            if (reader.lookup(key, out)) {
                final int holders = Long.bitCount(out[0]) + Long.bitCount(out[1]) + Long.bitCount(out[2])
                    + Long.bitCount(out[3]);
                assertTrue(holders >= 1 && holders <= 9, "holders " + holders);
                if (holders > IndexDescriptor.PODS_INLINE_MAX) {
                    crowded++;
                }
            }
        }
        // An evicted block that a later pod stores again comes back with fewer holders; blocks with more than
        // 7 holders need an overflow bitmap, and there are only 32.
        assertTrue(crowded > 0 && crowded <= 32, "blocks with > 7 holders: " + crowded);
    }

    @Test
    void shouldPackInlinePodLists() {
        long word = 0;
        for (int slot : new int[] {3, 250, 64, 7}) {
            word = PodsWord.inlineAdd(word, slot);
        }
        assertEquals(4, IndexDescriptor.inlineCount(word));
        assertEquals(1, PodsWord.inlineIndexOf(word, 250));
        word = PodsWord.inlineRemoveAt(word, 1);
        assertEquals(3, IndexDescriptor.inlineCount(word));
        assertEquals(-1, PodsWord.inlineIndexOf(word, 250));
        assertEquals(7, IndexDescriptor.inlineSlot(word, 1), "the last slot moved into the hole");
        assertEquals(64, IndexDescriptor.inlineSlot(word, 2));
        assertEquals(0, word >>> 63, "inline words keep bit 63 clear");
    }

    @Test
    void shouldAnswerTheSameWithAndWithoutPrefetch() {
        final int a = writer.registerPod("pod-a", "m");
        final int b = writer.registerPod("pod-b", "m");
        final long[] keys = TestIndexes.chain(9, 48);
        writer.store(a, keys, 0, 48);
        writer.store(b, keys, 0, 30);
        try (IndexReader plain = IndexReader.attach(TestIndexes.reader(dir).prefetch(false))) {
            final PrefixResult other = new PrefixResult();
            reader.query(keys, 48, null, result);
            plain.query(keys, 48, null, other);
            assertEquals(result.depthOf(a), other.depthOf(a));
            assertEquals(30, other.depthOf(b));
            assertEquals(30, result.depthOf(b));
        }
    }

    @Test
    void shouldUseFewerProbesThanTheChainForFewDepths() {
        final int a = writer.registerPod("pod-a", "m");
        final long[] keys = TestIndexes.chain(2, 64);
        writer.store(a, keys, 0, 40);
        reader.query(keys, 64, null, result);
        assertEquals(40, result.depthOf(a));
        assertTrue(result.probes() <= 7, "binary search over 64 keys needs <= 7 probes, took " + result.probes());
    }

    @Test
    void shouldRestrictToCandidatesAndAlivePods() {
        final int a = writer.registerPod("pod-a", "m");
        final int b = writer.registerPod("pod-b", "m");
        final long[] keys = TestIndexes.chain(3, 8);
        writer.store(a, keys, 0, 8);
        writer.store(b, keys, 0, 8);
        reader.query(keys, 8, new PodSet().add(b), result);
        assertEquals(1, result.count());
        assertEquals(0, result.depthOf(a));
        assertEquals(8, result.depthOf(b));

        writer.podDown(b);
        reader.query(keys, 8, null, result);
        assertEquals(1, result.count());
        assertEquals(8, result.depthOf(a));
        assertFalse(reader.isAlive(b));
    }

    @Test
    void shouldBeIdempotentForStoreAndRemove() {
        final int a = writer.registerPod("pod-a", "m");
        final long[] keys = TestIndexes.chain(4, 10);
        assertEquals(10, writer.store(a, keys, 0, 10));
        assertEquals(0, writer.store(a, keys, 0, 10));
        assertEquals(10, writer.entryCount());
        assertEquals(4, writer.remove(a, keys, 6, 4));
        assertEquals(0, writer.remove(a, keys, 6, 4));
        assertEquals(6, writer.entryCount());
        reader.query(keys, 10, null, result);
        assertEquals(6, result.depthOf(a));
        assertEquals(a, writer.registerPod("pod-a", "m"));
        final int x = writer.registerPod("pod-x", "m");
        assertTrue(writer.podDown(x));
        assertFalse(writer.podDown(x), "killing a dead pod is a no-op");
        assertEquals(-1, writer.slotOf("pod-x"));
    }

    @Test
    void shouldFreeEntriesWhenTheLastPodLeaves() {
        final int a = writer.registerPod("pod-a", "m");
        final int b = writer.registerPod("pod-b", "m");
        final long[] keys = TestIndexes.chain(5, 20);
        writer.store(a, keys, 0, 20);
        writer.store(b, keys, 0, 20);
        writer.remove(a, keys, 0, 20);
        assertEquals(20, writer.entryCount());
        writer.remove(b, keys, 0, 20);
        assertEquals(0, writer.entryCount());
        assertEquals(0, reader.entryCount());
    }

    @Test
    void shouldClearAPodThatStaysAlive() {
        final int a = writer.registerPod("pod-a", "m");
        final int b = writer.registerPod("pod-b", "m");
        final long[] keys = TestIndexes.chain(6, 12);
        writer.store(a, keys, 0, 12);
        writer.store(b, keys, 0, 5);
        writer.clearPod(a);
        assertTrue(writer.isAlive(a));
        reader.query(keys, 12, null, result);
        assertEquals(0, result.depthOf(a));
        assertEquals(5, result.depthOf(b));
        assertEquals(5, writer.entryCount());
        writer.store(a, keys, 0, 3);
        reader.query(keys, 12, null, result);
        assertEquals(3, result.depthOf(a));
    }

    @Test
    void shouldRemovePodInTwoPhasesAndReuseItsSlotWithANewGeneration() {
        final int a = writer.registerPod("pod-a", "m");
        final long[] keys = TestIndexes.chain(7, 16);
        writer.store(a, keys, 0, 16);
        final int generation = reader.pod(a).generation();

        assertTrue(writer.podDown(a));
        assertFalse(writer.podDown(a));
        assertFalse(reader.isAlive(a));
        assertEquals(IndexDescriptor.POD_STATE_DRAINING, reader.pod(a).state());
        assertEquals(16, writer.entryCount(), "phase 1 only clears the alive bit");
        assertThrows(IllegalStateException.class, () -> writer.store(a, keys, 0, 1));

        int steps = 0;
        while (writer.sweepStep() > 0) {
            steps++;
        }
        assertEquals(writer.context().shardCount(), steps, "one shard per bounded step");
        assertEquals(0, writer.entryCount());
        assertEquals(IndexDescriptor.POD_STATE_FREE, reader.pod(a).state());

        assertNotEquals(a, writer.registerPod("pod-b", "m"), "a new pod prefers a slot that never held one");
        final int again = writer.registerPod("pod-a", "other-model");
        assertEquals(a, again, "the swept slot goes back to the pod that held it");
        final IndexReader.PodInfo info = reader.pod(again);
        assertEquals(generation + 1, info.generation());
        assertEquals("pod-a", info.podId());
        assertEquals("other-model", info.model());
        reader.query(keys, 16, null, result);
        assertEquals(0, result.count(), "no ghost bits from the previous owner");
    }

    @Test
    void shouldRefuseThe257thPod() {
        for (int i = 0; i < 256; i++) {
            writer.registerPod("pod-" + i, "m");
        }
        final PodCapacityExceededException ex = assertThrows(PodCapacityExceededException.class,
            () -> writer.registerPod("pod-256", "m"));
        assertTrue(ex.getMessage().contains("256"), ex.getMessage());
        assertEquals(255, writer.registerPod("pod-255", "m"), "existing pods still resolve");
    }

    @Test
    void shouldRejectBadPodIdsAndSlots() {
        assertThrows(IllegalArgumentException.class, () -> writer.registerPod("", "m"));
        assertThrows(IllegalArgumentException.class, () -> writer.registerPod("x".repeat(113), "m"));
        assertThrows(IllegalArgumentException.class, () -> writer.registerPod("p", "m".repeat(121)));
        assertThrows(IllegalArgumentException.class, () -> writer.store(256, new long[1], 0, 1));
        assertThrows(IllegalStateException.class, () -> writer.store(3, new long[1], 0, 1));
        assertThrows(IndexOutOfBoundsException.class,
            () -> writer.store(writer.registerPod("p", "m"), new long[2], 1, 2));
    }

    @Test
    void shouldRejectChainsLongerThanTheConfiguredMaximum() {
        final long[] keys = new long[65];
        final ChainTooLongException ex = assertThrows(ChainTooLongException.class,
            () -> reader.query(keys, 65, null, result));
        assertTrue(ex.getMessage().contains("64"), ex.getMessage());
        assertThrows(ChainTooLongException.class, () -> reader.queryExact(keys, 65, null, result));
        assertThrows(IllegalArgumentException.class, () -> reader.query(keys, 66, null, result));
        assertEquals(0, reader.query(keys, 0, null, result));
    }

    @Test
    void shouldEvictWhenFullAndNeverGrow() throws Exception {
        final int a = writer.registerPod("pod-a", "m");
        final long size = Files.size(writer.context().indexFile());
        final long[] keys = TestIndexes.chain(8, 64);
        for (int round = 0; round < 40; round++) {
            final long[] more = TestIndexes.chain(100 + round, 64);
            writer.store(a, more, 0, 64);
        }
        writer.store(a, keys, 0, 64);
        assertTrue(writer.entryCount() <= writer.capacity(), writer.entryCount() + " > " + writer.capacity());
        assertTrue(writer.evictions() > 0);
        assertEquals(writer.evictions(), reader.evictions());
        assertEquals(size, Files.size(writer.context().indexFile()));
        // The most recently stored keys survive sampled-LRU eviction.
        final long[] out = new long[4];
        int found = 0;
        for (final long key : keys) {
            if (reader.lookup(key, out)) {
                found++;
            }
        }
        assertTrue(found >= 48, "recent keys mostly kept, found " + found);
    }

    @Test
    void shouldStoreKeyZero() {
        final int a = writer.registerPod("pod-a", "m");
        final long[] keys = {0L, IndexDescriptor.ZERO_KEY_ALIAS};
        writer.store(a, keys, 0, 1);
        final long[] out = new long[4];
        assertTrue(reader.lookup(0L, out));
        assertEquals(1L << a, out[0]);
    }

    @Test
    void shouldFillAKeysHomeLineFromItsFirstEntryAndShiftSpillsBackOnRemoval() throws Exception {
        final int a = writer.registerPod("pod-a", "m");
        // Small geometry: 4 shards (2 bits), 64 slots (6 bits). Five keys of shard 1 whose hashed slots all fall in
        // line 2 (slots 8..11), the first of them hashing to the line's last slot.
        final long[] keys = new long[5];
        int found = 0;
        for (long key = 1; found < keys.length; key++) {
            final long h = IndexDescriptor.spread(key);
            final int hashed = (int) ((h << 2) >>> 58);
            if ((h >>> 62) == 1 && hashed >= 8 && hashed <= 11 && (found > 0 || hashed == 11)) {
                keys[found++] = key;
            }
        }
        // One at a time, so that they are stored in this order (a run is stored from its last block).
        for (int i = 0; i < keys.length; i++) {
            writer.store(a, keys, i, 1);
        }
        final long table = IndexDescriptor.tablesOffset(reader.maxPods(), reader.shardCount())
            + (long) reader.slotsPerShard() * IndexDescriptor.ENTRY_LENGTH;
        try (io.kvidx.ffm.MappedRegion region = io.kvidx.ffm.MappedRegion.mapReadOnly(writer.context().indexFile(),
            Files.size(writer.context().indexFile()))) {
            final java.lang.foreign.MemorySegment s = region.segment();
            for (int i = 0; i < 5; i++) {
                // Keys 0..3 fill slots 8..11 in store order; the fifth spills to slot 12, the next line's first.
                assertEquals(keys[i], (long) Layouts.LONG.get(s, table + (8L + i) * IndexDescriptor.ENTRY_LENGTH));
            }
            writer.remove(a, keys, 1, 1);
            final long[] expected = {keys[0], keys[2], keys[3], keys[4], 0L};
            for (int i = 0; i < 5; i++) {
                assertEquals(expected[i], (long) Layouts.LONG.get(s, table + (8L + i) * IndexDescriptor.ENTRY_LENGTH),
                    "slot " + (8 + i) + " after the removal");
            }
        }
        final long[] out = new long[4];
        for (final int i : new int[] {0, 2, 3, 4}) {
            assertTrue(reader.lookup(keys[i], out), "key " + i);
            assertEquals(1L << a, out[0]);
        }
        assertFalse(reader.lookup(keys[1], out));
    }

    @Test
    void shouldMapReadOnly() throws Exception {
        try (io.kvidx.ffm.MappedRegion region = io.kvidx.ffm.MappedRegion.mapReadOnly(writer.context().indexFile(),
            4096)) {
            assertTrue(region.isReadOnly());
            final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                () -> Layouts.LONG.set(region.segment(), 64L, 1L));
            assertTrue(ex.getMessage().contains("read-only"), ex.getMessage());
        }
    }
}
