package io.kvidx.client.index;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The binary search of a {@link ChainSearch} over a long chain (more than {@link #WHOLE_CHAIN_PREFETCH} blocks), or
 * over any chain when the querying thread's recent searches probed few of the lines a bulk load brings in
 * ({@link PrefixResult#bulkPays()}), one level of the search tree at a time, with loads that follow the probes the
 * search makes rather than the chain's length (ADR 0023).
 *
 * <p>The search probes the same keys as the depth-first search of short chains, and so gives the same answers: block
 * 0, then the middle key of [1, N]; the pods that hold it go on in the upper half, the others in the lower half; a
 * range of width 0 is a depth. Only the order differs: all ranges of one level are probed before the next level's,
 * so that the next level's keys are known a whole level in advance. A narrow search (below) first splits [1, N] at
 * the depth g that most pods held in the last narrow answer for a prompt with the same block 0 ({@link PrefixResult},
 * else the thread's last narrow answer): block g, then block
 * g - 1; the pods without block g - 1 search [1, g - 1], those with it and without block g hold g, those with both
 * search [g + 1, N]. Any split keeps each pod's range between a block it holds and one it does not, so a pod whose
 * blocks have no gap gets its exact depth either way; a pod with a gap may stop at another edge of it than the plain
 * halving would (ADR 0023, decision 7). With prefetching on:
 * <ol>
 *   <li>before the search, block 0's home entry and those of the top levels of the tree are loaded in one tight
 *   loop, so their misses overlap: {@link #PREFETCH_LEVELS} levels (63 keys: every pod's first probes, whatever its
 *   depth) when recent searches probed many of them, {@link ChainSearch#NARROW_TOP_LEVELS} when they made a handful
 *   of probes (every holder at one depth);</li>
 *   <li>before each level is probed, the home entries its ranges' descendants {@link #LOOKAHEAD} levels down may
 *   probe are loaded, again in one tight loop: by the time the search gets there they are in cache;</li>
 *   <li>and the overflow bitmaps of the next level's keys (whose home lines are in by then): a block held by more
 *   than 7 pods, such as a shared system prompt, keeps its holders there, one more miss in a row per probe.</li>
 * </ol>
 * A 750-block prompt on 128 pods at a handful of depths thus costs 63 loads up front and about 4 per range and level
 * after the sixth, in overlapping batches, instead of 750 loads before a search whose probes past the sixth level
 * each waited for memory.
 *
 * <p><b>Note:</b> thread safe and allocation-free, as {@link ChainSearch}: a query writes only its
 * {@link PrefixResult}, whose two level arrays hold at most one range per pod each (the ranges of a level hold
 * disjoint, non-empty pod sets).
 */
final class LevelSearch {
    /** Plain loads for the prefetch passes: they only bring lines into the cache, the lookups read them again. */
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();
    /**
     * Levels of the search tree loaded before the search starts: 6 levels are the first 63 probes after block 0, so
     * a chain of up to 64 blocks would be loaded whole; {@link ChainSearch} does that for such chains.
     */
    static final int PREFETCH_LEVELS = 6;
    /** Chains longer than this are searched here; shorter ones are prefetched whole by {@link ChainSearch}. */
    static final int WHOLE_CHAIN_PREFETCH = 1 << PREFETCH_LEVELS;
    /** Levels below the one being probed whose keys are loaded before it is probed. */
    static final int LOOKAHEAD = 2;
    /** Longs per range of a general cell: lo, hi and four pod words. */
    private static final int FRAME = PrefixResult.FRAME;
    /** Longs per range of a direct cell: lo, hi and one pod word. */
    private static final int DIRECT_FRAME = 3;

    private final MemorySegment segment;
    private final KeyLookup entries;
    private final boolean prefetch;

    /**
     * @param segment  the reader's read-only mapping, validated.
     * @param entries  the reader's single-key lookups, on the same mapping.
     * @param prefetch whether queries load the keys they will probe ahead of the probes.
     */
    LevelSearch(final MemorySegment segment, final KeyLookup entries, final boolean prefetch) {
        this.segment = segment;
        this.entries = entries;
        this.prefetch = prefetch;
    }

    /**
     * The search in a general cell, from the pods the query starts with (not all zero); the result is reset.
     *
     * @return the deepest depth.
     */
    int search(final long[] keys, final int length, final long a0, final long a1, final long a2, final long a3,
        final int top, final boolean guided, final PrefixResult result) {
        final int g = guided ? result.commonDepth(keys[0]) : 0;
        final boolean guess = g >= 2 && g < length;
        if (prefetch) {
            result.sink = guess ? prefetchGuess(keys, length, g, result) : prefetchTop(keys, length, top, result);
        }
        final long[] words = result.words;
        entries.lookup(keys[0], words);
        int probes = 1;
        final long s0 = a0 & words[0];
        final long s1 = a1 & words[1];
        final long s2 = a2 & words[2];
        final long s3 = a3 & words[3];
        if ((s0 | s1 | s2 | s3) == 0) {
            result.probes(probes);
            return 0;
        }
        long[] level = result.level;
        long[] next = result.nextLevel;
        int ranges;
        int max = 0;
        int common = 0;
        int commonPods = 0;
        if (guess) {
            // The depth most pods held last time first: block g, then block g - 1, split [1, N] into the pods that
            // lack block g - 1 (depth in [1, g - 1]), those that hold it and not block g (depth g) and those that
            // hold both (depth in [g + 1, N]).
            entries.lookup(keys[g], words);
            final long g0 = words[0];
            final long g1 = words[1];
            final long g2 = words[2];
            final long g3 = words[3];
            entries.lookup(keys[g - 1], words);
            probes += 2;
            ranges = 0;
            final long l0 = s0 & ~words[0];
            final long l1 = s1 & ~words[1];
            final long l2 = s2 & ~words[2];
            final long l3 = s3 & ~words[3];
            if ((l0 | l1 | l2 | l3) != 0) {
                ranges = put(level, ranges, 1, g - 1, l0, l1, l2, l3);
            }
            final long e0 = s0 & words[0] & ~g0;
            final long e1 = s1 & words[1] & ~g1;
            final long e2 = s2 & words[2] & ~g2;
            final long e3 = s3 & words[3] & ~g3;
            if ((e0 | e1 | e2 | e3) != 0) {
                result.addAll(e0, e1, e2, e3, g);
                max = g;
                common = g;
                commonPods = Long.bitCount(e0) + Long.bitCount(e1) + Long.bitCount(e2) + Long.bitCount(e3);
            }
            final long h0 = s0 & words[0] & g0;
            final long h1 = s1 & words[1] & g1;
            final long h2 = s2 & words[2] & g2;
            final long h3 = s3 & words[3] & g3;
            if ((h0 | h1 | h2 | h3) != 0) {
                ranges = put(level, ranges, g + 1, length, h0, h1, h2, h3);
            }
            if (prefetch && ranges > 0) {
                // The guess missed some pods: their ranges' middles and the level below, loaded together (the loop's
                // first pass loads the level after those).
                result.sink += prefetchBelow(keys, level, ranges, FRAME, 0, LOOKAHEAD - 1, result);
            }
        } else {
            level[0] = 1;
            level[1] = length;
            level[2] = s0;
            level[3] = s1;
            level[4] = s2;
            level[5] = s3;
            ranges = 1;
        }
        int depth = 0;
        long sink = 0;
        while (ranges > 0) {
            if (prefetch) {
                if (depth + LOOKAHEAD >= top) {
                    sink += prefetchBelow(keys, level, ranges, FRAME, LOOKAHEAD, LOOKAHEAD, result);
                }
                sink += touchChildrenPods(keys, level, ranges);
            }
            int n = 0;
            for (int r = 0; r < ranges; r++) {
                final int base = r * FRAME;
                final int lo = (int) level[base];
                final int hi = (int) level[base + 1];
                final long f0 = level[base + 2];
                final long f1 = level[base + 3];
                final long f2 = level[base + 4];
                final long f3 = level[base + 5];
                if (lo == hi) {
                    result.addAll(f0, f1, f2, f3, lo);
                    max = Math.max(max, lo);
                    if (guided) {
                        final int pods = Long.bitCount(f0) + Long.bitCount(f1) + Long.bitCount(f2)
                            + Long.bitCount(f3);
                        if (pods > commonPods) {
                            commonPods = pods;
                            common = lo;
                        }
                    }
                    continue;
                }
                final int mid = (lo + hi) >>> 1;
                entries.lookup(keys[mid], words);
                probes++;
                final long l0 = f0 & ~words[0];
                final long l1 = f1 & ~words[1];
                final long l2 = f2 & ~words[2];
                final long l3 = f3 & ~words[3];
                if ((l0 | l1 | l2 | l3) != 0) {
                    n = put(next, n, lo, mid, l0, l1, l2, l3);
                }
                final long h0 = f0 & words[0];
                final long h1 = f1 & words[1];
                final long h2 = f2 & words[2];
                final long h3 = f3 & words[3];
                if ((h0 | h1 | h2 | h3) != 0) {
                    n = put(next, n, mid + 1, hi, h0, h1, h2, h3);
                }
            }
            final long[] t = level;
            level = next;
            next = t;
            ranges = n;
            depth++;
        }
        result.sink += sink;
        result.probes(probes);
        result.searched(probes, length);
        if (guided) {
            result.commonDepth(keys[0], common);
        }
        return max;
    }

    /**
     * The search in a direct cell (at most 64 pods, one pods word per key), from the alive pods (not zero); the
     * result is reset.
     *
     * @return the deepest depth.
     */
    int searchDirect(final long[] keys, final int length, final long alive, final int top, final boolean guided,
        final PrefixResult result) {
        final int g = guided ? result.commonDepth(keys[0]) : 0;
        final boolean guess = g >= 2 && g < length;
        if (prefetch) {
            result.sink = guess ? prefetchGuess(keys, length, g, result) : prefetchTop(keys, length, top, result);
        }
        final long s = alive & probe(keys[0]);
        int probes = 1;
        if (s == 0) {
            result.probes(probes);
            return 0;
        }
        long[] level = result.level;
        long[] next = result.nextLevel;
        int first = 0;
        int max = 0;
        int common = 0;
        int commonPods = 0;
        if (guess) {
            // As in search: block g, then block g - 1, and three sets of pods.
            final long atG = probe(keys[g]);
            final long beforeG = probe(keys[g - 1]);
            probes += 2;
            final long low = s & ~beforeG;
            final long exact = s & beforeG & ~atG;
            final long high = s & beforeG & atG;
            if (low != 0) {
                level[first++] = 1;
                level[first++] = g - 1;
                level[first++] = low;
            }
            if (exact != 0) {
                result.addWord0(exact, g);
                max = g;
                common = g;
                commonPods = Long.bitCount(exact);
            }
            if (high != 0) {
                level[first++] = g + 1;
                level[first++] = length;
                level[first++] = high;
            }
            if (prefetch && first > 0) {
                result.sink += prefetchBelow(keys, level, first / DIRECT_FRAME, DIRECT_FRAME, 0, LOOKAHEAD - 1,
                    result);
            }
        } else {
            level[0] = 1;
            level[1] = length;
            level[2] = s;
            first = DIRECT_FRAME;
        }
        int ranges = first / DIRECT_FRAME;
        int depth = 0;
        long sink = 0;
        while (ranges > 0) {
            if (prefetch && depth + LOOKAHEAD >= top) {
                sink += prefetchBelow(keys, level, ranges, DIRECT_FRAME, LOOKAHEAD, LOOKAHEAD, result);
            }
            int n = 0;
            for (int r = 0; r < ranges; r++) {
                final int base = r * DIRECT_FRAME;
                final int lo = (int) level[base];
                final int hi = (int) level[base + 1];
                final long f = level[base + 2];
                if (lo == hi) {
                    result.addWord0(f, lo);
                    max = Math.max(max, lo);
                    if (guided && Long.bitCount(f) > commonPods) {
                        commonPods = Long.bitCount(f);
                        common = lo;
                    }
                    continue;
                }
                final int mid = (lo + hi) >>> 1;
                final long w = probe(keys[mid]);
                probes++;
                final long low = f & ~w;
                final long high = f & w;
                if (low != 0) {
                    next[n++] = lo;
                    next[n++] = mid;
                    next[n++] = low;
                }
                if (high != 0) {
                    next[n++] = mid + 1;
                    next[n++] = hi;
                    next[n++] = high;
                }
            }
            final long[] t = level;
            level = next;
            next = t;
            ranges = n / DIRECT_FRAME;
            depth++;
        }
        result.sink += sink;
        result.probes(probes);
        result.searched(probes, length);
        if (guided) {
            result.commonDepth(keys[0], common);
        }
        return max;
    }

    /**
     * Loads the overflow bitmaps (or pods words) of the keys the next level may probe, the children of this level's
     * ranges, whose home lines earlier prefetches brought in: a key held by more than 7 pods keeps its holders in a
     * bitmap that its lookup would otherwise only reach after reading the pods word, one more miss in a row.
     */
    private long touchChildrenPods(final long[] keys, final long[] level, final int ranges) {
        long sink = 0;
        for (int r = 0; r < ranges; r++) {
            final int base = r * FRAME;
            final int lo = (int) level[base];
            final int hi = (int) level[base + 1];
            if (hi - lo >= 2) {
                final int mid = (lo + hi) >>> 1;
                if (lo < mid) {
                    sink += touchPods(keys[(lo + mid) >>> 1]);
                }
                if (mid + 1 < hi) {
                    sink += touchPods(keys[(mid + 1 + hi) >>> 1]);
                }
            }
        }
        return sink;
    }

    private long touchPods(final long key) {
        final long k = IndexDescriptor.storedKey(key);
        return entries.touchPods(k, entries.homeOffset(k));
    }

    /** A key's pods word in a direct cell. */
    private long probe(final long key) {
        final long k = IndexDescriptor.storedKey(key);
        return entries.direct(k, entries.homeOffset(k));
    }

    private static int put(final long[] frames, final int n, final int lo, final int hi, final long w0, final long w1,
        final long w2, final long w3) {
        final int base = n * FRAME;
        frames[base] = lo;
        frames[base + 1] = hi;
        frames[base + 2] = w0;
        frames[base + 3] = w1;
        frames[base + 4] = w2;
        frames[base + 5] = w3;
        return n + 1;
    }

    /**
     * Loads block 0's home entry and those of the top {@code top} levels (1 to {@link #PREFETCH_LEVELS}) of the search
     * tree over [1, length], in two passes: offsets first, then a loop of a few instructions per load, so that many
     * misses are in flight at once.
     */
    private long prefetchTop(final long[] keys, final int length, final int top, final PrefixResult result) {
        final long[] offsets = result.offsets(WHOLE_CHAIN_PREFETCH);
        offsets[0] = entries.homeOffset(IndexDescriptor.storedKey(keys[0]));
        final int n = below(keys, 1, length, 0, top - 1, offsets, 1);
        return load(offsets, n);
    }

    /**
     * Loads the home entries of block 0 and of blocks g and g - 1, the guided first probes, in one tight loop. Not the
     * next probes' (the middles of [1, g - 1] and [g + 1, length]): when the guess is right, as on the trace, no
     * pod goes on to them, and a load of a line that is not needed costs a miss that the three probes then wait
     * behind (ADR 0023, decision 8); when it is wrong, the search loads them after the split.
     */
    private long prefetchGuess(final long[] keys, final int length, final int g, final PrefixResult result) {
        final long[] offsets = result.offsets(3);
        offsets[0] = entries.homeOffset(IndexDescriptor.storedKey(keys[0]));
        offsets[1] = entries.homeOffset(IndexDescriptor.storedKey(keys[g]));
        offsets[2] = entries.homeOffset(IndexDescriptor.storedKey(keys[g - 1]));
        return load(offsets, 3);
    }

    /**
     * Loads the home entries of the keys the given ranges and their descendants will probe {@code from} to {@code to}
     * levels down (0: the ranges' own middles; those that exist), in two passes as {@link #prefetchTop}: from and to
     * {@link #LOOKAHEAD} before a level is probed, the level that many below it.
     */
    private long prefetchBelow(final long[] keys, final long[] level, final int ranges, final int frame,
        final int from, final int to, final PrefixResult result) {
        // Per range: 2^from + ... + 2^to keys.
        final long[] offsets = result.offsets(ranges * ((2 << to) - (1 << from)));
        int n = 0;
        for (int r = 0; r < ranges; r++) {
            final int base = r * frame;
            n = below(keys, (int) level[base], (int) level[base + 1], from, to, offsets, n);
        }
        return load(offsets, n);
    }

    private long load(final long[] offsets, final int n) {
        final MemorySegment s = segment;
        long sink = 0;
        for (int i = 0; i < n; i++) {
            sink += (long) PLAIN.get(s, offsets[i]);
        }
        return sink;
    }

    /**
     * Writes from {@code at} the home offsets of the keys probed at the tree levels {@code from .. to} (relative to
     * the range [lo, hi], which is level 0) and returns the next free index. Recursion depth is at most {@code to}.
     */
    private int below(final long[] keys, final int lo, final int hi, final int from, final int to,
        final long[] offsets, final int at) {
        if (lo >= hi) {
            return at;
        }
        final int mid = (lo + hi) >>> 1;
        int n = at;
        if (from == 0) {
            offsets[n++] = entries.homeOffset(IndexDescriptor.storedKey(keys[mid]));
        }
        if (to == 0) {
            return n;
        }
        final int f = Math.max(0, from - 1);
        n = below(keys, lo, mid, f, to - 1, offsets, n);
        return below(keys, mid + 1, hi, f, to - 1, offsets, n);
    }
}
