package io.kvidx.daemon.index;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The writer's per-shard locks, and the per-shard state they guard: the store clock (the last stamp given to an
 * entry of the shard, {@link WriterMeta}) and the eviction hand (the slot where {@link Eviction} looks next).
 * Heap only: readers never take a lock, they retry on the shard's seqlock version.
 *
 * <p>Layout: one stride of 16 longs (128 bytes) per shard in each array, so that shards changed by different writer
 * threads share no cache line:
 * <pre>
 *   locks, at shard * 16:  [0] 0 free, 1 held  [1 .. 15] padding
 *   state, at shard * 16:  [0] store clock     [1] eviction hand  [2 .. 15] padding
 * </pre>
 *
 * <p><b>Note:</b> any writer thread of {@link IndexWriter} takes a lock, holding at most one at a time; a shard's
 * clock and hand are read and written only by the thread that holds its lock, except that
 * {@link IndexRepair#attach} sets the clocks before any writer thread starts.
 */
final class ShardLocks {
    /** Longs per shard in each array. */
    private static final int STRIDE = 16;

    private final AtomicLongArray locks;
    private final long[] state;

    ShardLocks(final int shardCount) {
        this.locks = new AtomicLongArray(shardCount * STRIDE);
        this.state = new long[shardCount * STRIDE];
    }

    void lock(final int shard) {
        final int i = shard * STRIDE;
        while (!locks.compareAndSet(i, 0, 1)) {
            Thread.onSpinWait();
        }
    }

    void unlock(final int shard) {
        locks.setRelease(shard * STRIDE, 0);
    }

    /**
     * @return the shard's next store stamp: its clock, advanced by one.
     */
    long nextStamp(final int shard) {
        return ++state[shard * STRIDE];
    }

    void clock(final int shard, final long value) {
        state[shard * STRIDE] = value;
    }

    int hand(final int shard) {
        return (int) state[shard * STRIDE + 1];
    }

    void hand(final int shard, final int value) {
        state[shard * STRIDE + 1] = value;
    }
}
