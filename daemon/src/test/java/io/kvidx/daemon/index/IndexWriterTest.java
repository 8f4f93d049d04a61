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

        final int again = writer.registerPod("pod-b", "other-model");
        assertEquals(a, again, "the swept slot is reused");
        final IndexReader.PodInfo info = reader.pod(again);
        assertEquals(generation + 1, info.generation());
        assertEquals("pod-b", info.podId());
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
