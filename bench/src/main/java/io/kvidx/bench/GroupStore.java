package io.kvidx.bench;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.ffm.MappedRegion;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * An experiment row (issue 14, ADR 0010): what a query costs when one entry settles four depths. Beside kvidx's
 * own index file it builds, from that index, a table of <em>group entries</em>: one for every chain prefix whose
 * length is a multiple of four and whose last block some pod holds, keyed by that last block and holding the pods
 * words of the group's four blocks. It is the reader's side of a multi-depth layout, measured before anyone writes
 * the writer: no writer keeps the table current, so it stays what the index was when it was built.
 *
 * <pre>
 *   group line (64 bytes, one entry per line, linear probing by line; 2^k lines, load &lt;= 1/4)
 *   0       8       16      24      32      40            64
 *   +-------+-------+-------+-------+-------+-------------+
 *   | key   | pods  | pods  | pods  | pods  | (unused)    |   key: stored form of block 4g+3's key
 *   |       | 4g    | 4g+1  | 4g+2  | 4g+3  |             |   pods: 64-bit bitmaps (a direct cell)
 *   +-------+-------+-------+-------+-------+-------------+
 *   before the lines: 1,024 seqlock version words, one per 64-byte line, read around each group lookup as a
 *   reader of a shared table must (never written here: no writer).
 * </pre>
 *
 * <p>A query looks up the groups of its chain in order; at the first group with no entry (no pod holds its last
 * block), the pods still held are resolved block by block through kvidx's own lookups. Modes:
 * <ul>
 *   <li>{@link Mode#GROUPS}: the chain's group lines are loaded first (8 for 32 blocks); the last group's blocks
 *   are then looked up cold;</li>
 *   <li>{@link Mode#GROUPS_AND_LINES}: the group lines and the home lines of every other block, so that the last
 *   group's lookups find their lines in cache (32 lines, as the floor);</li>
 *   <li>{@link Mode#BOUND}: the loads of {@link Mode#GROUPS_AND_LINES} and the group lookups, but no result and no
 *   last group: a lower bound for any reader of such a layout. It answers no query.</li>
 * </ul>
 *
 * <p><b>Note:</b> not thread safe (one querying thread); direct cells (at most 64 pods) only; the table is a
 * private file beside the index, deleted on {@link #close()}.
 */
public final class GroupStore implements QueryStore {
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();
    private static final int GROUP = 4;
    private static final int LINE = 64;
    private static final int LINE_SHIFT = 6;
    private static final int VERSION_BITS = 10;
    private static final long VERSIONS_LENGTH = (1L << VERSION_BITS) * LINE;
    private static final int MIN_LINE_BITS = 10;

    /** Which loads and work one query makes. */
    public enum Mode {
        /** Group lines only, then the last group's blocks cold. */
        GROUPS("group4"),
        /** Group lines and every other block's home line. */
        GROUPS_AND_LINES("group4_pf"),
        /** The loads of {@link #GROUPS_AND_LINES} and the group lookups only. */
        BOUND("group4_bound");

        private final String label;

        Mode(final String label) {
            this.label = label;
        }
    }

    private final Mode mode;
    private final KvidxStore kvidx;
    private final IndexReader reader;
    private final MappedRegion groups;
    private final MemorySegment s;
    private final MappedRegion blocks;
    private final MemorySegment bs;
    private final int lineBits;
    private final long lineMask;
    private final long blockTables;
    private final int shardBits;
    private final int slotBits;
    private final long pods;
    private final long[] groupOffsets;
    private final long[] blockOffsets;
    private final long[] words = new long[IndexDescriptor.POD_WORDS];
    private final int[] slots = new int[IndexDescriptor.DIRECT_MAX_PODS];
    private final int[] depthBySlot = new int[IndexDescriptor.DIRECT_MAX_PODS];
    private int count;
    private long sink;

    private GroupStore(final Mode mode, final KvidxStore kvidx, final Workload w, final MappedRegion groups,
        final int lineBits) throws IOException {
        this.mode = mode;
        this.kvidx = kvidx;
        this.reader = kvidx.reader();
        this.groups = groups;
        this.s = groups.segment();
        this.lineBits = lineBits;
        this.lineMask = (1L << lineBits) - 1;
        this.blocks = MappedRegion.mapReadOnly(reader.path(), Files.size(reader.path()));
        this.bs = blocks.segment();
        this.blockTables = IndexDescriptor.tablesOffset(reader.maxPods(), reader.shardCount());
        this.shardBits = Integer.numberOfTrailingZeros(reader.shardCount());
        this.slotBits = Integer.numberOfTrailingZeros(reader.slotsPerShard());
        this.groupOffsets = new long[w.chainLength() / GROUP];
        this.blockOffsets = new long[w.chainLength()];
        long all = 0;
        for (int p = 0; p < w.pods(); p++) {
            all |= 1L << kvidx.slotOf(p);
        }
        this.pods = all;
    }

    /**
     * Builds the group table of a loaded kvidx store's index, in a private file beside it.
     *
     * @param mode  which loads and work a query makes.
     * @param kvidx a loaded store of a direct cell (at most 64 pods).
     * @param w     the workload it was loaded with (its chains name the groups).
     * @return the store; close it to delete the table.
     */
    public static GroupStore build(final Mode mode, final KvidxStore kvidx, final Workload w) {
        if (!IndexDescriptor.isDirect(kvidx.reader().maxPods())) {
            throw new IllegalArgumentException("group entries are built for direct cells (at most "
                + IndexDescriptor.DIRECT_MAX_PODS + " pods), not " + kvidx.reader().maxPods());
        }
        // One group per four blocks at most; four lines per group keep the load at or below 1/4.
        final int lineBits = Math.max(MIN_LINE_BITS, 64 - Long.numberOfLeadingZeros(Math.max(1, w.blocks() - 1)));
        final Path file = kvidx.dir().resolve("groups-" + mode.label);
        try {
            final MappedRegion region = MappedRegion.createPrivate(file, VERSIONS_LENGTH + (LINE << lineBits));
            try {
                final GroupStore g = new GroupStore(mode, kvidx, w, region, lineBits);
                g.fill(w);
                return g;
            } catch (final IOException | RuntimeException ex) {
                region.close();
                Files.deleteIfExists(file);
                throw ex;
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private void fill(final Workload w) {
        final long[] out = new long[IndexDescriptor.POD_WORDS];
        for (int c = 0; c < w.chainCount(); c++) {
            final long[] chain = w.chain(c);
            for (int first = 0; first + GROUP <= chain.length; first += GROUP) {
                if (!reader.lookup(chain[first + GROUP - 1], out)) {
                    break;
                }
                final long key = IndexDescriptor.storedKey(chain[first + GROUP - 1]);
                long line = home(key);
                while (true) {
                    final long k = (long) PLAIN.get(s, line);
                    if (k == key) {
                        break;
                    }
                    if (k == 0) {
                        for (int j = 0; j < GROUP; j++) {
                            reader.lookup(chain[first + j], out);
                            PLAIN.set(s, line + Long.BYTES * (1L + j), out[0]);
                        }
                        PLAIN.set(s, line, key);
                        break;
                    }
                    line = next(line);
                }
            }
        }
    }

    private long home(final long storedKey) {
        return VERSIONS_LENGTH + ((IndexDescriptor.spread(storedKey) >>> (64 - lineBits)) << LINE_SHIFT);
    }

    private long next(final long line) {
        return VERSIONS_LENGTH + ((((line - VERSIONS_LENGTH) >>> LINE_SHIFT) + 1) & lineMask) * LINE;
    }

    private long blockHome(final long key) {
        final long h = IndexDescriptor.spread(IndexDescriptor.storedKey(key));
        return blockTables + (IndexDescriptor.homeIndex(h, shardBits, slotBits) << IndexDescriptor.ENTRY_LENGTH_SHIFT);
    }

    @Override
    public String name() {
        return mode.label;
    }

    @Override
    public int query(final long[] chain, final int n) {
        for (int i = 0; i < count; i++) {
            depthBySlot[slots[i]] = 0;
        }
        count = 0;
        final int groupCount = n / GROUP;
        final long[] go = groupOffsets;
        for (int g = 0; g < groupCount; g++) {
            go[g] = home(IndexDescriptor.storedKey(chain[g * GROUP + GROUP - 1]));
        }
        long loaded = 0;
        if (mode == Mode.GROUPS) {
            for (int g = 0; g < groupCount; g++) {
                loaded += (long) PLAIN.get(s, go[g]);
            }
        } else {
            final long[] bo = blockOffsets;
            int m = 0;
            for (int i = 0; i < n; i++) {
                if (i % GROUP != GROUP - 1) {
                    bo[m++] = blockHome(chain[i]);
                }
            }
            for (int g = 0; g < groupCount; g++) {
                loaded += (long) PLAIN.get(s, go[g]);
            }
            for (int i = 0; i < m; i++) {
                loaded += (long) PLAIN.get(bs, bo[i]);
            }
        }
        final boolean answer = mode != Mode.BOUND;
        long held = pods;
        int g = 0;
        for (; g < groupCount && held != 0; g++) {
            if (!lookupGroup(IndexDescriptor.storedKey(chain[g * GROUP + GROUP - 1]), go[g])) {
                break;
            }
            for (int j = 0; j < GROUP; j++) {
                final long left = held & ~words[j];
                if (!answer) {
                    loaded += left;
                } else if (left != 0) {
                    add(left, g * GROUP + j);
                }
                held &= words[j];
            }
        }
        sink += loaded;
        if (!answer) {
            return (int) (held & 1);
        }
        int depth = g * GROUP;
        while (depth < n && held != 0) {
            reader.lookup(chain[depth], words);
            final long left = held & ~words[0];
            if (left != 0) {
                add(left, depth);
            }
            held &= words[0];
            depth++;
        }
        if (held != 0) {
            add(held, depth);
        }
        int max = 0;
        for (int i = 0; i < count; i++) {
            max = Math.max(max, depthBySlot[slots[i]]);
        }
        return max;
    }

    /** The group entry of a stored key into {@link #words}, under the version word of its home line. */
    private boolean lookupGroup(final long key, final long home) {
        final long version = ((home - VERSIONS_LENGTH) >>> LINE_SHIFT & ((1L << VERSION_BITS) - 1)) << LINE_SHIFT;
        while (true) {
            final long v1 = (long) PLAIN.get(s, version);
            VarHandle.acquireFence();
            boolean found = false;
            long line = home;
            for (long n = 0; n <= lineMask; n++) {
                final long k = (long) PLAIN.get(s, line);
                if (k == key) {
                    for (int j = 0; j < GROUP; j++) {
                        words[j] = (long) PLAIN.get(s, line + Long.BYTES * (1L + j));
                    }
                    found = true;
                    break;
                }
                if (k == 0) {
                    break;
                }
                line = next(line);
            }
            VarHandle.loadLoadFence();
            if ((v1 & 1) == 0 && (long) PLAIN.get(s, version) == v1) {
                return found;
            }
            Thread.onSpinWait();
        }
    }

    private void add(final long word, final int depth) {
        if (depth == 0) {
            return;
        }
        long x = word;
        while (x != 0) {
            final int slot = Long.numberOfTrailingZeros(x);
            x &= x - 1;
            slots[count++] = slot;
            depthBySlot[slot] = depth;
        }
    }

    /**
     * @throws UnsupportedOperationException in {@link Mode#BOUND}, which answers no query.
     */
    @Override
    public int depthOf(final int pod) {
        if (mode == Mode.BOUND) {
            throw new UnsupportedOperationException(mode.label + " times the loads and group lookups only");
        }
        return depthBySlot[kvidx.slotOf(pod)];
    }

    /**
     * @return a value derived from every load, so the JIT cannot drop them.
     */
    public long sink() {
        return sink;
    }

    @Override
    public long footprintBytes() {
        return s.byteSize();
    }

    @Override
    public void close() {
        groups.close();
        blocks.close();
        try {
            Files.deleteIfExists(groups.path());
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}
