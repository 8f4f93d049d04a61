package io.kvidx.daemon.index;

import io.kvidx.ffm.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

import static io.kvidx.client.index.IndexDescriptor.SHARD_ENTRY_COUNT_OFFSET;

/**
 * The counters in the shards' headers (docs/index-layout.md, "Shard headers"): occupied entries, evictions, evictions
 * of inner blocks, refused holders and overflow demotions, added to by the writer thread that holds the shard's lock
 * and summed over the shards for the writer's statistics.
 *
 * <p><b>Note:</b> a shard's counters are written only with its lock held ({@link ShardLocks}); sums read them with
 * acquire loads from any thread.
 */
final class ShardCounters {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle INT = Layouts.INT;

    private final IndexGeometry g;
    private final MemorySegment segment;

    ShardCounters(final IndexGeometry g, final MemorySegment segment) {
        this.g = g;
        this.segment = segment;
    }

    /** Adds to a 64-bit counter of a shard header (release store), the shard's lock held. */
    void add(final int shard, final int fieldOffset, final long delta) {
        final long offset = g.shardHeader(shard) + fieldOffset;
        LONG.setRelease(segment, offset, (long) LONG.get(segment, offset) + delta);
    }

    /** The sum of a 64-bit counter over the shards. */
    long sum(final int fieldOffset) {
        long n = 0;
        for (int shard = 0; shard < g.shardCount; shard++) {
            n += (long) LONG.getAcquire(segment, g.shardHeader(shard) + fieldOffset);
        }
        return n;
    }

    /** The occupied entries of every shard. */
    long entryCount() {
        long n = 0;
        for (int shard = 0; shard < g.shardCount; shard++) {
            n += (int) INT.getAcquire(segment, g.shardHeader(shard) + SHARD_ENTRY_COUNT_OFFSET);
        }
        return n;
    }
}
