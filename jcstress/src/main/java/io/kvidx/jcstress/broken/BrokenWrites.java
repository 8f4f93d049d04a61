package io.kvidx.jcstress.broken;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.ffm.Layouts;
import io.kvidx.jcstress.EntryLanes;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_ENTRY_COUNT_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_HEADER_LENGTH;

/**
 * A writer step with its seqlock left out, run on the real index file through a second writable mapping
 * ({@link io.kvidx.jcstress.Cell#indexBehindWriter()}) by the writer actor, the file's only writer thread while the
 * actors run.
 *
 * <p><b>Note:</b> stateless; call it from one thread at a time per lane.
 */
public final class BrokenWrites {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle INT = Layouts.INT;

    private BrokenWrites() {
    }

    /**
     * {@code EntryTable.delete} of the lane's first key (at its home entry, held by {@code pod-a} only) without the
     * odd shard version before the moves and the even one after them: the same backward shift with the same opaque
     * stores and the same entry count, so a reader's version check sees nothing change. The writer's private side
     * table (parents, stamps) is not moved: the lane's keys have no parents and their stamps only order evictions.
     *
     * @param lane an {@link io.kvidx.jcstress.EntryShiftRace}'s lane, set up.
     */
    public static void deleteFirstNoVersionBump(final EntryLanes.Lane lane) {
        final MemorySegment s = lane.cell().indexBehindWriter();
        final IndexReader r = lane.cell().reader();
        final int slotsPerShard = r.slotsPerShard();
        final int shardBits = Integer.numberOfTrailingZeros(r.shardCount());
        final int slotBits = Integer.numberOfTrailingZeros(slotsPerShard);
        final int slotMask = slotsPerShard - 1;
        final int shard = (int) (lane.home() >>> slotBits);
        final long table = IndexDescriptor.tablesOffset(r.maxPods(), r.shardCount())
            + (long) shard * slotsPerShard * ENTRY_LENGTH;
        final int idx = (int) (lane.home() & slotMask);
        if ((long) LONG.get(s, table + (long) idx * ENTRY_LENGTH + ENTRY_KEY_OFFSET)
            != IndexDescriptor.storedKey(lane.keys()[0])) {
            throw new IllegalStateException("the lane's first key is not at its home entry");
        }
        int hole = idx;
        int j = idx;
        while (true) {
            j = (j + 1) & slotMask;
            final long ej = table + (long) j * ENTRY_LENGTH;
            final long kj = (long) LONG.get(s, ej + ENTRY_KEY_OFFSET);
            if (kj == 0) {
                break;
            }
            final int home = IndexDescriptor.homeSlot(IndexDescriptor.spread(kj), shardBits, slotBits);
            final boolean stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                final long eh = table + (long) hole * ENTRY_LENGTH;
                LONG.setOpaque(s, eh + ENTRY_PODS_OFFSET, (long) LONG.get(s, ej + ENTRY_PODS_OFFSET));
                LONG.setOpaque(s, eh + ENTRY_KEY_OFFSET, kj);
                hole = j;
            }
        }
        final long eh = table + (long) hole * ENTRY_LENGTH;
        LONG.setOpaque(s, eh + ENTRY_KEY_OFFSET, 0L);
        LONG.setOpaque(s, eh + ENTRY_PODS_OFFSET, 0L);
        final long countOffset = IndexDescriptor.shardHeadersOffset(r.maxPods()) + (long) shard * SHARD_HEADER_LENGTH
            + SHARD_ENTRY_COUNT_OFFSET;
        INT.setRelease(s, countOffset, (int) INT.get(s, countOffset) - 1);
    }
}
