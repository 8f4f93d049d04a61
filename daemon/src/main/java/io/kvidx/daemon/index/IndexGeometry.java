package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;

/**
 * The offsets and masks of one index file, derived once from its geometry (shards, slots per shard, max pods) by
 * {@link IndexDescriptor}; shared by the writer's parts so that none computes an offset by itself.
 *
 * <p><b>Note:</b> immutable.
 */
final class IndexGeometry {
    final int shardCount;
    final int slotsPerShard;
    final int shardBits;
    final int slotBits;
    final int slotMask;
    final int maxPods;
    final int maxCountPerShard;
    final long shardHeadersOffset;
    final long tablesOffset;
    final long shardTableLength;
    final long overflowOffset;
    final int overflowPerShard;
    /** Pods words are plain 64-bit bitmaps (a cell of at most 64 pods): no inline lists, no overflow bitmaps. */
    final boolean direct;
    final long fileLength;

    IndexGeometry(final int shardCount, final int slotsPerShard, final int maxPods, final double maxLoadFactor) {
        this.shardCount = shardCount;
        this.slotsPerShard = slotsPerShard;
        this.shardBits = Integer.numberOfTrailingZeros(shardCount);
        this.slotBits = Integer.numberOfTrailingZeros(slotsPerShard);
        this.slotMask = slotsPerShard - 1;
        this.maxPods = maxPods;
        this.maxCountPerShard = Math.max(1, Math.min(slotsPerShard - 1, (int) (slotsPerShard * maxLoadFactor)));
        this.shardHeadersOffset = IndexDescriptor.shardHeadersOffset(maxPods);
        this.tablesOffset = IndexDescriptor.tablesOffset(maxPods, shardCount);
        this.shardTableLength = (long) slotsPerShard * IndexDescriptor.ENTRY_LENGTH;
        this.overflowOffset = IndexDescriptor.overflowOffset(maxPods, shardCount, slotsPerShard);
        this.overflowPerShard = IndexDescriptor.overflowPerShard(maxPods, slotsPerShard);
        this.direct = IndexDescriptor.isDirect(maxPods);
        this.fileLength = IndexDescriptor.fileLength(maxPods, shardCount, slotsPerShard);
    }

    long shardHeader(final int shard) {
        return shardHeadersOffset + (long) shard * IndexDescriptor.SHARD_HEADER_LENGTH;
    }

    long table(final int shard) {
        return tablesOffset + shard * shardTableLength;
    }

    long entry(final long table, final int idx) {
        return table + ((long) idx << IndexDescriptor.ENTRY_LENGTH_SHIFT);
    }

    long overflowEntry(final int shard, final int index) {
        return overflowOffset + ((long) shard * overflowPerShard + (index & (overflowPerShard - 1)))
            * IndexDescriptor.OVERFLOW_LENGTH;
    }

    int shardOf(final long spread) {
        return (int) (spread >>> (64 - shardBits));
    }

    int homeSlot(final long spread) {
        return IndexDescriptor.homeSlot(spread, shardBits, slotBits);
    }

    /** Total table slots over all shards. */
    int totalSlots() {
        return shardCount * slotsPerShard;
    }
}
