package io.kvidx.routing;

import java.util.Arrays;
import java.util.Objects;

/**
 * Everything one decision reads and writes: the request's slots, the candidate set, score buffers, a random
 * source, an index cursor and the resulting {@link RoutingPlan}. Created once per routing thread (see
 * {@link Router#newContext()}) and reused for every decision, so a decision allocates nothing.
 *
 * <p>Candidates are a 256-bit bitmap of pod slots: a selector starts from the registry's pods minus the
 * exclusions (pods that failed this request), filters remove pods, scorers and pickers iterate what is left.
 *
 * <p><b>Note:</b> not thread safe: one context per thread.
 */
public final class RoutingContext {
    /** Token ids at each end of a prompt that {@link #requestFingerprint()} reads. */
    public static final int FINGERPRINT_TOKENS = 64;

    private final Object[] values;
    private final long[] candidates = new long[4];
    private final long[] excluded = new long[4];
    private final double[] totals = new double[PodRegistry.MAX_PODS];
    private final double[] scratch = new double[PodRegistry.MAX_PODS];
    private final PodIndex.Cursor cursor;
    private final long[] probeWords = new long[4];
    private final int[] probeDepths = new int[PodRegistry.MAX_PODS];
    private final RoutingPlan plan = new RoutingPlan();
    private long random;
    private int candidateCount;
    private final int[] candidateList = new int[PodRegistry.MAX_PODS];
    private boolean listStale = true;
    boolean lastFallback;
    private String fallbackScorer;
    private long requestNumber;

    /**
     * @param cursor the index cursor this context queries with (may be null when no plugin needs the index).
     * @param seed   seed of the context's random source (tie-breaks, weighted picks).
     */
    public RoutingContext(final PodIndex.Cursor cursor, final long seed) {
        this.cursor = cursor;
        this.random = seed == 0 ? 0x9E3779B97F4A7C15L : seed;
        Objects.requireNonNull(Slots.TOKENS, "standard slots");
        this.values = new Object[Slot.upperBound()];
    }

    /**
     * @param slot a slot.
     * @param <T>  value type.
     * @return the context's value for the slot, created on first use (so first decisions may allocate).
     */
    @SuppressWarnings("unchecked")
    public <T> T get(final Slot<T> slot) {
        final int id = slot.id();
        if (id >= values.length) {
            throw new IllegalArgumentException("slot " + slot + " was created after this context");
        }
        Object v = values[id];
        if (v == null) {
            v = slot.newValue();
            values[id] = v;
        }
        return (T) v;
    }

    /**
     * Creates the values of these slots now, so that no decision allocates them later.
     *
     * @param slots slots to create.
     * @return this.
     */
    public RoutingContext preallocate(final Iterable<Slot<?>> slots) {
        for (final Slot<?> s : slots) {
            get(s);
        }
        return this;
    }

    /**
     * Starts a new request: forgets its tokens, keys, metadata and exclusions.
     *
     * @return this.
     */
    public RoutingContext reset() {
        requestNumber++;
        request().clear();
        tokens().clear();
        get(Slots.BLOCK_KEYS).length(0);
        get(Slots.PREFILL_PICK).slot(RoutingPlan.NO_POD);
        Arrays.fill(excluded, 0L);
        return this;
    }

    /**
     * @return which request the context holds: bumped by every {@link #reset()}, so that a plugin that works once per
     * request (a network lookup) can tell a replan of the same request from the next request.
     */
    public long requestNumber() {
        return requestNumber;
    }

    /**
     * @return the request's metadata slot.
     */
    public RequestMeta request() {
        return get(Slots.REQUEST);
    }

    /**
     * @return the request's token slot.
     */
    public TokenIds tokens() {
        return get(Slots.TOKENS);
    }

    /**
     * Sets the request's token ids.
     *
     * @param ids    token ids.
     * @param offset first.
     * @param length count.
     * @return this.
     */
    public RoutingContext tokens(final int[] ids, final int offset, final int length) {
        tokens().set(ids, offset, length);
        return this;
    }

    /**
     * Sets the request's block keys directly (for profiles that take keys from the request).
     *
     * @param keys   keys.
     * @param offset first.
     * @param length count.
     * @return this.
     */
    public RoutingContext keys(final long[] keys, final int offset, final int length) {
        get(Slots.BLOCK_KEYS).set(keys, offset, length);
        return this;
    }

    /**
     * A hash of the request's prompt, the same in every process for the same prompt: of its last block key and the
     * number of keys when the request has keys (router keys chain over the whole prefix), else of its token ids (the
     * first and the last {@value #FINGERPRINT_TOKENS} and the count). Replicas that see the same scores break ties
     * alike with it. Allocation-free.
     *
     * @return the fingerprint, or 0 when the request has neither keys nor tokens (yet).
     */
    public long requestFingerprint() {
        final BlockKeys k = get(Slots.BLOCK_KEYS);
        final int nk = k.length();
        if (nk > 0) {
            return mix(k.keys()[nk - 1] ^ mix(nk)) | 1L;
        }
        final TokenIds t = tokens();
        final int n = t.length();
        if (n == 0) {
            return 0;
        }
        final int[] ids = t.ids();
        long h = mix(n);
        final int head = Math.min(n, FINGERPRINT_TOKENS);
        for (int i = 0; i < head; i++) {
            h = (h ^ ids[i]) * 0x100000001b3L;
        }
        for (int i = Math.max(head, n - FINGERPRINT_TOKENS); i < n; i++) {
            h = (h ^ ids[i]) * 0x100000001b3L;
        }
        return mix(h) | 1L;
    }

    /**
     * Keeps a pod out of this request's candidates (e.g. after it failed to serve it).
     *
     * @param slot pod slot.
     */
    public void exclude(final int slot) {
        excluded[slot >>> 6] |= 1L << slot;
    }

    /**
     * @param slot pod slot.
     * @return true when excluded.
     */
    public boolean isExcluded(final int slot) {
        return (excluded[slot >>> 6] & (1L << slot)) != 0;
    }

    void beginSelection(final PodRegistry registry) {
        int n = 0;
        for (int w = 0; w < 4; w++) {
            final long bits = registry.registeredWord(w) & ~excluded[w];
            candidates[w] = bits;
            n += Long.bitCount(bits);
        }
        candidateCount = n;
        listStale = true;
    }

    /**
     * Makes the dense candidate list current (after filters removed pods) for iteration with
     * {@link #candidateSlot(int)}: {@code for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) { int s =
     * ctx.candidateSlot(ci); ... }}. Scorers and pickers iterate this way; filters use {@link #nextCandidate}.
     *
     * @return the number of candidates.
     */
    public int sealCandidates() {
        if (listStale) {
            int k = 0;
            for (int w = 0; w < 4; w++) {
                long bits = candidates[w];
                while (bits != 0) {
                    candidateList[k++] = (w << 6) + Long.numberOfTrailingZeros(bits);
                    bits &= bits - 1;
                }
            }
            listStale = false;
        }
        return candidateCount;
    }

    /**
     * @param i index in [0, {@link #sealCandidates()}).
     * @return the i-th candidate in slot order (valid until a candidate is removed).
     */
    public int candidateSlot(final int i) {
        return candidateList[i];
    }

    /**
     * @return number of candidates left.
     */
    public int candidateCount() {
        return candidateCount;
    }

    /**
     * @param word 0..3.
     * @return that word of the candidate bitmap.
     */
    public long candidateWord(final int word) {
        return candidates[word];
    }

    /**
     * @return the candidate bitmap (four words; read only for plugins).
     */
    public long[] candidateWords() {
        return candidates;
    }

    /**
     * @param slot pod slot.
     * @return true when still a candidate.
     */
    public boolean isCandidate(final int slot) {
        return (candidates[slot >>> 6] & (1L << slot)) != 0;
    }

    /**
     * Removes a candidate (no-op when it is not one).
     *
     * @param slot pod slot.
     */
    public void removeCandidate(final int slot) {
        final long bit = 1L << slot;
        final int w = slot >>> 6;
        if ((candidates[w] & bit) != 0) {
            candidates[w] &= ~bit;
            candidateCount--;
            listStale = true;
        }
    }

    /**
     * @param start a slot in [0, 256).
     * @return the first candidate at or after {@code start}, or -1. Iterate with
     * {@code for (int s = ctx.nextCandidate(0); s >= 0; s = ctx.nextCandidate(s + 1))}.
     */
    public int nextCandidate(final int start) {
        if (start >= PodRegistry.MAX_PODS) {
            return -1;
        }
        int w = start >>> 6;
        long bits = candidates[w] & (-1L << start);
        while (true) {
            if (bits != 0) {
                return (w << 6) + Long.numberOfTrailingZeros(bits);
            }
            if (++w == 4) {
                return -1;
            }
            bits = candidates[w];
        }
    }

    /**
     * @param k index in [0, candidateCount()).
     * @return the k-th candidate in slot order.
     */
    public int candidateAt(final int k) {
        if (k < 0 || k >= candidateCount) {
            throw new IllegalArgumentException("candidate index " + k + " outside [0, " + candidateCount + ")");
        }
        sealCandidates();
        return candidateList[k];
    }

    /**
     * Called by a scorer that has no answer for this request (e.g. a remote lookup timed out or failed): the selector
     * stops scoring and picks with the profile's fallback picker, as when the index is unavailable, counting it in
     * {@link RoutingCounters#fallbacks()} and {@link RoutingCounters#scorerFallbacks()}.
     *
     * @param scorer the scorer's name (kept by reference; allocation-free).
     */
    public void fallBack(final String scorer) {
        fallbackScorer = scorer;
    }

    /**
     * @return the name of the scorer that asked for the fallback picker in the current scoring pass, or null.
     */
    public String fallbackScorer() {
        return fallbackScorer;
    }

    void clearFallback() {
        fallbackScorer = null;
    }

    /**
     * @return the index cursor (null when the context was made without an index).
     */
    public PodIndex.Cursor cursor() {
        return cursor;
    }

    /**
     * @return weighted score totals by slot.
     */
    double[] totals() {
        return totals;
    }

    double[] scratch() {
        return scratch;
    }

    long[] probeWords() {
        return probeWords;
    }

    int[] probeDepths() {
        return probeDepths;
    }

    /**
     * @return the plan of the last decision.
     */
    public RoutingPlan plan() {
        return plan;
    }

    /**
     * @return a pseudo-random long (xorshift64*, per context).
     */
    public long nextRandomLong() {
        long x = random;
        x ^= x >>> 12;
        x ^= x << 25;
        x ^= x >>> 27;
        random = x;
        return x * 0x2545F4914F6CDD1DL;
    }

    /**
     * @param bound exclusive bound, > 0.
     * @return a pseudo-random int in [0, bound).
     */
    public int nextRandomInt(final int bound) {
        return (int) (((nextRandomLong() >>> 33) * bound) >>> 31);
    }

    /**
     * @return a pseudo-random double in [0, 1).
     */
    public double nextRandomDouble() {
        return (nextRandomLong() >>> 11) * 0x1.0p-53;
    }

    /**
     * Allocation-free 64-bit hash of a string (FNV-1a over its chars, then a finaliser), for session and hash keys.
     *
     * @param s a string.
     * @return its hash.
     */
    public static long hash(final CharSequence s) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0, n = s.length(); i < n; i++) {
            h ^= s.charAt(i);
            h *= 0x100000001b3L;
        }
        return mix(h);
    }

    /**
     * @param x a value.
     * @return a well-mixed 64-bit hash of it (splitmix64 finaliser).
     */
    public static long mix(final long x) {
        long z = x + 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
