package io.kvidx.bench;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;

/**
 * The memory floor of a query on this machine, measured on kvidx's own index file: the loads of a chain's home
 * entries and nothing else (no seqlock, no key compare, no search). It answers no query; it shows how much of
 * kvidx's latency any layout that places each block by hashing its key must pay before doing any work.
 *
 * <ul>
 *   <li>{@link Mode#ONE_LINE}: the home entry of the chain's last block, one cold cache line (the last block is
 *       unique to its chain; the first blocks are shared and often cached). No query that reads a block the cache
 *       does not hold can be faster than this.</li>
 *   <li>{@link Mode#CHAIN_LINES}: the home entries of all N blocks, offsets first and then the loads, exactly the
 *       reader's prefetch pass.</li>
 *   <li>{@link Mode#CHAIN_FULL_LINES}: the same pass, then every word of each home line (four keys, four pods
 *       words) folded into one value: what reading the whole line a lookup resolves from costs on top of its miss,
 *       with no compare and no search (an experiment row).</li>
 * </ul>
 *
 * <p><b>Note:</b> not thread safe (one querying thread); maps the index file read-only, as a second reader would.
 */
public final class FloorStore implements QueryStore {
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();

    /** Which loads one "query" makes. */
    public enum Mode {
        /** The last block's home entry. */
        ONE_LINE("floor_1line"),
        /** Every block's home entry, independent loads. */
        CHAIN_LINES("floor_lines"),
        /** {@link #CHAIN_LINES}, then all eight words of every home line. */
        CHAIN_FULL_LINES("floor_full_lines");

        private final String label;

        Mode(final String label) {
            this.label = label;
        }
    }

    private final MappedRegion region;
    private final MemorySegment segment;
    private final Mode mode;
    private final long tablesOffset;
    private final int shardBits;
    private final int slotBits;
    private final long[] offsets;

    private FloorStore(final MappedRegion region, final Mode mode, final IndexReader reader) {
        this.region = region;
        this.segment = region.segment();
        this.mode = mode;
        this.tablesOffset = IndexDescriptor.tablesOffset(reader.maxPods(), reader.shardCount());
        this.shardBits = Integer.numberOfTrailingZeros(reader.shardCount());
        this.slotBits = Integer.numberOfTrailingZeros(reader.slotsPerShard());
        this.offsets = new long[reader.maxChainLength()];
    }

    /**
     * Maps a reader's index file read-only and computes home entries from its geometry.
     *
     * @param reader an attached reader (for the path and geometry).
     * @param mode   which loads a query makes.
     * @return the store; close it to unmap.
     */
    public static FloorStore of(final IndexReader reader, final Mode mode) {
        try {
            return new FloorStore(MappedRegion.mapReadOnly(reader.path(), Files.size(reader.path())), mode, reader);
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    @Override
    public String name() {
        return mode.label;
    }

    @Override
    public int query(final long[] chain, final int n) {
        final MemorySegment s = segment;
        if (mode == Mode.ONE_LINE) {
            return (int) (long) PLAIN.get(s, home(chain[n - 1])) & 1;
        }
        final long[] o = offsets;
        for (int i = 0; i < n; i++) {
            o[i] = home(chain[i]);
        }
        long sink = 0;
        for (int i = 0; i < n; i++) {
            sink += (long) PLAIN.get(s, o[i]);
        }
        if (mode == Mode.CHAIN_FULL_LINES) {
            for (int i = 0; i < n; i++) {
                // A home entry is the first of its line (layout 3.0).
                final long line = o[i];
                long x = 0;
                for (int off = 0; off < Layouts.CACHE_LINE_LENGTH; off += Long.BYTES) {
                    x ^= (long) PLAIN.get(s, line + off);
                }
                sink += x;
            }
        }
        return (int) sink & 1;
    }

    private long home(final long key) {
        final long h = IndexDescriptor.spread(IndexDescriptor.storedKey(key));
        return tablesOffset + (IndexDescriptor.homeIndex(h, shardBits, slotBits) << IndexDescriptor.ENTRY_LENGTH_SHIFT);
    }

    /**
     * @throws UnsupportedOperationException always: a floor row loads memory, it answers no query.
     */
    @Override
    public int depthOf(final int pod) {
        throw new UnsupportedOperationException(mode.label + " measures loads only; it answers no query");
    }

    @Override
    public long footprintBytes() {
        return -1;
    }

    @Override
    public void close() {
        region.close();
    }
}
