package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.ProtocolFaults;
import io.kvidx.client.index.Seqlock;
import io.kvidx.ffm.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.PODS_INLINE_MAX;
import static io.kvidx.client.index.IndexDescriptor.PODS_OVERFLOW_FLAG;
import static io.kvidx.client.index.IndexDescriptor.SHARD_ENTRY_COUNT_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_VERSION_OFFSET;
import static io.kvidx.daemon.index.PodsWord.inlineAdd;
import static io.kvidx.daemon.index.PodsWord.inlineIndexOf;
import static io.kvidx.daemon.index.PodsWord.inlineRemoveAt;

/**
 * The shards' open-addressing tables: stores and removes pod bits, inserts and deletes entries (backward shift
 * inside an odd shard version), moves entries to and from overflow bitmaps, keeps the writer's per-entry records
 * ({@link WriterMeta}: parent key, store stamp) and each entry's count of indexed children. Its parts:
 * {@link ShardLocks} (the writer locks, store clocks and eviction hands), {@link OverflowPool} (the overflow bitmaps
 * and their free lists), {@link ShardCounters} (the shard header counters), {@link PodsWord} (the inline pods word
 * encoding), {@link Eviction} (what a full shard gives up), {@link ShardSweep} (a gone pod's bits cleared shard by
 * shard) and {@link BatchPrefetch}.
 *
 * <p>Children: an entry's children are the indexed entries whose parent key is its key (the next block of some
 * chain). The count drives {@link Eviction}: a block whose chain continues in the index is evicted only after its
 * descendants. Counts live in the side table beside the stamps (one record, one cache line per insert) and are
 * recounted from the parent keys when the writer attaches.
 *
 * <p><b>Note:</b> thread safe through per-shard writer locks ({@link ShardLocks}, never taken by readers): a thread
 * holds at most one shard lock at a time, so a count raised or lowered in another shard than the entry stored or
 * deleted (the parent of a run's first block, of an evicted entry) is changed after that entry's lock is released.
 * A writer that throws while it holds a shard leaves it repaired ({@link IndexRepair#repairShard})
 * and even; when the repair throws too, a {@link ShardRepairException} escapes and the writer thread stops.
 */
final class EntryTable {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle INT = Layouts.INT;
    private static final int NOT_STORED = -1;
    private static final int NEED_EVICTION = -2;
    private static final int NEED_OVERFLOW = -3;
    /** store: the pod was no longer alive; nothing stored. */
    private static final int NOT_ALIVE = -4;

    final IndexGeometry g;
    private final MemorySegment segment;
    private final WriterMeta meta;
    /** Null when the writer does not prefetch. */
    private final BatchPrefetch prefetch;
    private final ShardLocks locks;
    private final OverflowPool overflow;
    private final Eviction eviction;
    private final ShardCounters counters;
    /** Test hook: run inside every deletion while the shard's version is odd (null in production). */
    Runnable deleteFault;
    /** Test hook: run before a failed change's shard repair (null in production). */
    Runnable repairFault;

    EntryTable(final IndexGeometry g, final MemorySegment segment, final WriterMeta meta, final boolean prefetch) {
        this.g = g;
        this.segment = segment;
        this.meta = meta;
        this.prefetch = prefetch ? new BatchPrefetch(g, segment, meta) : null;
        this.locks = new ShardLocks(g.shardCount);
        this.overflow = new OverflowPool(g, segment);
        this.eviction = new Eviction(this, segment, meta, locks);
        this.counters = new ShardCounters(g, segment);
    }

    MemorySegment segment() {
        return segment;
    }

    WriterMeta meta() {
        return meta;
    }

    ShardLocks locks() {
        return locks;
    }

    OverflowPool overflow() {
        return overflow;
    }

    ShardCounters counters() {
        return counters;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Stores and removes
    // ---------------------------------------------------------------------------------------------------------

    /**
     * Loads the home entries and writer records of keys about to be stored or removed one call at a time (a run
     * of one chain is prefetched by {@link #store} itself); no-op when the writer does not prefetch.
     */
    void prefetch(final long[] keys, final int offset, final int length) {
        if (prefetch != null) {
            prefetch.prefetch(keys, offset, length);
        }
    }

    /**
     * Records that pod {@code slot} holds the blocks {@code keys[offset..offset+length)}, a run of one chain: the
     * parent of the first is {@code parentKey} (0 when it starts the chain), of the others the key before it.
     *
     * <p>From the run's last block to its first: a block's count of indexed children is raised, when its child in
     * the run was inserted, under the lock of the block's own store (in chain order, the parent's shard lock once
     * more per inserted block; ADR 0016). Readers may see a later block of the run first (docs/index-layout.md,
     * "Publication protocol").
     *
     * @param alive checked under each shard's lock: the store stops when the pod is no longer alive.
     * @return keys new for this pod.
     */
    int store(final int slot, final long[] keys, final int offset, final int length, final long parentKey,
        final PodTable alive) {
        if (prefetch != null && length > 1) {
            prefetch.prefetch(keys, offset, length);
        }
        int added = 0;
        // The block after this one in the run, when it was inserted as a new entry (stored key; 0 when not): this
        // block gained an indexed child.
        long insertedChild = 0;
        for (int i = offset + length - 1; i >= offset; i--) {
            final long k = IndexDescriptor.storedKey(keys[i]);
            final long parent = i == offset ? parentKey : keys[i - 1];
            final long storedParent = parent == 0 ? 0 : IndexDescriptor.storedKey(parent);
            final long h = IndexDescriptor.spread(k);
            final int shard = g.shardOf(h);
            final int home = g.homeSlot(h);
            int result;
            while (true) {
                long evictedParent = 0;
                locks.lock(shard);
                try {
                    if (!alive.isAlive(slot)) {
                        result = NOT_ALIVE;
                        break;
                    }
                    result = storeLocked(shard, k, home, slot, storedParent);
                    if (result == NEED_EVICTION) {
                        evictedParent = eviction.evictOne(shard, storedParent, insertedChild);
                    } else if (result == NEED_OVERFLOW) {
                        result = eviction.makeOverflowRoom(shard) ? NEED_OVERFLOW
                            : refuseHolder(shard);
                    }
                    if (insertedChild != 0 && (result >= 0 || result == NOT_STORED)) {
                        addChildrenLocked(shard, k, home, +1);
                    }
                } catch (final RuntimeException | Error ex) {
                    repairAfter(shard, ex);
                    throw ex;
                } finally {
                    locks.unlock(shard);
                }
                if (evictedParent != 0) {
                    adjustChildren(evictedParent, -1);
                }
                if (result >= 0 || result == NOT_STORED) {
                    break;
                }
            }
            if (result == NOT_ALIVE) {
                // The pod went down: the rest of the run is not stored, but the child stored last has its parent.
                if (insertedChild != 0) {
                    adjustChildren(k, +1);
                }
                return added;
            }
            if (result > 0) {
                added++;
            }
            insertedChild = result == 2 ? k : 0;
        }
        if (insertedChild != 0 && parentKey != 0) {
            adjustChildren(IndexDescriptor.storedKey(parentKey), +1);
        }
        return added;
    }

    /** Raises or lowers the children count of {@code k}'s entry, if indexed, with its shard's lock held. */
    private void addChildrenLocked(final int shard, final long k, final int home, final int delta) {
        final int idx = find(g.table(shard), k, home);
        if (idx >= 0) {
            meta.addChildren(shard * g.slotsPerShard + idx, delta);
        }
    }

    /**
     * Repairs a shard after a change to it failed, with its writer lock held ({@link IndexRepair#repairShard}).
     *
     * @throws ShardRepairException when the repair fails too: the shard stays locked, the writer must stop.
     */
    private void repairAfter(final int shard, final Throwable change) {
        try {
            final Runnable fault = repairFault;
            if (fault != null) {
                fault.run();
            }
            IndexRepair.repairShard(this, shard);
        } catch (final RuntimeException | Error repairFailed) {
            throw new ShardRepairException(shard, change, repairFailed);
        }
    }

    private int refuseHolder(final int shard) {
        counters.add(shard, IndexDescriptor.SHARD_HOLDERS_REFUSED_OFFSET, 1);
        return NOT_STORED;
    }

    /**
     * @return 0 already held, 1 added to an existing entry, 2 inserted a new entry, or NEED_EVICTION / NEED_OVERFLOW.
     */
    private int storeLocked(final int shard, final long k, final int home, final int slot, final long parent) {
        final long table = g.table(shard);
        final int stampBase = shard * g.slotsPerShard;
        int idx = home;
        while (true) {
            final long e = g.entry(table, idx);
            final long ek = (long) LONG.get(segment, e + ENTRY_KEY_OFFSET);
            if (ek == k) {
                meta.stamp(stampBase + idx, locks.nextStamp(shard));
                final long pods = (long) LONG.get(segment, e + ENTRY_PODS_OFFSET);
                if (g.direct) {
                    final long bit = 1L << slot;
                    if ((pods & bit) != 0) {
                        return 0;
                    }
                    LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, pods | bit);
                    return 1;
                }
                if (pods < 0) {
                    return overflow.add(g.overflowEntry(shard, (int) pods), slot) ? 1 : 0;
                }
                if (inlineIndexOf(pods, slot) >= 0) {
                    return 0;
                }
                if (IndexDescriptor.inlineCount(pods) < PODS_INLINE_MAX) {
                    LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, inlineAdd(pods, slot));
                    return 1;
                }
                final int bitmap = overflow.alloc(shard);
                if (bitmap < 0) {
                    return NEED_OVERFLOW;
                }
                // Fill the bitmap first, then publish the overflow index in one release store.
                overflow.fill(g.overflowEntry(shard, bitmap), pods, slot);
                LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, PODS_OVERFLOW_FLAG | bitmap);
                return 1;
            }
            if (ek == 0) {
                final long countOffset = g.shardHeader(shard) + SHARD_ENTRY_COUNT_OFFSET;
                final int count = (int) INT.get(segment, countOffset);
                if (count >= g.maxCountPerShard) {
                    return NEED_EVICTION;
                }
                // Empty entries have a zero pods word: write this pod's bit or list, then publish the key.
                final long newPods = g.direct ? 1L << slot : inlineAdd(0L, slot);
                if (ProtocolFaults.OMIT_ENTRY_PODS_BEFORE_KEY) {
                    LONG.setRelease(segment, e + ENTRY_KEY_OFFSET, k);
                }
                LONG.setOpaque(segment, e + ENTRY_PODS_OFFSET, newPods);
                meta.set(stampBase + idx, parent, locks.nextStamp(shard));
                if (!ProtocolFaults.OMIT_ENTRY_PODS_BEFORE_KEY) {
                    LONG.setRelease(segment, e + ENTRY_KEY_OFFSET, k);
                }
                INT.setRelease(segment, countOffset, count + 1);
                return 2;
            }
            idx = (idx + 1) & g.slotMask;
        }
    }

    /**
     * Records that pod {@code slot} no longer holds the given blocks; entries no pod holds any more are deleted.
     *
     * @return keys the pod held and no longer holds.
     */
    int remove(final int slot, final long[] keys, final int offset, final int length) {
        if (prefetch != null && length > 1) {
            prefetch.prefetch(keys, offset, length);
        }
        int removed = 0;
        // A chain removed from its first block on deletes each parent just before its child: no count to lower.
        long lastDeleted = 0;
        for (int i = offset, end = offset + length; i < end; i++) {
            final long k = IndexDescriptor.storedKey(keys[i]);
            final long h = IndexDescriptor.spread(k);
            final int shard = g.shardOf(h);
            long r;
            locks.lock(shard);
            try {
                r = removeLocked(shard, k, g.homeSlot(h), slot);
            } catch (final RuntimeException | Error ex) {
                repairAfter(shard, ex);
                throw ex;
            } finally {
                locks.unlock(shard);
            }
            if (r == NOT_HELD) {
                continue;
            }
            removed++;
            if (r != KEPT) {
                if (r != DELETED_ROOT && r != lastDeleted) {
                    adjustChildren(r, -1);
                }
                lastDeleted = k;
            }
        }
        return removed;
    }

    /** removeLocked: the pod did not hold the key. */
    private static final long NOT_HELD = 0;
    /** removeLocked: the pod's bit was cleared and the entry stays (other pods hold it). */
    private static final long KEPT = 1;
    /** removeLocked: the entry was deleted and had no parent. */
    private static final long DELETED_ROOT = 2;

    /**
     * @return {@link #NOT_HELD}, {@link #KEPT}, or for a deleted entry its parent key ({@link #DELETED_ROOT} when
     * it had none; a parent key of 0, 1 or 2 is taken as none, a 2^-62 chance of leaving a count too high).
     */
    private long removeLocked(final int shard, final long k, final int home, final int slot) {
        final long table = g.table(shard);
        final int idx = find(table, k, home);
        if (idx < 0) {
            return 0;
        }
        final long e = g.entry(table, idx);
        final long pods = (long) LONG.get(segment, e + ENTRY_PODS_OFFSET);
        final boolean delete;
        if (g.direct) {
            final long bit = 1L << slot;
            if ((pods & bit) == 0) {
                return 0;
            }
            delete = pods == bit;
            if (!delete) {
                LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, pods & ~bit);
            }
        } else if (pods < 0) {
            final long o = g.overflowEntry(shard, (int) pods);
            if (!overflow.remove(o, slot)) {
                return 0;
            }
            delete = overflow.isEmpty(o);
        } else {
            final int at = inlineIndexOf(pods, slot);
            if (at < 0) {
                return 0;
            }
            delete = IndexDescriptor.inlineCount(pods) == 1;
            if (!delete) {
                LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, inlineRemoveAt(pods, at));
            }
        }
        if (!delete) {
            return KEPT;
        }
        return deletedParent(delete(shard, table, idx));
    }

    /** Maps a deleted entry's parent key to removeLocked's result. */
    private static long deletedParent(final long parent) {
        return parent == NOT_HELD || parent == KEPT || parent == DELETED_ROOT ? DELETED_ROOT : parent;
    }

    /**
     * Adds {@code delta} to the children count of the entry of {@code parent} (stored form), when it is indexed.
     * Takes the parent's shard lock: call it holding no other.
     */
    void adjustChildren(final long parent, final int delta) {
        final long h = IndexDescriptor.spread(parent);
        final int shard = g.shardOf(h);
        locks.lock(shard);
        try {
            addChildrenLocked(shard, parent, g.homeSlot(h), delta);
        } finally {
            locks.unlock(shard);
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Entries
    // ---------------------------------------------------------------------------------------------------------

    /** The parent key (stored form) recorded for the entry of {@code k}, 0 when it has none or is not indexed. */
    long parentOf(final long k) {
        return record(k, true);
    }

    /** The children count recorded for the entry of {@code k}, -1 when it is not indexed. */
    int childrenOf(final long k) {
        return (int) record(k, false);
    }

    /** Reads, under {@code k}'s shard lock, the parent key or children count of its writer record. */
    private long record(final long k, final boolean parent) {
        final long h = IndexDescriptor.spread(k);
        final int shard = g.shardOf(h);
        locks.lock(shard);
        try {
            final int idx = find(g.table(shard), k, g.homeSlot(h));
            if (idx < 0) {
                return parent ? 0 : -1;
            }
            return parent ? meta.parent(shard * g.slotsPerShard + idx) : meta.children(shard * g.slotsPerShard + idx);
        } finally {
            locks.unlock(shard);
        }
    }

    int find(final long table, final long k, final int home) {
        int idx = home;
        for (int n = 0; n <= g.slotMask; n++) {
            final long ek = (long) LONG.get(segment, g.entry(table, idx) + ENTRY_KEY_OFFSET);
            if (ek == k) {
                return idx;
            }
            if (ek == 0) {
                return -1;
            }
            idx = (idx + 1) & g.slotMask;
        }
        return -1;
    }

    /**
     * Backward-shift deletion of entry {@code idx}, inside an odd shard version so that readers retry.
     *
     * @return the deleted entry's parent key (0 when none).
     */
    long delete(final int shard, final long table, final int idx) {
        final long header = g.shardHeader(shard);
        final int base = shard * g.slotsPerShard;
        final boolean bump = !ProtocolFaults.OMIT_SHARD_VERSION_BUMP;
        final long odd = bump ? Seqlock.beginWrite(segment, header + SHARD_VERSION_OFFSET) : 0;
        final Runnable fault = deleteFault;
        if (fault != null) {
            fault.run();
        }
        final long freedPods = (long) LONG.get(segment, g.entry(table, idx) + ENTRY_PODS_OFFSET);
        final long parent = meta.parent(base + idx);
        int hole = idx;
        int j = idx;
        while (true) {
            j = (j + 1) & g.slotMask;
            final long ej = g.entry(table, j);
            final long kj = (long) LONG.get(segment, ej + ENTRY_KEY_OFFSET);
            if (kj == 0) {
                break;
            }
            final int home = g.homeSlot(IndexDescriptor.spread(kj));
            final boolean stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                final long eh = g.entry(table, hole);
                LONG.setOpaque(segment, eh + ENTRY_PODS_OFFSET, (long) LONG.get(segment, ej + ENTRY_PODS_OFFSET));
                LONG.setOpaque(segment, eh + ENTRY_KEY_OFFSET, kj);
                meta.move(base + j, base + hole);
                hole = j;
            }
        }
        final long eh = g.entry(table, hole);
        LONG.setOpaque(segment, eh + ENTRY_KEY_OFFSET, 0L);
        LONG.setOpaque(segment, eh + ENTRY_PODS_OFFSET, 0L);
        meta.set(base + hole, 0, 0);
        if (!g.direct && freedPods < 0) {
            overflow.free(shard, (int) freedPods & (g.overflowPerShard - 1));
        }
        final long countOffset = header + SHARD_ENTRY_COUNT_OFFSET;
        INT.setOpaque(segment, countOffset, (int) INT.get(segment, countOffset) - 1);
        if (bump) {
            Seqlock.endWrite(segment, header + SHARD_VERSION_OFFSET, odd);
        }
        return parent;
    }

    /**
     * Turns an overflow entry back into an inline pods word (its holders, at most 7, listed), inside an odd shard
     * version, and returns its bitmap to the pool: the bitmap may be reused at once, and a reader that followed the
     * old index retries because the version moved on.
     */
    void demote(final int shard, final long entry) {
        final long header = g.shardHeader(shard);
        final long pods = (long) LONG.get(segment, entry + ENTRY_PODS_OFFSET);
        final long inline = overflow.toInline(g.overflowEntry(shard, (int) pods));
        final long odd = Seqlock.beginWrite(segment, header + SHARD_VERSION_OFFSET);
        LONG.setOpaque(segment, entry + ENTRY_PODS_OFFSET, inline);
        overflow.free(shard, (int) pods & (g.overflowPerShard - 1));
        Seqlock.endWrite(segment, header + SHARD_VERSION_OFFSET, odd);
        counters.add(shard, IndexDescriptor.SHARD_OVERFLOW_DEMOTIONS_OFFSET, 1);
    }

    int holders(final int shard, final long pods) {
        if (g.direct) {
            return Long.bitCount(pods);
        }
        if (pods >= 0) {
            return IndexDescriptor.inlineCount(pods);
        }
        return overflow.count(g.overflowEntry(shard, (int) pods));
    }
}
