package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PrefixResult;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The reader's lookup resolves a key from the four entries of its home line at once and probes on only when that
 * line is full without it: a key in each of the four entries, keys spilled into the next line, an absent key whose
 * home line is full, an absent key whose home line has a free entry, and the same after a removal shifts a spilled
 * key back. Both cell forms (direct bitmaps, inline slots) and both read paths (single lookup, chain query).
 */
class HomeLineLookupTest {
    /** The geometry of {@link TestIndexes#small}: 4 shards (2 bits), 64 slots per shard (6 bits). */
    private static final int SHARD_BITS = 2;
    private static final int SLOT_BITS = 6;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "max pods {0}")
    @ValueSource(ints = {64, 256})
    void shouldFindAKeyInAnyEntryOfItsHomeLineAndProbeOnOnlyWhenTheLineIsFull(final int maxPods) {
        // Shard 1, line 2 (slots 8..11): six keys stored there fill the line and spill to slots 12 and 13.
        final List<Long> line2 = keysHomedAt(1, 8, 7);
        final long[] stored = line2.subList(0, 6).stream().mapToLong(Long::longValue).toArray();
        final long absentFullHome = line2.get(6);
        // Shard 1, line 5 (slots 20..23), empty: its key is absent after one line.
        final long absentFreeHome = keysHomedAt(1, 20, 1).get(0);
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).maxPods(maxPods));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir))) {
            final int a = writer.registerPod("pod-a", "m");
            final int b = writer.registerPod("pod-b", "m");
            writer.store(a, stored, 0, stored.length);
            writer.store(b, stored, 0, 4);
            final long[] out = new long[IndexDescriptor.POD_WORDS];
            for (int i = 0; i < stored.length; i++) {
                assertTrue(reader.lookup(stored[i], out), "key " + i);
                assertEquals(i < 4 ? (1L << a) | (1L << b) : 1L << a, out[0], "key " + i);
            }
            assertFalse(reader.lookup(absentFullHome, out), "absent, home line full");
            assertEquals(0, out[0]);
            assertFalse(reader.lookup(absentFreeHome, out), "absent, home line free");

            final PrefixResult result = new PrefixResult();
            assertEquals(6, reader.query(stored, stored.length, null, result));
            assertEquals(6, result.depthOf(a));
            assertEquals(4, result.depthOf(b));
            assertEquals(6, reader.queryExact(stored, stored.length, null, result));
            assertEquals(6, result.depthOf(a));
            assertEquals(4, result.depthOf(b));
            final long[] longer = {stored[0], stored[1], stored[2], stored[3], stored[4], stored[5], absentFullHome};
            assertEquals(6, reader.query(longer, longer.length, null, result));
            assertEquals(6, result.depthOf(a));

            // Removing the line's second key (pod a's hold on blocks 1..5 goes, and b's on 1..3) empties its
            // entry and those of blocks 4 and 5 (no holder left); b's blocks 2 and 3 stay in the line.
            writer.remove(a, stored, 1, 5);
            writer.remove(b, stored, 1, 1);
            assertFalse(reader.lookup(stored[1], out));
            for (final int i : new int[] {2, 3}) {
                assertTrue(reader.lookup(stored[i], out), "key " + i);
                assertEquals(1L << b, out[0], "key " + i);
            }
            for (final int i : new int[] {4, 5}) {
                assertFalse(reader.lookup(stored[i], out), "key " + i);
            }
            // b now holds blocks 0, 2 and 3: a hole, which only the exact walk reports as such.
            assertEquals(1, reader.queryExact(stored, stored.length, null, result));
            assertEquals(1, result.depthOf(a));
            assertEquals(1, result.depthOf(b));
        }
    }

    /** The first {@code n} keys (from 1 up) of the given shard whose home entry is the given slot. */
    private static List<Long> keysHomedAt(final int shard, final int homeSlot, final int n) {
        final List<Long> keys = new ArrayList<>();
        for (long key = 1; keys.size() < n; key++) {
            final long h = IndexDescriptor.spread(IndexDescriptor.storedKey(key));
            if ((h >>> (64 - SHARD_BITS)) == shard && IndexDescriptor.homeSlot(h, SHARD_BITS, SLOT_BITS) == homeSlot) {
                keys.add(key);
            }
        }
        return keys;
    }
}
