package io.kvidx.routing.overlay;

import java.util.concurrent.TimeUnit;

/**
 * The router's own record of its recent picks: for each block key of a routed prompt, which pods the router
 * recently sent that prefix to. A speculative insert: the engine will hold those blocks shortly, but its
 * events take a while to reach the index, and a burst of requests sharing a new prefix would otherwise scatter.
 * Used with the index ({@code INDEX_AND_OVERLAY}, TTL of a couple of seconds) or alone when the fleet publishes
 * no events ({@code APPROXIMATE}, a longer TTL).
 *
 * <p>Bounded: a fixed open-addressing table of {@code capacity} entries {key, 256-bit pod bitmap, expiry}; an
 * insert probes a window of {@link #PROBE_WINDOW} entries and, when the window is full of live entries, replaces
 * the one that expires first (counted in {@link #evictions()}). Entries die {@code ttl} after their last record;
 * an entry's TTL is shared by its pods (recording pod B for a key also extends pod A's record of it).
 *
 * <p><b>Note:</b> thread safe; every method synchronises on the overlay (short, allocation-free critical
 * sections). Routers that share one overlay see each other's picks.
 */
public final class PickOverlay {
    /** Entries probed per lookup or insert. */
    public static final int PROBE_WINDOW = 16;
    /** Default TTL in milliseconds when used next to the index. */
    public static final long TTL_MS_DEFAULT = 2_000;
    /** Default TTL in milliseconds in approximate mode (no event stream). */
    public static final long APPROXIMATE_TTL_MS_DEFAULT = 120_000;

    private final int mask;
    private final long ttlNs;
    private final boolean sparse;
    private final long[] keys;
    private final long[] expiry;
    private final long[] pods;
    private long evictions;
    private long records;

    /**
     * A sparse overlay (see {@link #PickOverlay(int, long, boolean)}).
     *
     * @param capacity entries (rounded up to a power of two, at least {@link #PROBE_WINDOW}).
     * @param ttlMs    how long a recorded pick counts, in milliseconds (> 0).
     */
    public PickOverlay(final int capacity, final long ttlMs) {
        this(capacity, ttlMs, true);
    }

    /**
     * @param capacity entries (rounded up to a power of two, at least {@link #PROBE_WINDOW}).
     * @param ttlMs    how long a recorded pick counts, in milliseconds (> 0).
     * @param sparse   true to record and check only blocks 0, 1, 3, 7, ..., 2^k - 1 and the chain's last block
     *                 (about log2(N) + 1 entries per pick instead of N): depths come out exact for a repeated
     *                 prompt and rounded down to the last checked block for a partly shared one; false to record
     *                 every block (exact depths, N entries per pick).
     */
    public PickOverlay(final int capacity, final long ttlMs, final boolean sparse) {
        if (capacity <= 0 || capacity > (1 << 26)) {
            throw new IllegalArgumentException("capacity must be in (0, 2^26]: " + capacity);
        }
        if (ttlMs <= 0) {
            throw new IllegalArgumentException("ttlMs must be > 0: " + ttlMs);
        }
        final int cap = Math.max(PROBE_WINDOW, Integer.highestOneBit(capacity - 1) << 1);
        this.mask = cap - 1;
        this.sparse = sparse;
        this.ttlNs = TimeUnit.MILLISECONDS.toNanos(ttlMs);
        this.keys = new long[cap];
        this.expiry = new long[cap];
        this.pods = new long[cap * 4];
    }

    private static int home(final long key) {
        long z = key * 0x9E3779B97F4A7C15L;
        return (int) (z ^ (z >>> 32));
    }

    /**
     * Records that the router sent the chain's prefix to a pod.
     *
     * @param chain  block keys.
     * @param length chain length.
     * @param slot   pod slot.
     * @param nowNs  {@link System#nanoTime()}.
     */
    public synchronized void record(final long[] chain, final int length, final int slot, final long nowNs) {
        final long until = nowNs + ttlNs;
        final int w = slot >>> 6;
        final long bit = 1L << slot;
        for (int i = 0; i < length; i = next(i, length)) {
            final int e = entryFor(chain[i], nowNs);
            pods[e * 4 + w] |= bit;
            expiry[e] = until;
        }
        records++;
    }

    /**
     * @param i      a checked block position.
     * @param length chain length.
     * @return the next checked position, or {@code length} when done.
     */
    private int next(final int i, final int length) {
        if (!sparse) {
            return i + 1;
        }
        final int n = 2 * i + 1;
        if (n < length - 1) {
            return n;
        }
        return i < length - 1 ? length - 1 : length;
    }

    private int entryFor(final long key, final long nowNs) {
        final int start = home(key) & mask;
        int reusable = -1;
        int oldest = -1;
        for (int p = 0; p < PROBE_WINDOW; p++) {
            final int e = (start + p) & mask;
            final long exp = expiry[e];
            if (exp != 0 && exp - nowNs > 0) {
                if (keys[e] == key) {
                    return e;
                }
                if (oldest < 0 || exp - expiry[oldest] < 0) {
                    oldest = e;
                }
            } else if (reusable < 0) {
                reusable = e;
                if (exp == 0) {
                    break;
                }
            }
        }
        final int e;
        if (reusable >= 0) {
            e = reusable;
        } else {
            e = oldest;
            evictions++;
        }
        keys[e] = key;
        pods[e * 4] = 0;
        pods[e * 4 + 1] = 0;
        pods[e * 4 + 2] = 0;
        pods[e * 4 + 3] = 0;
        return e;
    }

    private int find(final long key, final long nowNs) {
        final int start = home(key) & mask;
        for (int p = 0; p < PROBE_WINDOW; p++) {
            final int e = (start + p) & mask;
            final long exp = expiry[e];
            if (exp == 0) {
                return -1;
            }
            if (keys[e] == key && exp - nowNs > 0) {
                return e;
            }
        }
        return -1;
    }

    /**
     * Raises each candidate's depth to the number of leading chain blocks the overlay records for it, when that
     * is deeper. Stops at the first checked block no surviving candidate was recorded for (one lookup when the
     * overlay knows nothing of this prompt).
     *
     * @param chain      block keys.
     * @param length     chain length.
     * @param candidates candidate bitmap (four words).
     * @param depths     depth by slot, raised in place.
     * @param nowNs      {@link System#nanoTime()}.
     */
    public synchronized void deepen(final long[] chain, final int length, final long[] candidates,
        final int[] depths, final long nowNs) {
        long s0 = candidates[0];
        long s1 = candidates[1];
        long s2 = candidates[2];
        long s3 = candidates[3];
        int i = 0;
        int depth = 0;
        while (i < length && (s0 | s1 | s2 | s3) != 0) {
            final int e = find(chain[i], nowNs);
            final long h0 = e < 0 ? 0 : s0 & pods[e * 4];
            final long h1 = e < 0 ? 0 : s1 & pods[e * 4 + 1];
            final long h2 = e < 0 ? 0 : s2 & pods[e * 4 + 2];
            final long h3 = e < 0 ? 0 : s3 & pods[e * 4 + 3];
            raise(s0 & ~h0, 0, depth, depths);
            raise(s1 & ~h1, 64, depth, depths);
            raise(s2 & ~h2, 128, depth, depths);
            raise(s3 & ~h3, 192, depth, depths);
            s0 = h0;
            s1 = h1;
            s2 = h2;
            s3 = h3;
            depth = i + 1;
            i = next(i, length);
        }
        i = depth;
        raise(s0, 0, i, depths);
        raise(s1, 64, i, depths);
        raise(s2, 128, i, depths);
        raise(s3, 192, i, depths);
    }

    private static void raise(final long word, final int base, final int depth, final int[] depths) {
        if (depth == 0) {
            return;
        }
        long w = word;
        while (w != 0) {
            final int s = base + Long.numberOfTrailingZeros(w);
            w &= w - 1;
            if (depths[s] < depth) {
                depths[s] = depth;
            }
        }
    }

    /**
     * @param chain  block keys.
     * @param length chain length.
     * @param slot   pod slot.
     * @param nowNs  {@link System#nanoTime()}.
     * @return leading blocks of the chain recorded for the pod and not expired.
     */
    public synchronized int depthOf(final long[] chain, final int length, final int slot, final long nowNs) {
        final int w = slot >>> 6;
        final long bit = 1L << slot;
        int depth = 0;
        for (int i = 0; i < length; i = next(i, length)) {
            final int e = find(chain[i], nowNs);
            if (e < 0 || (pods[e * 4 + w] & bit) == 0) {
                break;
            }
            depth = i + 1;
        }
        return depth;
    }

    /**
     * Forgets everything recorded for a pod (e.g. it restarted).
     *
     * @param slot pod slot.
     */
    public synchronized void forgetPod(final int slot) {
        final int w = slot >>> 6;
        final long keep = ~(1L << slot);
        for (int e = 0; e <= mask; e++) {
            pods[e * 4 + w] &= keep;
        }
    }

    /**
     * @return entries in the table.
     */
    public int capacity() {
        return mask + 1;
    }

    /**
     * @return live entries replaced because their probe window was full.
     */
    public synchronized long evictions() {
        return evictions;
    }

    /**
     * @return picks recorded.
     */
    public synchronized long records() {
        return records;
    }
}
