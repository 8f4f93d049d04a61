package io.kvidx.jcstress.broken;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.Seqlock;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.client.tiers.TierMapReader;
import io.kvidx.jcstress.Cell;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;

import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH_SHIFT;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.LINE_ENTRIES;
import static io.kvidx.client.index.IndexDescriptor.OVERFLOW_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.SHARD_HEADER_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.SHARD_VERSION_OFFSET;

/**
 * The router's reads with one step of their protocol left out, over a second read-only mapping of the same files
 * ({@link Cell#indexSegment()}, {@link Cell#tiersSegment()}). Each is a copy of the real code (named in its Javadoc)
 * that differs only where its Javadoc says; none waits without a bound except where the real one spins on an odd
 * version, and there they spin as the real ones do before their bound, which the tests never reach.
 *
 * <p><b>Note:</b> stateless and allocation-free except {@link #podNoSeqCheck} (as {@code IndexReader.pod}).
 */
public final class BrokenReads {
    /** As KeyLookup's and TierMapReader's plain loads between two reads of a seqlock version. */
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();

    private BrokenReads() {
    }

    /**
     * {@code KeyLookup.lookup} (general cell) without the seqlock: no first read of the shard version (so no wait
     * while it is odd) and no check that it is unchanged after the probe. Everything else as the real lookup: the
     * home line's four keys at once, then key by key, an acquire fence before the pods word.
     *
     * @param cell the cell.
     * @param key  block key.
     * @param out  four pod words, written.
     * @return true when the probe found the key.
     */
    public static boolean lookupNoVersionCheck(final Cell cell, final long key, final long[] out) {
        final Geometry g = Geometry.of(cell);
        final long k = IndexDescriptor.storedKey(key);
        final long h = IndexDescriptor.spread(k);
        final int shard = (int) (h >>> (64 - g.shardBits));
        final long table = g.tablesOffset + shard * g.shardTableLength;
        final long home = table + ((long) IndexDescriptor.homeSlot(h, g.shardBits, g.slotBits) << ENTRY_LENGTH_SHIFT);
        final MemorySegment s = cell.indexSegment();
        final long e = find(s, g, k, home, table);
        if (e < 0) {
            clear(out);
            return false;
        }
        VarHandle.acquireFence();
        decode(s, g, shard, (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET), out);
        return true;
    }

    /**
     * {@code KeyLookup.lookup} (general cell) without the acquire fence between the key it found and the pods word:
     * the loads stay in program order, so only a compiler or a CPU that reorders loads (not x86's) could show the
     * difference. The seqlock is kept.
     *
     * @param cell the cell.
     * @param key  block key.
     * @param out  four pod words, written.
     * @return true when the probe found the key.
     */
    public static boolean lookupNoAcquireFence(final Cell cell, final long key, final long[] out) {
        final Geometry g = Geometry.of(cell);
        final long k = IndexDescriptor.storedKey(key);
        final long h = IndexDescriptor.spread(k);
        final int shard = (int) (h >>> (64 - g.shardBits));
        final long versionOffset = g.shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH + SHARD_VERSION_OFFSET;
        final long table = g.tablesOffset + shard * g.shardTableLength;
        final long home = table + ((long) IndexDescriptor.homeSlot(h, g.shardBits, g.slotBits) << ENTRY_LENGTH_SHIFT);
        final MemorySegment s = cell.indexSegment();
        while (true) {
            final long v1 = Seqlock.beginRead(s, versionOffset);
            if (!Seqlock.isWriting(v1)) {
                final long e = find(s, g, k, home, table);
                final long pods = e >= 0 ? (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET) : 0;
                if (Seqlock.validate(s, versionOffset, v1)) {
                    if (e < 0) {
                        clear(out);
                        return false;
                    }
                    decode(s, g, shard, pods, out);
                    return true;
                }
            }
            Thread.onSpinWait();
        }
    }

    /**
     * {@code KeyLookup.lookup} (general cell) probing entry by entry and loading each entry's pods word <i>before</i>
     * its key: the order that the acquire fence (reader) and the release store of the key (writer) together rule
     * out, and that a compiler or a weakly ordered CPU may choose once they are gone. On x86 dropping the fences alone
     * does not reorder these loads ({@link #lookupNoAcquireFence}); this read shows what the reordering returns. The
     * seqlock is kept.
     *
     * @param cell the cell.
     * @param key  block key.
     * @param out  four pod words, written.
     * @return true when the probe found the key.
     */
    public static boolean lookupPodsBeforeKey(final Cell cell, final long key, final long[] out) {
        final Geometry g = Geometry.of(cell);
        final long k = IndexDescriptor.storedKey(key);
        final long h = IndexDescriptor.spread(k);
        final int shard = (int) (h >>> (64 - g.shardBits));
        final long versionOffset = g.shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH + SHARD_VERSION_OFFSET;
        final long table = g.tablesOffset + shard * g.shardTableLength;
        final long tableMask = g.shardTableLength - 1;
        final long home = table + ((long) IndexDescriptor.homeSlot(h, g.shardBits, g.slotBits) << ENTRY_LENGTH_SHIFT);
        final MemorySegment s = cell.indexSegment();
        while (true) {
            final long v1 = Seqlock.beginRead(s, versionOffset);
            if (!Seqlock.isWriting(v1)) {
                long pods = 0;
                boolean found = false;
                long e = home;
                for (int n = 0; n <= g.slotMask; n++) {
                    final long p = (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET);
                    final long ek = (long) PLAIN.get(s, e + ENTRY_KEY_OFFSET);
                    if (ek == k) {
                        pods = p;
                        found = true;
                        break;
                    }
                    if (ek == 0) {
                        break;
                    }
                    e = table + ((e + ENTRY_LENGTH - table) & tableMask);
                }
                if (Seqlock.validate(s, versionOffset, v1)) {
                    if (!found) {
                        clear(out);
                        return false;
                    }
                    decode(s, g, shard, pods, out);
                    return true;
                }
            }
            Thread.onSpinWait();
        }
    }

    /**
     * {@code IndexReader.pod} without the second read of the entry's seqlock: it still waits while the entry is odd
     * before it reads, but it does not notice a change that began while it was reading.
     *
     * @param cell the cell.
     * @param slot pod slot.
     * @return the entry as read.
     */
    public static IndexReader.PodInfo podNoSeqCheck(final Cell cell, final int slot) {
        final MemorySegment segment = cell.indexSegment();
        final long base = IndexDescriptor.podEntryOffset(slot);
        while (true) {
            if (!Seqlock.isWriting(Seqlock.beginRead(segment, base + IndexDescriptor.POD_SEQ_OFFSET))) {
                final int generation = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_GENERATION_OFFSET);
                final int state = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET);
                final int idLength = Math.clamp(segment.get(ValueLayout.JAVA_INT,
                    base + IndexDescriptor.POD_ID_LENGTH_OFFSET), 0, IndexDescriptor.POD_ID_MAX_LENGTH);
                final int modelLength = Math.clamp(segment.get(ValueLayout.JAVA_INT,
                    base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET), 0, IndexDescriptor.POD_MODEL_MAX_LENGTH);
                final int flags = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_FLAGS_OFFSET);
                final byte[] id = new byte[idLength];
                final byte[] model = new byte[modelLength];
                MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_ID_OFFSET, id, 0,
                    idLength);
                MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_MODEL_OFFSET, model, 0,
                    modelLength);
                return new IndexReader.PodInfo(slot, generation, state, new String(id, StandardCharsets.UTF_8),
                    new String(model, StandardCharsets.UTF_8), (flags & IndexDescriptor.POD_FLAG_SUSPECT) != 0);
            }
            Thread.onSpinWait();
        }
    }

    /**
     * {@code TierMapReader.tierBits} without the second read of the region's version: it still waits while the
     * version is odd before it reads, but it does not notice a change that began while it was reading.
     *
     * @param cell       the cell.
     * @param slot       pod slot.
     * @param generation the slot's generation asked for.
     * @param key        router key.
     * @return the tier bits, {@link TierMapReader#ABSENT} or {@link TierMapReader#OTHER_GENERATION}.
     */
    public static int tierBitsNoVersionCheck(final Cell cell, final int slot, final int generation, final long key) {
        final MemorySegment s = cell.tiersSegment();
        final int slots = cell.tiers().slotsPerRegion();
        final long base = TierMapDescriptor.HEADER_LENGTH + slot * TierMapDescriptor.regionLength(slots);
        while (true) {
            if (!Seqlock.isWriting(Seqlock.beginRead(s, base + TierMapDescriptor.REGION_VERSION_OFFSET))) {
                return tierProbe(s, base, slots, generation, key, false);
            }
            Thread.onSpinWait();
        }
    }

    /**
     * {@code TierMapReader.tierBits} loading each probed entry's value <i>before</i> its key (see
     * {@link #lookupPodsBeforeKey}: the order the acquire fence and the writer's release store of the key rule
     * out). The seqlock is kept.
     *
     * @param cell       the cell.
     * @param slot       pod slot.
     * @param generation the slot's generation asked for.
     * @param key        router key.
     * @return the tier bits, {@link TierMapReader#ABSENT} or {@link TierMapReader#OTHER_GENERATION}.
     */
    public static int tierBitsValueBeforeKey(final Cell cell, final int slot, final int generation, final long key) {
        final MemorySegment s = cell.tiersSegment();
        final int slots = cell.tiers().slotsPerRegion();
        final long base = TierMapDescriptor.HEADER_LENGTH + slot * TierMapDescriptor.regionLength(slots);
        while (true) {
            final long v1 = Seqlock.beginRead(s, base + TierMapDescriptor.REGION_VERSION_OFFSET);
            if (!Seqlock.isWriting(v1)) {
                final int result = tierProbe(s, base, slots, generation, key, true);
                if (Seqlock.validate(s, base + TierMapDescriptor.REGION_VERSION_OFFSET, v1)) {
                    return result;
                }
            }
            Thread.onSpinWait();
        }
    }

    /** TierMapReader.tierBits's probe: the generation check, then key by key from the home entry. */
    private static int tierProbe(final MemorySegment s, final long base, final int slots, final int generation,
        final long key, final boolean valueFirst) {
        if (s.get(ValueLayout.JAVA_INT, base + TierMapDescriptor.REGION_GENERATION_OFFSET) != generation) {
            return TierMapReader.OTHER_GENERATION;
        }
        final long entries = base + TierMapDescriptor.REGION_HEADER_LENGTH;
        final long k = TierMapDescriptor.stored(key);
        final int mask = slots - 1;
        int i = TierMapDescriptor.home(key, slots);
        for (int n = 0; n <= mask; n++) {
            final long e = entries + (long) i * TierMapDescriptor.ENTRY_LENGTH;
            final long early = valueFirst ? (long) PLAIN.get(s, e + TierMapDescriptor.ENTRY_VALUE_OFFSET) : 0;
            final long ek = (long) PLAIN.get(s, e + TierMapDescriptor.ENTRY_KEY_OFFSET);
            if (ek == k) {
                if (valueFirst) {
                    return (int) (early & TierMapDescriptor.TIER_MASK);
                }
                VarHandle.acquireFence();
                return (int) ((long) PLAIN.get(s, e + TierMapDescriptor.ENTRY_VALUE_OFFSET)
                    & TierMapDescriptor.TIER_MASK);
            }
            if (ek == 0) {
                break;
            }
            i = (i + 1) & mask;
        }
        return TierMapReader.ABSENT;
    }

    /** KeyLookup.find: the home line's four keys at once, then key by key from the next line. */
    private static long find(final MemorySegment s, final Geometry g, final long k, final long home,
        final long table) {
        for (int i = 0; i < LINE_ENTRIES; i++) {
            final long ek = (long) PLAIN.get(s, home + (long) i * ENTRY_LENGTH + ENTRY_KEY_OFFSET);
            if (ek == k) {
                return home + (long) i * ENTRY_LENGTH;
            }
        }
        for (int i = 0; i < LINE_ENTRIES; i++) {
            if ((long) PLAIN.get(s, home + (long) i * ENTRY_LENGTH + ENTRY_KEY_OFFSET) == 0) {
                return -1;
            }
        }
        final long tableMask = g.shardTableLength - 1;
        long e = table + ((home + LINE_ENTRIES * ENTRY_LENGTH - table) & tableMask);
        for (int n = LINE_ENTRIES; n <= g.slotMask; n++) {
            final long ek = (long) PLAIN.get(s, e + ENTRY_KEY_OFFSET);
            if (ek == k) {
                return e;
            }
            if (ek == 0) {
                return -1;
            }
            e = table + ((e + ENTRY_LENGTH - table) & tableMask);
        }
        return -1;
    }

    /** KeyLookup.lookup's decoding of a pods word: an inline list, or an overflow bitmap after an acquire fence. */
    private static void decode(final MemorySegment s, final Geometry g, final int shard, final long pods,
        final long[] out) {
        clear(out);
        if (pods >= 0) {
            for (int i = 0, count = IndexDescriptor.inlineCount(pods); i < count; i++) {
                final int slot = IndexDescriptor.inlineSlot(pods, i);
                out[slot >>> 6] |= 1L << slot;
            }
            return;
        }
        final int index = (int) pods & Math.max(0, g.overflowPerShard - 1);
        final long o = g.overflowOffset + ((long) shard * g.overflowPerShard + index) * OVERFLOW_LENGTH;
        VarHandle.acquireFence();
        for (int w = 0; w < 4; w++) {
            out[w] = (long) PLAIN.get(s, o + 8L * w);
        }
    }

    private static void clear(final long[] out) {
        out[0] = 0;
        out[1] = 0;
        out[2] = 0;
        out[3] = 0;
    }

    /** The offsets KeyLookup derives from the file's geometry. */
    private record Geometry(int shardBits, int slotBits, int slotMask, long shardHeadersOffset, long tablesOffset,
        long shardTableLength, long overflowOffset, int overflowPerShard) {

        static Geometry of(final Cell cell) {
            final IndexReader r = cell.reader();
            final int shards = r.shardCount();
            final int slots = r.slotsPerShard();
            final int maxPods = r.maxPods();
            return new Geometry(Integer.numberOfTrailingZeros(shards), Integer.numberOfTrailingZeros(slots),
                slots - 1, IndexDescriptor.shardHeadersOffset(maxPods), IndexDescriptor.tablesOffset(maxPods, shards),
                (long) slots * ENTRY_LENGTH, IndexDescriptor.overflowOffset(maxPods, shards, slots),
                IndexDescriptor.overflowPerShard(maxPods, slots));
        }
    }
}
