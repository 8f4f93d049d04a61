package io.kvidx.client.index;

import io.kvidx.ffm.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

import static io.kvidx.client.index.IndexDescriptor.ALIVE_BITMAP_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH_SHIFT;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.OVERFLOW_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.POD_TABLE_VERSION_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_HEADER_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.SHARD_VERSION_OFFSET;

/**
 * The query engine of an {@link IndexReader}: prefix queries over a chain of block keys (binary search, or the exact
 * walk) and single-key lookups, on the reader's read-only mapping. Each lookup reads its shard's seqlock version,
 * probes from the key's home entry (the first entry of its cache line, layout 3.0), and checks the version again;
 * a shard locked or changed under it is retried within the reader's read bound ({@link ReadWait}). With prefetching
 * on, every key's home entry is loaded before the search so that the chain's cache misses overlap.
 *
 * <p><b>Note:</b> thread safe and allocation-free: it only reads the file, and a query writes only the caller's
 * {@link PrefixResult}. The daemon's IndexWriter is the only writer of the file.
 */
final class ChainSearch {
    private static final VarHandle LONG = Layouts.LONG;
    /**
     * Plain loads without the alignment check (every field is 8-byte aligned anyway) for data read between two
     * reads of a seqlock version; explicit fences order them.
     */
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();
    private static final int SPINS_PER_CLOCK_CHECK = IndexReader.SPINS_PER_CLOCK_CHECK;

    private final MemorySegment segment;
    private final ReadWait wait;
    private final int shardBits;
    private final int slotBits;
    private final int slotMask;
    private final int maxChain;
    private final long shardHeadersOffset;
    private final long tablesOffset;
    private final long shardTableLength;
    private final long overflowOffset;
    private final int overflowPerShard;
    private final int overflowMask;
    /** Pods words are plain 64-bit bitmaps (at most 64 pods): one load per lookup. */
    private final boolean direct;
    private final boolean prefetch;

    /**
     * @param segment  the reader's read-only mapping, validated.
     * @param wait     the reader's read bound.
     * @param prefetch whether queries load every key's home entry before searching.
     */
    ChainSearch(final MemorySegment segment, final ReadWait wait, final boolean prefetch) {
        this.segment = segment;
        this.wait = wait;
        final int shardCount = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.SHARD_COUNT_OFFSET);
        final int slotsPerShard = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.SLOTS_PER_SHARD_OFFSET);
        final int maxPods = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_PODS_OFFSET);
        this.maxChain = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_CHAIN_OFFSET);
        this.shardBits = Integer.numberOfTrailingZeros(shardCount);
        this.slotBits = Integer.numberOfTrailingZeros(slotsPerShard);
        this.slotMask = slotsPerShard - 1;
        this.shardHeadersOffset = IndexDescriptor.shardHeadersOffset(maxPods);
        this.tablesOffset = IndexDescriptor.tablesOffset(maxPods, shardCount);
        this.shardTableLength = (long) slotsPerShard * ENTRY_LENGTH;
        this.overflowOffset = IndexDescriptor.overflowOffset(maxPods, shardCount, slotsPerShard);
        this.overflowPerShard = IndexDescriptor.overflowPerShard(maxPods, slotsPerShard);
        this.overflowMask = Math.max(0, overflowPerShard - 1);
        this.direct = IndexDescriptor.isDirect(maxPods);
        this.prefetch = prefetch;
    }

    /** See {@link IndexReader#query}. */
    int query(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        final int max = search(keys, length, candidates, result);
        result.podTableVersion = podTableVersionAfterReads();
        return max;
    }

    private int search(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        checkChain(keys, length);
        result.reset(length);
        final long[] start = startPods(candidates, result);
        long s0 = start[0];
        long s1 = start[1];
        long s2 = start[2];
        long s3 = start[3];
        if (length == 0 || (s0 | s1 | s2 | s3) == 0) {
            return 0;
        }
        if (direct) {
            return queryDirect(keys, length, s0, result);
        }
        if (prefetch) {
            result.sink = prefetch(keys, length, result);
        }
        final long[] stack = result.stack;
        final long[] words = result.words;
        // Probe block 0 first: the pods that hold nothing of the chain (most of a large cell) leave after one
        // lookup instead of a descent to depth 0; the holders search [1, N].
        lookup(keys[0], words);
        int probes = 1;
        s0 &= words[0];
        s1 &= words[1];
        s2 &= words[2];
        s3 &= words[3];
        if ((s0 | s1 | s2 | s3) == 0) {
            result.probes(probes);
            return 0;
        }
        int top = 0;
        push(stack, top++, 1, length, s0, s1, s2, s3);
        int max = 0;
        while (top > 0) {
            final int base = --top * PrefixResult.FRAME;
            final int lo = (int) stack[base];
            final int hi = (int) stack[base + 1];
            final long f0 = stack[base + 2];
            final long f1 = stack[base + 3];
            final long f2 = stack[base + 4];
            final long f3 = stack[base + 5];
            if (lo == hi) {
                result.addAll(f0, f1, f2, f3, lo);
                max = Math.max(max, lo);
                continue;
            }
            final int mid = (lo + hi) >>> 1;
            lookup(keys[mid], words);
            probes++;
            final long h0 = f0 & words[0];
            final long h1 = f1 & words[1];
            final long h2 = f2 & words[2];
            final long h3 = f3 & words[3];
            final long l0 = f0 & ~words[0];
            final long l1 = f1 & ~words[1];
            final long l2 = f2 & ~words[2];
            final long l3 = f3 & ~words[3];
            if ((l0 | l1 | l2 | l3) != 0) {
                push(stack, top++, lo, mid, l0, l1, l2, l3);
            }
            if ((h0 | h1 | h2 | h3) != 0) {
                push(stack, top++, mid + 1, hi, h0, h1, h2, h3);
            }
        }
        result.probes(probes);
        return max;
    }

    /**
     * The pods a query starts from: the alive bitmap (acquire loads), restricted to the candidates when given, in
     * the result's scratch words (which the first lookup overwrites once they are read).
     */
    private long[] startPods(final PodSet candidates, final PrefixResult result) {
        final long[] w = result.words;
        for (int i = 0; i < IndexDescriptor.POD_WORDS; i++) {
            final long alive = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + i * 8L);
            w[i] = candidates == null ? alive : alive & candidates.word(i);
        }
        return w;
    }

    /** See {@link IndexReader#queryExact}. */
    int queryExact(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        final int max = walk(keys, length, candidates, result);
        result.podTableVersion = podTableVersionAfterReads();
        return max;
    }

    /**
     * The pod table version as a query records it: after every load of the query (alive words, entries). The
     * writer bumps the version before it sets the alive bit of a slot it gave to a new pod, and that pod's blocks
     * are stored later still; so when any load of the query saw the new pod (its alive bit or one of its bits), this
     * load sees the bumped version, and a caller whose slot-to-pod mapping is older notices. Loaded the other way
     * round, the query could pair an old version with the new pod's bits and report them under the old pod's name.
     */
    private long podTableVersionAfterReads() {
        VarHandle.loadLoadFence();
        return (long) LONG.getAcquire(segment, (long) POD_TABLE_VERSION_OFFSET);
    }

    private int walk(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        checkChain(keys, length);
        result.reset(length);
        final long[] start = startPods(candidates, result);
        long s0 = start[0];
        long s1 = start[1];
        long s2 = start[2];
        long s3 = start[3];
        if (direct) {
            return queryExactDirect(keys, length, s0, result);
        }
        if (prefetch) {
            result.sink = prefetch(keys, length, result);
        }
        final long[] words = result.words;
        int i = 0;
        while (i < length && (s0 | s1 | s2 | s3) != 0) {
            lookup(keys[i], words);
            result.addAll(s0 & ~words[0], s1 & ~words[1], s2 & ~words[2], s3 & ~words[3], i);
            s0 &= words[0];
            s1 &= words[1];
            s2 &= words[2];
            s3 &= words[3];
            i++;
        }
        result.addAll(s0, s1, s2, s3, i);
        result.probes(i);
        return result.maxDepth();
    }

    /**
     * {@link #queryExact} in a direct cell: one pods word per block, the home offsets computed once (by the
     * prefetch when it is on), and the pods that leave at block i recorded with depth i.
     */
    private int queryExactDirect(final long[] keys, final int length, final long alive, final PrefixResult result) {
        final long[] offsets = chainOffsets(keys, length, result);
        long held = alive;
        int max = 0;
        int i = 0;
        while (i < length && held != 0) {
            final long w = lookupDirect(IndexDescriptor.storedKey(keys[i]), offsets[i]);
            final long left = held & ~w;
            if (left != 0 && i > 0) {
                result.addWord0(left, i);
                max = i;
            }
            held &= w;
            i++;
        }
        if (held != 0 && i > 0) {
            result.addWord0(held, i);
            max = i;
        }
        result.probes(i);
        return max;
    }

    /**
     * Loads the home entry of every key of the chain before the search starts: the loads are independent, so
     * their cache misses overlap instead of being paid one probe at a time.
     */
    private long prefetch(final long[] keys, final int length, final PrefixResult result) {
        // Two passes: first compute every home entry's offset, then load them in a loop of a few instructions per
        // load, so that many more misses are in flight at once than if each load waited behind its own hashing.
        final long[] offsets = homeOffsets(keys, length, result);
        final MemorySegment s = segment;
        long sink = 0;
        for (int i = 0; i < length; i++) {
            sink += (long) PLAIN.get(s, offsets[i]);
        }
        return sink;
    }

    /**
     * The home entry offset of every key of the chain, in the result's scratch array; with prefetching on, the
     * entries are loaded too (see {@link #prefetch}).
     */
    private long[] chainOffsets(final long[] keys, final int length, final PrefixResult result) {
        if (prefetch) {
            result.sink = prefetch(keys, length, result);
            return result.offsets(length);
        }
        return homeOffsets(keys, length, result);
    }

    /** The file offset of every key's home entry, in the result's scratch array. */
    private long[] homeOffsets(final long[] keys, final int length, final PrefixResult result) {
        final long[] offsets = result.offsets(length);
        for (int i = 0; i < length; i++) {
            offsets[i] = homeOffset(IndexDescriptor.storedKey(keys[i]));
        }
        return offsets;
    }

    /** File offset of a stored key's home entry: shard and slot are consecutive bits of its Fibonacci hash. */
    private long homeOffset(final long storedKey) {
        final long index = IndexDescriptor.homeIndex(IndexDescriptor.spread(storedKey), shardBits, slotBits);
        return tablesOffset + (index << ENTRY_LENGTH_SHIFT);
    }

    /**
     * {@link #query} in a direct cell (at most 64 pods): pod sets are single words, so the search keeps one word
     * per frame and each lookup returns the pods word itself.
     */
    private int queryDirect(final long[] keys, final int length, final long alive, final PrefixResult result) {
        final long[] offsets = chainOffsets(keys, length, result);
        long s0 = alive & lookupDirect(IndexDescriptor.storedKey(keys[0]), offsets[0]);
        int probes = 1;
        if (s0 == 0) {
            result.probes(probes);
            return 0;
        }
        final long[] stack = result.stack;
        int top = 0;
        stack[0] = 1;
        stack[1] = length;
        stack[2] = s0;
        top++;
        int max = 0;
        while (top > 0) {
            final int base = --top * 3;
            final int lo = (int) stack[base];
            final int hi = (int) stack[base + 1];
            final long f = stack[base + 2];
            if (lo == hi) {
                result.addWord0(f, lo);
                max = Math.max(max, lo);
                continue;
            }
            final int mid = (lo + hi) >>> 1;
            final long w = lookupDirect(IndexDescriptor.storedKey(keys[mid]), offsets[mid]);
            probes++;
            final long low = f & ~w;
            final long high = f & w;
            if (low != 0) {
                final int b = top++ * 3;
                stack[b] = lo;
                stack[b + 1] = mid;
                stack[b + 2] = low;
            }
            if (high != 0) {
                final int b = top++ * 3;
                stack[b] = mid + 1;
                stack[b + 1] = hi;
                stack[b + 2] = high;
            }
        }
        result.probes(probes);
        return max;
    }

    /**
     * The pods word of a stored key in a direct cell (0 when absent), by linear probing from its home entry's
     * file offset under the shard's seqlock.
     */
    private long lookupDirect(final long k, final long home) {
        final MemorySegment s = segment;
        final long inTables = home - tablesOffset;
        final long tableMask = shardTableLength - 1;
        final long table = home - (inTables & tableMask);
        final int shard = (int) (inTables >>> (slotBits + ENTRY_LENGTH_SHIFT));
        final long versionOffset = shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH + SHARD_VERSION_OFFSET;
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            // Plain loads with explicit fences: the same ordering as getAcquire / getOpaque without their
            // alignment checks, and the table wraps by a mask (docs/perf.md, layout 3.0 runs: 7 % less in-cache time).
            final long v1 = (long) PLAIN.get(s, versionOffset);
            VarHandle.acquireFence();
            if ((v1 & 1) == 0) {
                long pods = 0;
                long e = home;
                for (int n = 0; n <= slotMask; n++) {
                    final long ek = (long) PLAIN.get(s, e + ENTRY_KEY_OFFSET);
                    if (ek == k) {
                        // The key is published (release) after its pods word: read the pods word after the key.
                        VarHandle.acquireFence();
                        pods = (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET);
                        break;
                    }
                    if (ek == 0) {
                        break;
                    }
                    e = table + ((e + ENTRY_LENGTH - table) & tableMask);
                }
                VarHandle.loadLoadFence();
                if ((long) PLAIN.get(s, versionOffset) == v1) {
                    return pods;
                }
            }
            Thread.onSpinWait();
            if ((++spins & (SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = wait.check(waitStartNs, spins, shard, -1);
            }
        }
    }

    private static void push(final long[] stack, final int frame, final int lo, final int hi, final long w0,
        final long w1, final long w2, final long w3) {
        final int base = frame * PrefixResult.FRAME;
        stack[base] = lo;
        stack[base + 1] = hi;
        stack[base + 2] = w0;
        stack[base + 3] = w1;
        stack[base + 4] = w2;
        stack[base + 5] = w3;
    }

    private void checkChain(final long[] keys, final int length) {
        if (length < 0 || length > keys.length) {
            throw new IllegalArgumentException("chain length " + length + " outside the key array of "
                + keys.length);
        }
        if (length > maxChain) {
            throw new ChainTooLongException("chain of " + length + " blocks exceeds this index's maximum of "
                + maxChain + " (daemon option --max-chain-length, YAML maxChainLength)");
        }
    }

    /** See {@link IndexReader#lookup}. */
    boolean lookup(final long key, final long[] out) {
        final long k = IndexDescriptor.storedKey(key);
        if (direct) {
            // A direct cell deletes an entry with its last pod: a non-zero word is a present key.
            out[0] = lookupDirect(k, homeOffset(k));
            out[1] = 0;
            out[2] = 0;
            out[3] = 0;
            return out[0] != 0;
        }
        final long h = IndexDescriptor.spread(k);
        final int shard = (int) (h >>> (64 - shardBits));
        final int home = IndexDescriptor.homeSlot(h, shardBits, slotBits);
        final long versionOffset = shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH + SHARD_VERSION_OFFSET;
        final long table = tablesOffset + shard * shardTableLength;
        final MemorySegment s = segment;
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            final long v1 = (long) LONG.getAcquire(s, versionOffset);
            if ((v1 & 1) == 0) {
                long w0 = 0;
                long w1 = 0;
                long w2 = 0;
                long w3 = 0;
                boolean found = false;
                int idx = home;
                for (int n = 0; n <= slotMask; n++) {
                    final long e = table + ((long) idx << ENTRY_LENGTH_SHIFT);
                    final long ek = (long) PLAIN.get(s, e + ENTRY_KEY_OFFSET);
                    if (ek == k) {
                        // The key is published (release) after its pods word: read the pods word after the key.
                        VarHandle.acquireFence();
                        final long pods = (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET);
                        if (pods >= 0) {
                            for (int i = 0, count = IndexDescriptor.inlineCount(pods); i < count; i++) {
                                final int slot = IndexDescriptor.inlineSlot(pods, i);
                                final long bit = 1L << slot;
                                switch (slot >>> 6) {
                                    case 0 -> w0 |= bit;
                                    case 1 -> w1 |= bit;
                                    case 2 -> w2 |= bit;
                                    default -> w3 |= bit;
                                }
                            }
                        } else {
                            // Masked: even a corrupted index cannot point outside this shard's overflow area.
                            final long o = overflowOffset
                                + ((long) shard * overflowPerShard + ((int) pods & overflowMask)) * OVERFLOW_LENGTH;
                            // The bitmap is filled before its index is published (release) in the pods word.
                            VarHandle.acquireFence();
                            w0 = (long) PLAIN.get(s, o);
                            w1 = (long) PLAIN.get(s, o + 8);
                            w2 = (long) PLAIN.get(s, o + 16);
                            w3 = (long) PLAIN.get(s, o + 24);
                        }
                        found = true;
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
                    return found;
                }
            }
            Thread.onSpinWait();
            if ((++spins & (SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = wait.check(waitStartNs, spins, shard, -1);
            }
        }
    }
}
