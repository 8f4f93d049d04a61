package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.Seqlock;
import io.kvidx.ffm.Layouts;
import org.agrona.collections.Long2LongHashMap;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.BitSet;

import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_ENTRY_COUNT_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_VERSION_OFFSET;

/**
 * Makes an index file that a writer left consistent again before anyone writes it: after a crash (the daemon was
 * killed inside a change) on attach, and at once when a writer thread fails inside a change of a shard.
 *
 * <p>What a crash can leave, and what is done:
 * <ul>
 *   <li>a shard whose version is odd (killed inside a deletion, a backward shift or a demotion): the shard is
 *   rebuilt: every entry whose key and pods word are valid is kept once (a half-done shift can leave a key twice),
 *   re-inserted at its probe position, and the version ends even;</li>
 *   <li>a half-inserted entry (pods word written, key not): its pods word is zeroed; an entry count that missed
 *   its last increment is recounted;</li>
 *   <li>an overflow bitmap referenced by two entries, or an index outside the pool: the later entry is dropped;
 *   the pool's free list and in-use count are rebuilt from the entries;</li>
 *   <li>a pod table entry whose seqlock is odd (killed while changing it): the entry is cleared (pod id, model and
 *   flags zeroed, generation kept) and the slot is taken down and swept (its owner is unknown); every alive bit is
 *   made to agree with its slot's state, and the pod table version is incremented before any alive bit is set
 *   (the writer's registration order, see {@link PodTable}).</li>
 * </ul>
 * Pods words are checked against the cell's geometry: an inline slot at or beyond max pods, or an empty holder
 * set, drops the entry.
 *
 * <p><b>Note:</b> {@link #attach} runs before any writer thread starts; {@link #repairShard} runs with the shard's
 * writer lock held.
 */
final class IndexRepair {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle INT = Layouts.INT;

    /** What a repair found and fixed. */
    static final class Report {
        int shardsRebuilt;
        long entriesDropped;
        long countsFixed;
        int podEntriesRepaired;
        int aliveBitsFixed;
        long entries;

        boolean clean() {
            return shardsRebuilt == 0 && entriesDropped == 0 && countsFixed == 0 && podEntriesRepaired == 0
                && aliveBitsFixed == 0;
        }

        @Override
        public String toString() {
            return entries + " entries; " + shardsRebuilt + " shards rebuilt, " + entriesDropped
                + " entries dropped, " + countsFixed + " counts fixed, " + podEntriesRepaired
                + " pod entries repaired, " + aliveBitsFixed + " alive bits fixed";
        }
    }

    private IndexRepair() {
    }

    /**
     * Checks and repairs every shard and the pod table of an attached index, then rebuilds the writer's heap
     * state: overflow free lists, store clocks and children counts.
     *
     * @param table the entry table over the attached file.
     * @return what was fixed.
     */
    static Report attach(final EntryTable table) {
        final Report report = new Report();
        final IndexGeometry g = table.g;
        final MemorySegment s = table.segment();
        if (table.counters().entryCount() == 0 && table.meta().fresh()) {
            // A new file (or an empty one): nothing to check; only the free lists need building.
            repairPodTable(s, g.maxPods, report);
            for (int shard = 0; shard < g.shardCount; shard++) {
                rebuildPool(table, shard);
            }
            return report;
        }
        repairPodTable(s, g.maxPods, report);
        for (int shard = 0; shard < g.shardCount; shard++) {
            final long version = Seqlock.beginRead(s, g.shardHeader(shard) + SHARD_VERSION_OFFSET);
            if (Seqlock.isWriting(version) || !consistent(table, shard, report)) {
                rebuild(table, shard, report);
                report.shardsRebuilt++;
            }
            rebuildPool(table, shard);
            long clock = 0;
            final int base = shard * g.slotsPerShard;
            for (int idx = 0; idx < g.slotsPerShard; idx++) {
                clock = Math.max(clock, table.meta().stamp(base + idx));
            }
            table.locks().clock(shard, clock);
        }
        rebuildChildren(table);
        report.entries = table.counters().entryCount();
        return report;
    }

    /**
     * Rebuilds one shard after a writer failed inside a change of it, leaving its version even. Call with the
     * shard's lock held.
     *
     * @param table the entry table.
     * @param shard the shard.
     */
    static void repairShard(final EntryTable table, final int shard) {
        rebuild(table, shard, new Report());
        rebuildPool(table, shard);
    }

    /** True when the shard's entries are all valid, reachable from their homes, and its count matches. */
    private static boolean consistent(final EntryTable table, final int shard, final Report report) {
        final IndexGeometry g = table.g;
        final MemorySegment s = table.segment();
        final long t = g.table(shard);
        final BitSet overflowUsed = new BitSet();
        int count = 0;
        for (int idx = 0; idx < g.slotsPerShard; idx++) {
            final long e = g.entry(t, idx);
            final long key = s.get(ValueLayout.JAVA_LONG, e + ENTRY_KEY_OFFSET);
            final long pods = s.get(ValueLayout.JAVA_LONG, e + ENTRY_PODS_OFFSET);
            if (key == 0) {
                if (pods != 0) {
                    return false;
                }
                continue;
            }
            count++;
            if (!validPods(table, shard, pods, overflowUsed) || table.find(t, key, g.homeSlot(
                IndexDescriptor.spread(key))) != idx) {
                return false;
            }
        }
        final long countOffset = g.shardHeader(shard) + SHARD_ENTRY_COUNT_OFFSET;
        if ((int) INT.get(s, countOffset) != count) {
            report.countsFixed++;
            INT.setRelease(s, countOffset, count);
        }
        return true;
    }

    private static boolean validPods(final EntryTable table, final int shard, final long pods,
        final BitSet overflowUsed) {
        final IndexGeometry g = table.g;
        if (pods == 0) {
            return false;
        }
        if (g.direct) {
            return g.maxPods >= 64 || (pods >>> g.maxPods) == 0;
        }
        if (pods >= 0) {
            final int n = IndexDescriptor.inlineCount(pods);
            if (n < 1 || n > IndexDescriptor.PODS_INLINE_MAX) {
                return false;
            }
            for (int i = 0; i < n; i++) {
                if (IndexDescriptor.inlineSlot(pods, i) >= g.maxPods) {
                    return false;
                }
            }
            return (pods & PodsWord.INLINE_SLOTS_MASK) >>> (n << 3) == 0;
        }
        final long index = pods & ~IndexDescriptor.PODS_OVERFLOW_FLAG;
        if (index >= g.overflowPerShard || overflowUsed.get((int) index)) {
            return false;
        }
        if (table.overflow().isEmpty(g.overflowEntry(shard, (int) index))) {
            return false;
        }
        overflowUsed.set((int) index);
        return true;
    }

    private static void rebuild(final EntryTable table, final int shard, final Report report) {
        final IndexGeometry g = table.g;
        final MemorySegment s = table.segment();
        final WriterMeta meta = table.meta();
        final long t = g.table(shard);
        final int base = shard * g.slotsPerShard;
        final long header = g.shardHeader(shard);
        final long odd = Seqlock.beginRepair(s, header + SHARD_VERSION_OFFSET);
        final int n = g.slotsPerShard;
        final long[] keys = new long[n];
        final long[] pods = new long[n];
        final long[] parents = new long[n];
        final long[] stamps = new long[n];
        final Long2LongHashMap seen = new Long2LongHashMap(-1);
        final BitSet overflowUsed = new BitSet();
        int kept = 0;
        for (int idx = 0; idx < n; idx++) {
            final long e = g.entry(t, idx);
            final long key = s.get(ValueLayout.JAVA_LONG, e + ENTRY_KEY_OFFSET);
            final long word = s.get(ValueLayout.JAVA_LONG, e + ENTRY_PODS_OFFSET);
            if (key == 0) {
                continue;
            }
            if (seen.containsKey(key) || !validPods(table, shard, word, overflowUsed)) {
                report.entriesDropped++;
                continue;
            }
            seen.put(key, kept);
            keys[kept] = key;
            pods[kept] = word;
            parents[kept] = meta.parent(base + idx);
            stamps[kept] = meta.stamp(base + idx);
            kept++;
        }
        for (int idx = 0; idx < n; idx++) {
            final long e = g.entry(t, idx);
            LONG.setOpaque(s, e + ENTRY_KEY_OFFSET, 0L);
            LONG.setOpaque(s, e + ENTRY_PODS_OFFSET, 0L);
            meta.set(base + idx, 0, 0);
        }
        for (int i = 0; i < kept; i++) {
            int idx = g.homeSlot(IndexDescriptor.spread(keys[i]));
            while (s.get(ValueLayout.JAVA_LONG, g.entry(t, idx) + ENTRY_KEY_OFFSET) != 0) {
                idx = (idx + 1) & g.slotMask;
            }
            final long e = g.entry(t, idx);
            LONG.setOpaque(s, e + ENTRY_PODS_OFFSET, pods[i]);
            LONG.setOpaque(s, e + ENTRY_KEY_OFFSET, keys[i]);
            meta.set(base + idx, parents[i], stamps[i]);
        }
        INT.setRelease(s, header + SHARD_ENTRY_COUNT_OFFSET, kept);
        Seqlock.endWrite(s, header + SHARD_VERSION_OFFSET, odd);
    }

    /** Rebuilds a shard's overflow free list and in-use count from the bitmaps its entries reference. */
    private static void rebuildPool(final EntryTable table, final int shard) {
        final IndexGeometry g = table.g;
        if (g.overflowPerShard == 0) {
            return;
        }
        final MemorySegment s = table.segment();
        final long t = g.table(shard);
        final BitSet used = new BitSet(g.overflowPerShard);
        for (int idx = 0; idx < g.slotsPerShard; idx++) {
            final long e = g.entry(t, idx);
            final long pods = s.get(ValueLayout.JAVA_LONG, e + ENTRY_PODS_OFFSET);
            if (s.get(ValueLayout.JAVA_LONG, e + ENTRY_KEY_OFFSET) != 0 && pods < 0) {
                used.set((int) (pods & (g.overflowPerShard - 1)));
            }
        }
        table.overflow().rebuild(shard, used);
    }

    /** Counts, for every entry, the indexed entries whose parent key is its key. */
    static void rebuildChildren(final EntryTable table) {
        final IndexGeometry g = table.g;
        final MemorySegment s = table.segment();
        for (int shard = 0; shard < g.shardCount; shard++) {
            final long t = g.table(shard);
            final int base = shard * g.slotsPerShard;
            for (int idx = 0; idx < g.slotsPerShard; idx++) {
                if (s.get(ValueLayout.JAVA_LONG, g.entry(t, idx) + ENTRY_KEY_OFFSET) != 0) {
                    table.meta().addChildren(base + idx, -0xFFFF);
                }
            }
        }
        for (int shard = 0; shard < g.shardCount; shard++) {
            final long t = g.table(shard);
            final int base = shard * g.slotsPerShard;
            for (int idx = 0; idx < g.slotsPerShard; idx++) {
                if (s.get(ValueLayout.JAVA_LONG, g.entry(t, idx) + ENTRY_KEY_OFFSET) == 0) {
                    continue;
                }
                final long parent = table.meta().parent(base + idx);
                if (parent == 0) {
                    continue;
                }
                final long h = IndexDescriptor.spread(parent);
                final int ps = g.shardOf(h);
                final int pidx = table.find(g.table(ps), parent, g.homeSlot(h));
                if (pidx >= 0) {
                    table.meta().addChildren(ps * g.slotsPerShard + pidx, 1);
                }
            }
        }
    }

    /**
     * Makes the pod table consistent, in the writer's publication order ({@link PodTable}): pod entries and cleared
     * alive bits first, then the pod table version (once, when anything changed), then the alive bits to set, so a
     * reader that loads the alive words and then the version never sees a bit set under a version older than the
     * repair.
     */
    private static void repairPodTable(final MemorySegment s, final int maxPods, final Report report) {
        repairPodEntries(s, maxPods, report);
        setAliveBits(s, maxPods, report);
    }

    /**
     * First step of {@link #repairPodTable}: clears every pod entry whose seqlock is odd (a writer died inside a
     * change of it), clears the alive bits of slots that are not alive, and increments the pod table version when
     * anything changed or an alive bit is still to be set. It sets no alive bit.
     *
     * <p>A torn entry is cleared: its state becomes draining (its owner is unknown and the index may still hold its
     * bits: the next writer sweeps the slot, then frees it), pod id, model, their lengths and flags are zeroed, and
     * its seqlock ends even. The generation is kept, so the slot's next pod gets a generation no reader has seen
     * for it before (the torn change never published another).
     *
     * @return true when the pod table version was incremented.
     */
    static boolean repairPodEntries(final MemorySegment s, final int maxPods, final Report report) {
        boolean changed = false;
        for (int slot = 0; slot < maxPods; slot++) {
            final long base = IndexDescriptor.podEntryOffset(slot);
            final long seq = Seqlock.beginRead(s, base + IndexDescriptor.POD_SEQ_OFFSET);
            if (Seqlock.isWriting(seq)) {
                s.asSlice(base + IndexDescriptor.POD_STATE_OFFSET,
                    IndexDescriptor.POD_ENTRY_LENGTH - IndexDescriptor.POD_STATE_OFFSET).fill((byte) 0);
                s.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET,
                    IndexDescriptor.POD_STATE_DRAINING);
                Seqlock.endWrite(s, base + IndexDescriptor.POD_SEQ_OFFSET, seq);
                report.podEntriesRepaired++;
                changed = true;
            }
            final boolean alive = isAliveEntry(s, slot);
            final long word = PodTable.aliveWordOffset(slot);
            final boolean bit = ((long) LONG.getAcquire(s, word) & (1L << slot)) != 0;
            if (bit && !alive) {
                LONG.getAndBitwiseAnd(s, word, ~(1L << slot));
                report.aliveBitsFixed++;
                changed = true;
            } else if (alive && !bit) {
                changed = true; // set by setAliveBits, after the version
            }
        }
        if (changed) {
            LONG.getAndAdd(s, (long) IndexDescriptor.POD_TABLE_VERSION_OFFSET, 1L);
        }
        return changed;
    }

    /**
     * Second step of {@link #repairPodTable}, after {@link #repairPodEntries} incremented the pod table version:
     * sets the alive bit of every alive slot that lacks it.
     */
    static void setAliveBits(final MemorySegment s, final int maxPods, final Report report) {
        for (int slot = 0; slot < maxPods; slot++) {
            final long word = PodTable.aliveWordOffset(slot);
            if (isAliveEntry(s, slot) && ((long) LONG.getAcquire(s, word) & (1L << slot)) == 0) {
                LONG.getAndBitwiseOr(s, word, 1L << slot);
                report.aliveBitsFixed++;
            }
        }
    }

    private static boolean isAliveEntry(final MemorySegment s, final int slot) {
        return s.get(ValueLayout.JAVA_INT, IndexDescriptor.podEntryOffset(slot) + IndexDescriptor.POD_STATE_OFFSET)
            == IndexDescriptor.POD_STATE_ALIVE;
    }
}
