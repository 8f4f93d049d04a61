package io.kvidx.client.index;

import io.kvidx.ffm.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

import static io.kvidx.client.index.IndexDescriptor.ALIVE_BITMAP_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.POD_TABLE_VERSION_OFFSET;

/**
 * The query engine of an {@link IndexReader}: prefix queries over a chain of block keys (binary search, or the exact
 * walk) on the reader's read-only mapping, each step a {@link KeyLookup} under its shard's seqlock. With prefetching
 * on, a chain of up to {@link LevelSearch#WHOLE_CHAIN_PREFETCH} blocks has every key's home entry loaded before the
 * search, so that its cache misses overlap; a longer chain is searched by {@link LevelSearch}, which loads only what
 * its probes will need, a few levels ahead (ADR 0023), and the exact walk loads that many keys ahead of itself. When
 * the querying thread's recent searches probed less than a quarter of what those loads bring in (its
 * {@link PrefixResult}'s {@link PrefixResult#bulkPays()}: pods holding each prompt to one depth), every chain is
 * searched level by level with only the top {@link #NARROW_TOP_LEVELS} levels loaded up front.
 *
 * <p><b>Note:</b> thread safe and allocation-free: it only reads the file, and a query writes only the caller's
 * {@link PrefixResult}. The daemon's IndexWriter is the only writer of the file.
 */
final class ChainSearch {
    private static final VarHandle LONG = Layouts.LONG;
    /** Plain loads for the prefetch pass: they only bring lines into the cache, the lookups read them again. */
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();
    /** Keys the exact walk of a long chain loads ahead of itself; a chain up to this long is loaded whole. */
    static final int WINDOW = LevelSearch.WHOLE_CHAIN_PREFETCH;
    /**
     * Levels of the search tree loaded before the search starts when the querying thread's recent searches probed
     * few of the lines a bulk load brings in ({@link PrefixResult#bulkPays()}): the first 3 probes after block 0;
     * the next levels are loaded as the search approaches them.
     */
    static final int NARROW_TOP_LEVELS = 2;

    private final MemorySegment segment;
    private final int maxChain;
    /** Pods words are plain 64-bit bitmaps (at most 64 pods): one load per lookup. */
    private final boolean direct;
    private final boolean prefetch;
    private final KeyLookup entries;
    private final LevelSearch levels;

    /**
     * @param segment  the reader's read-only mapping, validated.
     * @param entries  the reader's single-key lookups, on the same mapping.
     * @param maxPods  the file's pod capacity (its cell), from its header.
     * @param maxChain the file's longest chain, from its header.
     * @param prefetch whether queries load the home entries they will probe before probing them.
     */
    ChainSearch(final MemorySegment segment, final KeyLookup entries, final int maxPods, final int maxChain,
        final boolean prefetch) {
        this.segment = segment;
        this.maxChain = maxChain;
        this.direct = IndexDescriptor.isDirect(maxPods);
        this.prefetch = prefetch;
        this.entries = entries;
        this.levels = new LevelSearch(segment, entries, prefetch);
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
        // Searches that probe many of the lines a bulk load brings in (a prompt's holders at several depths) gain
        // from loading a short chain whole and a long chain's top 6 levels up front; searches that probe a handful
        // (every holder at one depth, the trace's shape) only pay for those loads: the thread's recent searches
        // decide (ADR 0023).
        final boolean wide = result.bulkPays();
        if (length > LevelSearch.WHOLE_CHAIN_PREFETCH || prefetch && !wide) {
            final int top = wide ? LevelSearch.PREFETCH_LEVELS : NARROW_TOP_LEVELS;
            // A narrow search probes first at the depth most pods held in the last narrow answer for its root.
            return direct ? levels.searchDirect(keys, length, s0, top, !wide, result)
                : levels.search(keys, length, s0, s1, s2, s3, top, !wide, result);
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
        entries.lookup(keys[0], words);
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
            entries.lookup(keys[mid], words);
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
        result.searched(probes, length);
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
        final boolean ahead = prefetch && length > WINDOW;
        if (prefetch) {
            result.sink = prefetch(keys, ahead ? WINDOW : length, result);
        }
        long sink = 0;
        final long[] words = result.words;
        int i = 0;
        while (i < length && (s0 | s1 | s2 | s3) != 0) {
            if (ahead && i + WINDOW < length) {
                sink += touch(keys[i + WINDOW]);
            }
            entries.lookup(keys[i], words);
            result.addAll(s0 & ~words[0], s1 & ~words[1], s2 & ~words[2], s3 & ~words[3], i);
            s0 &= words[0];
            s1 &= words[1];
            s2 &= words[2];
            s3 &= words[3];
            i++;
        }
        result.addAll(s0, s1, s2, s3, i);
        result.sink += sink;
        result.probes(i);
        return result.maxDepth();
    }

    /**
     * {@link #queryExact} in a direct cell: one pods word per block, and the pods that leave at block i recorded with
     * depth i. A chain of up to {@link #WINDOW} blocks has its home offsets computed once (by the prefetch when it is
     * on); a longer one computes each as the walk reaches it, prefetching {@link #WINDOW} keys ahead.
     */
    private int queryExactDirect(final long[] keys, final int length, final long alive, final PrefixResult result) {
        final boolean whole = length <= WINDOW;
        final boolean ahead = prefetch && !whole;
        final long[] offsets = whole ? chainOffsets(keys, length, result) : null;
        if (ahead) {
            result.sink = prefetch(keys, WINDOW, result);
        }
        long sink = 0;
        long held = alive;
        int max = 0;
        int i = 0;
        while (i < length && held != 0) {
            if (ahead && i + WINDOW < length) {
                sink += touch(keys[i + WINDOW]);
            }
            final long k = IndexDescriptor.storedKey(keys[i]);
            final long w = entries.direct(k, whole ? offsets[i] : entries.homeOffset(k));
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
        result.sink += sink;
        result.probes(i);
        return max;
    }

    /**
     * Loads a key's home entry ahead of its probe: a plain load whose value only keeps it from being dropped; its
     * miss proceeds while the walk probes the keys before it.
     */
    private long touch(final long key) {
        return (long) PLAIN.get(segment, entries.homeOffset(IndexDescriptor.storedKey(key)));
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
            offsets[i] = entries.homeOffset(IndexDescriptor.storedKey(keys[i]));
        }
        return offsets;
    }

    /**
     * {@link #query} in a direct cell (at most 64 pods): pod sets are single words, so the search keeps one word
     * per frame and each lookup returns the pods word itself.
     */
    private int queryDirect(final long[] keys, final int length, final long alive, final PrefixResult result) {
        final long[] offsets = chainOffsets(keys, length, result);
        long s0 = alive & entries.direct(IndexDescriptor.storedKey(keys[0]), offsets[0]);
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
            final long w = entries.direct(IndexDescriptor.storedKey(keys[mid]), offsets[mid]);
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
        result.searched(probes, length);
        return max;
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
}
