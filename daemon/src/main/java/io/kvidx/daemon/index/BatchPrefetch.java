package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Loads the home entry and the writer record of every key of a store or remove batch before the batch is applied
 * (enabled by {@link IndexWriterContext#prefetch(boolean)}): independent loads in a tight loop, so their cache misses
 * overlap instead of being paid one store at a time.
 *
 * <p><b>Note:</b> thread safe: the writer threads of {@link IndexWriter} share one instance. It takes no lock and
 * writes nothing of the index; its loads are plain, their values only summed and dropped.
 */
final class BatchPrefetch {
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();
    /** A sum the prefetch loads practically never produce; only then is it stored. */
    private static final long PREFETCH_NEVER = 0x6b76_6964_7850_6643L;

    private final IndexGeometry g;
    private final MemorySegment segment;
    private final WriterMeta meta;
    /** Makes the prefetch loads observable to the JIT. */
    @SuppressWarnings("unused")
    private long prefetchSink;

    BatchPrefetch(final IndexGeometry g, final MemorySegment segment, final WriterMeta meta) {
        this.g = g;
        this.segment = segment;
        this.meta = meta;
    }

    /**
     * Loads the home entries and writer records of {@code keys[offset..offset+length)}.
     */
    void prefetch(final long[] keys, final int offset, final int length) {
        long sink = 0;
        for (int i = offset, end = offset + length; i < end; i++) {
            final long h = IndexDescriptor.spread(IndexDescriptor.storedKey(keys[i]));
            final int index = (int) IndexDescriptor.homeIndex(h, g.shardBits, g.slotBits);
            sink += (long) PLAIN.get(segment, g.tablesOffset + ((long) index << IndexDescriptor.ENTRY_LENGTH_SHIFT))
                + meta.touch(index);
        }
        // Consume the loads so the JIT keeps them, without a store every call: several writer threads share this
        // object, and writing one field on each batch would bounce its cache line between them.
        if (sink == PREFETCH_NEVER) {
            prefetchSink = sink;
        }
    }
}
