package io.kvidx.bench;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.PosixNative;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * EXPERIMENT, not product code: a second read-only reader of kvidx's index file that runs the same seqlock lookup
 * and binary search as {@code IndexReader.query}, but first reads the home entry of every key of the chain with
 * independent loads ("touch first"). The loads do not depend on each other, so the CPU overlaps their cache
 * misses; the binary search then finds its entries in cache. It can also read a private anonymous copy of the
 * table, on 4 KiB or on transparent huge pages, to separate TLB misses (page walks, costly under a hypervisor) from
 * cache misses. It answers "how much of the query is memory latency, and what would recover it?" for the lead's
 * reader (docs/perf.md).
 *
 * <p>Reads the layout through {@link IndexDescriptor} only; never writes the mapping.
 *
 * <p><b>Note:</b> one querying thread per instance.
 */
public final class PrefetchExperimentStore implements QueryStore {
    private static final VarHandle LONG = Layouts.LONG;
    private static final int FRAME = 6;
    private static final long HUGE_PAGE = 2L << 20;
    private static final int MADV_COLLAPSE = 25;

    private final MappedRegion region;
    private final MemorySegment segment;
    private final boolean touchFirst;
    private final boolean firstKeyFirst;
    private long probes;
    private long queries;
    private final Memory memory;
    private final Arena arena;
    private final String hugeAdvice;
    private final int shardBits;
    private final int slotBits;
    private final int slotMask;
    private final long shardHeadersOffset;
    private final long tablesOffset;
    private final long shardTableLength;
    private final long[] words = new long[4];
    private final long[] stack = new long[FRAME * 64];
    private final DepthResult result;
    private long touchSink;

    /**
     * Where the experiment's copy of the index lives.
     */
    public enum Memory {
        /** The writer's tmpfs file, mapped read-only (what a router does). */
        FILE,
        /** A private anonymous copy on 4 KiB pages (isolates file vs anonymous memory). */
        ANON_4K,
        /**
         * A private anonymous copy with MADV_HUGEPAGE, then MADV_COLLAPSE (Linux 6.1+) to turn the already-touched
         * 4 KiB pages into 2 MiB transparent huge pages now rather than when khugepaged gets to them.
         */
        ANON_HUGE,
        /** The tmpfs file mapping itself after MADV_COLLAPSE (changes the file's pages for every mapper). */
        FILE_HUGE
    }

    /**
     * @param kvidx      the loaded kvidx store whose file to read (mapped, or copied once).
     * @param pods       pods in the workload.
     * @param touchFirst true to touch every key's home entry before the search; false to reproduce the reader.
     * @param memory     where the table is read from.
     * @param firstKeyFirst true to probe the chain's first key before the binary search, so that pods holding
     *                      nothing of the chain (most of them) leave after one probe instead of a descent to 0.
     */
    public PrefetchExperimentStore(final KvidxStore kvidx, final int pods, final boolean touchFirst,
        final Memory memory, final boolean firstKeyFirst) {
        try {
            final Path file = kvidx.reader().path();
            this.region = MappedRegion.mapReadOnly(file, Files.size(file));
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
        this.memory = memory;
        if (memory == Memory.FILE || memory == Memory.FILE_HUGE) {
            this.arena = null;
            this.segment = region.segment();
            this.hugeAdvice = memory == Memory.FILE_HUGE
                ? "collapse=" + PosixNative.madvise(segment, MADV_COLLAPSE) : "none";
        } else {
            this.arena = Arena.ofShared();
            final MemorySegment copy = arena.allocate(region.segment().byteSize(), HUGE_PAGE);
            MemorySegment.copy(region.segment(), 0, copy, 0, copy.byteSize());
            this.hugeAdvice = memory == Memory.ANON_HUGE
                ? "hugepage=" + PosixNative.madvise(copy, PosixNative.MADV_HUGEPAGE)
                + " collapse=" + PosixNative.madvise(copy, MADV_COLLAPSE) : "none";
            this.segment = copy;
        }
        this.touchFirst = touchFirst;
        this.firstKeyFirst = firstKeyFirst;
        final int shards = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.SHARD_COUNT_OFFSET);
        final int slots = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.SLOTS_PER_SHARD_OFFSET);
        final int maxPods = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_PODS_OFFSET);
        this.shardBits = Integer.numberOfTrailingZeros(shards);
        this.slotBits = Integer.numberOfTrailingZeros(slots);
        this.slotMask = slots - 1;
        this.shardHeadersOffset = IndexDescriptor.shardHeadersOffset(maxPods);
        this.tablesOffset = IndexDescriptor.tablesOffset(maxPods, shards);
        this.shardTableLength = (long) slots * IndexDescriptor.ENTRY_LENGTH;
        this.result = new DepthResult(pods);
    }

    private long homeEntry(final long storedKey) {
        final long h = IndexDescriptor.spread(storedKey);
        final int shard = (int) (h >>> (64 - shardBits));
        final int home = (int) ((h << shardBits) >>> (64 - slotBits));
        return tablesOffset + shard * shardTableLength + ((long) home << 6);
    }

    private void lookup(final long key, final long[] out) {
        final long k = IndexDescriptor.storedKey(key);
        final long h = IndexDescriptor.spread(k);
        final int shard = (int) (h >>> (64 - shardBits));
        final int home = (int) ((h << shardBits) >>> (64 - slotBits));
        final long versionOffset = shardHeadersOffset + (long) shard * IndexDescriptor.SHARD_HEADER_LENGTH
            + IndexDescriptor.SHARD_VERSION_OFFSET;
        final long table = tablesOffset + shard * shardTableLength;
        final MemorySegment s = segment;
        while (true) {
            final long v1 = (long) LONG.getAcquire(s, versionOffset);
            if ((v1 & 1) == 0) {
                long w0 = 0;
                long w1 = 0;
                long w2 = 0;
                long w3 = 0;
                int idx = home;
                for (int n = 0; n <= slotMask; n++) {
                    final long e = table + ((long) idx << 6);
                    final long ek = (long) LONG.getAcquire(s, e + IndexDescriptor.ENTRY_KEY_OFFSET);
                    if (ek == k) {
                        w0 = (long) LONG.getOpaque(s, e + IndexDescriptor.ENTRY_PODS_OFFSET);
                        w1 = (long) LONG.getOpaque(s, e + IndexDescriptor.ENTRY_PODS_OFFSET + 8);
                        w2 = (long) LONG.getOpaque(s, e + IndexDescriptor.ENTRY_PODS_OFFSET + 16);
                        w3 = (long) LONG.getOpaque(s, e + IndexDescriptor.ENTRY_PODS_OFFSET + 24);
                        break;
                    }
                    if (ek == 0) {
                        break;
                    }
                    idx = (idx + 1) & slotMask;
                }
                VarHandle.loadLoadFence();
                if ((long) LONG.getOpaque(s, versionOffset) == v1) {
                    out[0] = w0;
                    out[1] = w1;
                    out[2] = w2;
                    out[3] = w3;
                    return;
                }
            }
            Thread.onSpinWait();
        }
    }

    @Override
    public String name() {
        final String where = switch (memory) {
            case FILE -> "exp_file";
            case ANON_4K -> "exp_anon4k";
            case ANON_HUGE -> "exp_huge";
            case FILE_HUGE -> "exp_file_huge";
        };
        return where + (touchFirst ? "_touch" : "") + (firstKeyFirst ? "_k0" : "");
    }

    @Override
    public int query(final long[] chain) {
        final DepthResult r = result;
        r.reset();
        final int length = chain.length;
        if (touchFirst) {
            // Independent plain loads: the CPU keeps many of these misses in flight at once.
            final MemorySegment s = segment;
            long sum = 0;
            for (int i = 0; i < length; i++) {
                sum += s.get(ValueLayout.JAVA_LONG, homeEntry(IndexDescriptor.storedKey(chain[i])));
            }
            touchSink += sum;
        }
        final long[] st = stack;
        final long[] w = words;
        queries++;
        long a0 = (long) LONG.getAcquire(segment, (long) IndexDescriptor.ALIVE_BITMAP_OFFSET);
        long a1 = (long) LONG.getAcquire(segment, (long) IndexDescriptor.ALIVE_BITMAP_OFFSET + 8);
        long a2 = (long) LONG.getAcquire(segment, (long) IndexDescriptor.ALIVE_BITMAP_OFFSET + 16);
        long a3 = (long) LONG.getAcquire(segment, (long) IndexDescriptor.ALIVE_BITMAP_OFFSET + 24);
        int lo0 = 0;
        if (firstKeyFirst && length > 0) {
            // Pods without block 0 have depth 0 (nothing to record); the rest have depth in [1, length].
            lookup(chain[0], w);
            probes++;
            a0 &= w[0];
            a1 &= w[1];
            a2 &= w[2];
            a3 &= w[3];
            lo0 = 1;
        }
        int top = 0;
        if ((a0 | a1 | a2 | a3) != 0) {
            push(st, top++, lo0, length, a0, a1, a2, a3);
        }
        int max = 0;
        while (top > 0) {
            final int base = --top * FRAME;
            final int lo = (int) st[base];
            final int hi = (int) st[base + 1];
            final long f0 = st[base + 2];
            final long f1 = st[base + 3];
            final long f2 = st[base + 4];
            final long f3 = st[base + 5];
            if (lo == hi) {
                r.addAll(f0, f1, f2, f3, lo);
                max = Math.max(max, lo);
                continue;
            }
            final int mid = (lo + hi) >>> 1;
            lookup(chain[mid], w);
            probes++;
            final long l0 = f0 & ~w[0];
            final long l1 = f1 & ~w[1];
            final long l2 = f2 & ~w[2];
            final long l3 = f3 & ~w[3];
            if ((l0 | l1 | l2 | l3) != 0) {
                push(st, top++, lo, mid, l0, l1, l2, l3);
            }
            final long h0 = f0 & w[0];
            final long h1 = f1 & w[1];
            final long h2 = f2 & w[2];
            final long h3 = f3 & w[3];
            if ((h0 | h1 | h2 | h3) != 0) {
                push(st, top++, mid + 1, hi, h0, h1, h2, h3);
            }
        }
        return max;
    }

    private static void push(final long[] stack, final int frame, final int lo, final int hi, final long w0,
        final long w1, final long w2, final long w3) {
        final int base = frame * FRAME;
        stack[base] = lo;
        stack[base + 1] = hi;
        stack[base + 2] = w0;
        stack[base + 3] = w1;
        stack[base + 4] = w2;
        stack[base + 5] = w3;
    }

    @Override
    public int depthOf(final int pod) {
        return result.depthOf(pod);
    }

    /**
     * @return which madvise calls were made and whether they succeeded.
     */
    public String hugeAdvice() {
        return hugeAdvice;
    }

    /**
     * @return mean lookups per query so far.
     */
    public double meanProbes() {
        return queries == 0 ? 0 : (double) probes / queries;
    }

    /**
     * @return a value derived from the touched words (keeps the loads alive).
     */
    public long touchSink() {
        return touchSink;
    }

    @Override
    public long footprintBytes() {
        return segment.byteSize();
    }

    @Override
    public void close() {
        if (arena != null) {
            arena.close();
        }
        region.close();
    }
}
