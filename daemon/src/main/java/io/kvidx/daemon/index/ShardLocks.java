package io.kvidx.daemon.index;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The writer's per-shard locks, and the per-shard state they guard: the store clock (the last stamp given to an
 * entry of the shard, {@link WriterMeta}) and the eviction hand (the slot where {@link Eviction} looks next).
 * Heap only: readers never take a lock, they retry on the shard's seqlock version.
 *
 * <p>Layout: one stride of 16 longs (128 bytes) per shard, the lock beside the state it guards, so that taking a
 * shard's lock brings its clock and hand into the cache with it (one line moves between writer threads, not two), and
 * shards changed by different writer threads share no cache line:
 * <pre>
 *   at shard * 16:  [0] lock: 0 free, 1 held  [1] store clock  [2] eviction hand  [3 .. 15] padding
 * </pre>
 *
 * <p><b>Note:</b> any writer thread of {@link IndexWriter} takes a lock, holding at most one at a time; a shard's
 * clock and hand are read and written only by the thread that holds its lock (the lock's acquire and release order
 * them between threads), except that {@link IndexRepair#attach} sets the clocks before any writer thread starts.
 */
final class ShardLocks {
    /** Longs per shard. */
    private static final int STRIDE = 16;
    private static final int CLOCK = 1;
    private static final int HAND = 2;
    private static final VarHandle LOCK = MethodHandles.arrayElementVarHandle(long[].class);

    private final long[] shards;

    ShardLocks(final int shardCount) {
        this.shards = new long[shardCount * STRIDE];
    }

    void lock(final int shard) {
        final int i = shard * STRIDE;
        while (!LOCK.compareAndSet(shards, i, 0L, 1L)) {
            Thread.onSpinWait();
        }
    }

    void unlock(final int shard) {
        LOCK.setRelease(shards, shard * STRIDE, 0L);
    }

    /**
     * @return the shard's next store stamp: its clock, advanced by one.
     */
    long nextStamp(final int shard) {
        return ++shards[shard * STRIDE + CLOCK];
    }

    void clock(final int shard, final long value) {
        shards[shard * STRIDE + CLOCK] = value;
    }

    int hand(final int shard) {
        return (int) shards[shard * STRIDE + HAND];
    }

    void hand(final int shard, final int value) {
        shards[shard * STRIDE + HAND] = value;
    }
}
