package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.ffm.Layouts;
import org.agrona.collections.LongArrayList;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;
import static io.kvidx.daemon.index.PodsWord.inMask;
import static io.kvidx.daemon.index.PodsWord.inlineAdd;

/**
 * Clears gone pods' bits from the index, one shard at a time, so that a sweep can be spread over maintenance ticks
 * ({@link PodTable#sweepStep}) or run over every shard at once ({@link PodTable#clear}). An entry no pod holds any
 * more is deleted ({@link EntryTable#delete}, inside an odd shard version); its parent's children count is
 * adjusted after the shard's lock is released, since a thread holds at most one shard lock.
 *
 * <p>Publication: an inline pods word that keeps holders is replaced by one release store, and an overflow bitmap
 * word by word, as removes are. A pod taken down left the alive bitmap, which every query starts from, before its
 * sweep; a pod that clears its cache while alive loses its blocks entry by entry, as if it had removed them.
 *
 * <p><b>Note:</b> called only from {@link PodTable} (synchronized, or the pod's own writer agent for a clear);
 * writes through the shard's writer lock.
 */
final class ShardSweep {
    private static final VarHandle LONG = Layouts.LONG;

    private final EntryTable entries;
    private final IndexGeometry g;
    private final MemorySegment segment;

    ShardSweep(final EntryTable entries) {
        this.entries = entries;
        this.g = entries.g;
        this.segment = entries.segment();
    }

    /**
     * Clears the pods of the mask from one shard, then adjusts the children counts of the deleted entries' parents.
     *
     * @param parents scratch for the deleted entries' parents, empty on return.
     */
    void sweep(final int shard, final long m0, final long m1, final long m2, final long m3,
        final LongArrayList parents) {
        sweepShard(shard, m0, m1, m2, m3, parents);
        for (int i = 0, n = parents.size(); i < n; i++) {
            entries.adjustChildren(parents.getLong(i), -1);
        }
        parents.clear();
    }

    /**
     * Clears the bits of the pods in the mask from every entry of one shard, deleting entries no pod holds any
     * more; the parents of deleted entries are added to {@code deletedParents} (their counts are adjusted by the
     * caller once the shard's lock is released).
     */
    private void sweepShard(final int shard, final long m0, final long m1, final long m2, final long m3,
        final LongArrayList deletedParents) {
        if ((m0 | m1 | m2 | m3) == 0) {
            return;
        }
        entries.locks().lock(shard);
        try {
            final long table = g.table(shard);
            for (int idx = 0; idx <= g.slotMask; idx++) {
                while (true) {
                    final long e = g.entry(table, idx);
                    if ((long) LONG.get(segment, e + ENTRY_KEY_OFFSET) == 0) {
                        break;
                    }
                    final long pods = (long) LONG.get(segment, e + ENTRY_PODS_OFFSET);
                    final boolean empty;
                    if (g.direct) {
                        // Slots 0..63 only: the other mask words are empty in a direct cell.
                        final long kept = pods & ~m0;
                        empty = kept == 0;
                        if (!empty && kept != pods) {
                            LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, kept);
                        }
                    } else if (pods < 0) {
                        final long o = g.overflowEntry(shard, (int) pods);
                        entries.overflow().clear(o, m0, m1, m2, m3);
                        empty = entries.overflow().isEmpty(o);
                    } else {
                        long kept = 0;
                        for (int i = 0, count = IndexDescriptor.inlineCount(pods); i < count; i++) {
                            final int slot = IndexDescriptor.inlineSlot(pods, i);
                            if (!inMask(slot, m0, m1, m2, m3)) {
                                kept = inlineAdd(kept, slot);
                            }
                        }
                        empty = kept == 0;
                        if (!empty && kept != pods) {
                            LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, kept);
                        }
                    }
                    if (!empty) {
                        break;
                    }
                    // The deletion may shift another entry into idx: examine idx again.
                    final long parent = entries.delete(shard, table, idx);
                    if (parent != 0) {
                        deletedParents.addLong(parent);
                    }
                }
            }
        } catch (final RuntimeException | Error ex) {
            IndexRepair.repairShard(entries, shard);
            throw ex;
        } finally {
            entries.locks().unlock(shard);
        }
    }

}
