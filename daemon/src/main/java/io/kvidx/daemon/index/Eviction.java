package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.ffm.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;

/**
 * What a full shard gives up, chosen so that routing loses least (ADR 0007):
 * <ul>
 *   <li><b>Full table:</b> evict a chain's <i>tail</i> first. Starting at the shard's clock hand, look at up to
 *   {@link #SAMPLES} occupied entries and evict the least recently stored one that has no indexed child (no block
 *   stored after it in a chain is indexed). If none of them is a tail, look further, up to {@link #MAX_SCAN}
 *   occupied entries; only if still none is, make it an <i>inner</i> eviction of the entry with the fewest indexed children (then the least recently stored): a chain's
 *   interior goes before a root that many chains share. Chains therefore shrink from their ends and a root shared
 *   by many prompts goes last:
 *   a prefix query, which needs a chain's first blocks, keeps working on what remains.</li>
 *   <li><b>Full overflow pool</b> (a block gaining its 8th holder in a cell of more than 64 pods): never evict a
 *   popular block to make room. Give a bitmap back by turning a sampled overflow entry that has dropped to at most
 *   7 holders inline again (no information lost); when there is none, the new holder is not recorded for that
 *   block and is counted as refused.</li>
 * </ul>
 *
 * <p><b>Note:</b> called with the shard's lock held, by {@link EntryTable}.
 */
final class Eviction {
    /** Occupied entries compared before a tail is taken. */
    static final int SAMPLES = 8;
    /** Occupied entries looked at, at most, to find a tail. */
    static final int MAX_SCAN = 128;
    private static final VarHandle LONG = Layouts.LONG;

    private final EntryTable table;
    private final MemorySegment segment;
    private final WriterMeta meta;
    private final ShardLocks locks;

    Eviction(final EntryTable table, final MemorySegment segment, final WriterMeta meta, final ShardLocks locks) {
        this.table = table;
        this.segment = segment;
        this.meta = meta;
        this.locks = locks;
    }

    /**
     * Evicts one entry of a full shard, never the entry of {@code keep} (the parent of the block being inserted) nor
     * that of {@code keepChild} (its child in the run being stored, inserted just before it: the inserted block's
     * children count counts it as it is set, {@link EntryTable#store}).
     *
     * @param keep      a stored key, or 0.
     * @param keepChild a stored key, or 0.
     * @return the evicted entry's parent key (0 when none): the caller lowers its children count after unlocking.
     */
    long evictOne(final int shard, final long keep, final long keepChild) {
        final IndexGeometry g = table.g;
        final long t = g.table(shard);
        final int base = shard * g.slotsPerShard;
        int hand = locks.hand(shard);
        int victim = -1;
        int victimChildren = Integer.MAX_VALUE;
        long victimStamp = Long.MAX_VALUE;
        int seen = 0;
        for (int n = 0; n <= g.slotMask && seen < MAX_SCAN && (victimChildren > 0 || seen < SAMPLES); n++) {
            final long key = (long) LONG.get(segment, g.entry(t, hand) + ENTRY_KEY_OFFSET);
            if (key != 0 && key != keep && key != keepChild) {
                seen++;
                final int children = meta.children(base + hand);
                final long stamp = meta.stamp(base + hand);
                if (children < victimChildren || (children == victimChildren && stamp < victimStamp)) {
                    victim = hand;
                    victimChildren = children;
                    victimStamp = stamp;
                }
            }
            hand = (hand + 1) & g.slotMask;
        }
        locks.hand(shard, hand);
        if (victim < 0) {
            throw new IllegalStateException("shard " + shard + " is full but holds no entry");
        }
        if (victimChildren > 0) {
            table.counters().add(shard, IndexDescriptor.SHARD_EVICTIONS_INNER_OFFSET, 1);
        }
        table.counters().add(shard, IndexDescriptor.SHARD_EVICTIONS_OFFSET, 1);
        return table.delete(shard, t, victim);
    }

    /**
     * Gives an overflow bitmap back to a shard's empty pool by demoting a sampled overflow entry of at most 7
     * holders to an inline pods word.
     *
     * @return true when a bitmap was freed.
     */
    boolean makeOverflowRoom(final int shard) {
        final IndexGeometry g = table.g;
        final long t = g.table(shard);
        int hand = locks.hand(shard);
        int seen = 0;
        for (int n = 0; n <= g.slotMask && seen < MAX_SCAN; n++) {
            final long e = g.entry(t, hand);
            hand = (hand + 1) & g.slotMask;
            if ((long) LONG.get(segment, e + ENTRY_KEY_OFFSET) == 0) {
                continue;
            }
            final long pods = (long) LONG.get(segment, e + ENTRY_PODS_OFFSET);
            if (pods >= 0) {
                continue;
            }
            seen++;
            if (table.holders(shard, pods) <= IndexDescriptor.PODS_INLINE_MAX) {
                locks.hand(shard, hand);
                table.demote(shard, e);
                return true;
            }
        }
        locks.hand(shard, hand);
        return false;
    }
}
