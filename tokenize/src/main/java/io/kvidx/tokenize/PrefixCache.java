package io.kvidx.tokenize;

import io.kvidx.routing.TokenIds;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A bounded LRU cache of the token ids of text prefixes that end at a {@link PrefixBoundaries boundary} (right after
 * a special token such as {@code <|im_start|>} or {@code <|im_end|>}), in front of one {@link HfTokenizer}. A text
 * is encoded as the ids of its longest cached boundary prefix followed by the encoding of the rest, which equals the
 * encoding of the whole text (see {@link PrefixBoundaries} for why); multi-turn chats re-send their history, so most
 * of each request's text was tokenized before.
 *
 * <p>Entries form a tree: each holds one segment (the text from its parent's end to its own boundary, and that
 * segment's ids) and its parent, so a conversation's prefixes share storage. An entry is found by the prefix's
 * length and two 64-bit hashes of it, then checked against the text segment by segment: a hash collision is a miss
 * (counted in {@link #collisions()}), never wrong ids. A request inserts entries at the boundaries after its hit
 * (where boundaries lie closer together than 32 characters ({@code MIN_GAP_CHARS}), as {@code <|im_end|>\n<|im_start|>}
 * do, only the last of them, and none closer than that to the previous entry's end, so no entry is a mere
 * {@code <|im_start|>}), encoding each new segment on its own, so the work is one pass over the new text.
 * Every use touches the entry and then its ancestors, so an entry is always more recently used than its
 * descendants and the least recently used entry is a leaf: eviction frees memory and never strands a child.
 * Bounded by entries and by cached token ids; the cached text is kept too (about 4 characters per token in prose:
 * see docs/routing.md for the memory).
 *
 * <p><b>Note:</b> thread safe. The map is guarded by one lock held only for map operations (no tokenizing, no text
 * comparison under it), taken with a bounded wait of 50 µs ({@code LOCK_WAIT_NANOS}): when it is not acquired a lookup
 * falls back to encoding the whole text ({@link #busy()}) and an insertion is skipped, so no caller waits without
 * bound and the result is the same either way. The counters and sizes are read without the lock.
 */
public final class PrefixCache {
    /** Boundaries closer than this to the next one are not made entries (the next one is). */
    static final int MIN_GAP_CHARS = 32;
    /** Longest wait for the map's lock. */
    static final long LOCK_WAIT_NANOS = 50_000;

    private static final long H1_SEED = 0xCBF2_9CE4_8422_2325L;
    private static final long H1_PRIME = 0x0000_0100_0000_01B3L;
    private static final long H2_MULT = 0x9E37_79B9_7F4A_7C15L;

    private final HfTokenizer tokenizer;
    private final String[] boundaries;
    private final String firstChars;
    private final int maxEntries;
    private final long maxTokens;
    private final ReentrantLock lock = new ReentrantLock();
    /** Access-ordered; guarded by {@link #lock}. */
    private final LinkedHashMap<Key, Node> map = new LinkedHashMap<>(16, 0.75f, true);
    /** Token ids held by the entries in {@link #map}; written under {@link #lock}, read without it. */
    private volatile long cachedTokens;
    /** Characters held by the entries in {@link #map}; written under {@link #lock}, read without it. */
    private volatile long cachedChars;
    /** {@code map.size()}, written under {@link #lock}, read without it. */
    private volatile int entryCount;

    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder tokensSaved = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final LongAdder busy = new LongAdder();
    private final LongAdder skippedInserts = new LongAdder();
    private final LongAdder collisions = new LongAdder();

    /**
     * @param tokenizer  the tokenizer.
     * @param boundaries where its texts may be cut ({@link PrefixBoundaries#read}); must be enabled.
     * @param maxEntries entries kept at most (at least 1).
     * @param maxTokens  token ids kept at most (at least 1).
     */
    public PrefixCache(final HfTokenizer tokenizer, final PrefixBoundaries boundaries, final int maxEntries,
        final long maxTokens) {
        this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
        if (!boundaries.enabled()) {
            throw new IllegalArgumentException("no prefix cache for " + tokenizer.file() + ": "
                + boundaries.disabledReason());
        }
        if (maxEntries < 1 || maxTokens < 1) {
            throw new IllegalArgumentException("prefix cache bounds must be >= 1: entries " + maxEntries
                + ", tokens " + maxTokens);
        }
        this.boundaries = boundaries.tokens().toArray(String[]::new);
        final StringBuilder first = new StringBuilder();
        for (final String b : this.boundaries) {
            if (first.indexOf(b.substring(0, 1)) < 0) {
                first.append(b.charAt(0));
            }
        }
        this.firstChars = first.toString();
        this.maxEntries = maxEntries;
        this.maxTokens = maxTokens;
    }

    /**
     * Encodes text as {@link HfTokenizer#encode(String, boolean, TokenIds)} does, reusing and adding cached
     * prefixes.
     *
     * @param text             the text.
     * @param addSpecialTokens whether to add post-processor tokens (the cache exists only for tokenizers whose
     *                         post-processor adds none, so this changes nothing but is passed on).
     * @param out              receives the token ids.
     * @return the number of tokens.
     */
    public int encode(final String text, final boolean addSpecialTokens, final TokenIds out) {
        final int[] ends = boundaryEnds(text);
        final int n = ends.length;
        if (n == 0) {
            misses.increment();
            return tokenizer.encode(text, addSpecialTokens, out);
        }
        final Key[] keys = keys(text, ends);

        Node candidate = null;
        int candidateIndex = -1;
        if (!tryLock()) {
            busy.increment();
            return tokenizer.encode(text, addSpecialTokens, out);
        }
        try {
            for (int i = n - 1; i >= 0; i--) {
                final Node c = map.get(keys[i]);
                if (c != null) {
                    candidate = c;
                    candidateIndex = i;
                    touchChain(c);
                    break;
                }
            }
        } finally {
            lock.unlock();
        }
        Node hit = null;
        int next = 0;
        if (candidate != null) {
            if (candidate.matches(text)) {
                hit = candidate;
                next = candidateIndex + 1;
                hits.increment();
                tokensSaved.add(hit.tokens);
            } else {
                collisions.increment();
                misses.increment();
            }
        } else {
            misses.increment();
        }

        // Encode the rest, one segment per new entry, then the tail after the last boundary.
        final List<Node> added = new ArrayList<>();
        Node parent = hit;
        int start = hit == null ? 0 : hit.chars;
        int tokens = hit == null ? 0 : hit.tokens;
        for (int i = next; i < n; i++) {
            if (ends[i] - start < MIN_GAP_CHARS || i + 1 < n && ends[i + 1] - ends[i] < MIN_GAP_CHARS) {
                continue;
            }
            final String segment = text.substring(start, ends[i]);
            final int[] ids = tokenizer.encode(segment, addSpecialTokens);
            tokens += ids.length;
            parent = new Node(keys[i], parent, segment, ids, ends[i], tokens);
            added.add(parent);
            start = ends[i];
        }
        final int[] tail = start == text.length() ? new int[0]
            : tokenizer.encode(text.substring(start), addSpecialTokens);

        final int total = tokens + tail.length;
        final int[] buf = out.ensureCapacity(total);
        for (Node x = parent; x != null; x = x.parent) {
            System.arraycopy(x.ids, 0, buf, x.tokens - x.ids.length, x.ids.length);
        }
        System.arraycopy(tail, 0, buf, tokens, tail.length);
        out.length(total);

        if (!added.isEmpty()) {
            insert(hit, added);
        }
        return total;
    }

    private void insert(final Node hit, final List<Node> added) {
        if (!tryLock()) {
            skippedInserts.increment();
            return;
        }
        try {
            if (hit != null && map.get(hit.key) != hit) {
                return; // evicted (or replaced) meanwhile: its children would not be accounted for
            }
            Node deepest = hit;
            for (final Node a : added) {
                if (map.containsKey(a.key)) {
                    break; // inserted by another request meanwhile, or a colliding prefix: keep what is there
                }
                map.put(a.key, a);
                cachedTokens = cachedTokens + a.ids.length;
                cachedChars = cachedChars + a.segment.length();
                deepest = a;
            }
            if (deepest != null) {
                touchChain(deepest);
            }
            evict();
            entryCount = map.size();
        } finally {
            lock.unlock();
        }
    }

    /** Touches the ancestors of an entry just touched, nearest first, so each is more recently used than its
     * descendants. */
    private void touchChain(final Node node) {
        for (Node x = node.parent; x != null; x = x.parent) {
            map.get(x.key);
        }
    }

    private void evict() {
        final Iterator<Map.Entry<Key, Node>> it = map.entrySet().iterator();
        while ((map.size() > maxEntries || cachedTokens > maxTokens) && it.hasNext()) {
            final Node eldest = it.next().getValue();
            it.remove();
            cachedTokens = cachedTokens - eldest.ids.length;
            cachedChars = cachedChars - eldest.segment.length();
            evictions.increment();
        }
    }

    private boolean tryLock() {
        try {
            return lock.tryLock(LOCK_WAIT_NANOS, TimeUnit.NANOSECONDS);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** End offsets of the boundary tokens in the text, ascending. */
    int[] boundaryEnds(final String text) {
        int[] ends = new int[8];
        int n = 0;
        final int len = text.length();
        for (int i = 0; i < len; i++) {
            if (firstChars.indexOf(text.charAt(i)) < 0) {
                continue;
            }
            for (final String b : boundaries) {
                if (text.startsWith(b, i)) {
                    if (n == ends.length) {
                        ends = Arrays.copyOf(ends, n * 2);
                    }
                    ends[n++] = i + b.length();
                    i += b.length() - 1;
                    break;
                }
            }
        }
        return Arrays.copyOf(ends, n);
    }

    /** Keys of the prefixes ending at each boundary: length and two independent 64-bit hashes. */
    private static Key[] keys(final String text, final int[] ends) {
        final Key[] keys = new Key[ends.length];
        long h1 = H1_SEED;
        long h2 = 0;
        int pos = 0;
        for (int i = 0; i < ends.length; i++) {
            for (; pos < ends[i]; pos++) {
                final char c = text.charAt(pos);
                h1 = (h1 ^ c) * H1_PRIME;
                h2 = (h2 + c + 1) * H2_MULT;
                h2 ^= h2 >>> 29;
            }
            keys[i] = new Key(ends[i], h1, h2);
        }
        return keys;
    }

    /**
     * @return requests that reused a cached prefix.
     */
    public long hits() {
        return hits.sum();
    }

    /**
     * @return requests that found no cached prefix (including texts without a boundary).
     */
    public long misses() {
        return misses.sum();
    }

    /**
     * @return tokens taken from the cache instead of being tokenized.
     */
    public long tokensSaved() {
        return tokensSaved.sum();
    }

    /**
     * @return entries evicted to stay within the bounds.
     */
    public long evictions() {
        return evictions.sum();
    }

    /**
     * @return requests encoded without the cache because its lock was not acquired within 50 µs (each request
     *         counts once in hits, misses or busy).
     */
    public long busy() {
        return busy.sum();
    }

    /**
     * @return insertions skipped because the lock was not acquired in time.
     */
    public long skippedInserts() {
        return skippedInserts.sum();
    }

    /**
     * @return lookups whose key matched an entry of a different text (treated as misses).
     */
    public long collisions() {
        return collisions.sum();
    }

    /**
     * @return entries held now.
     */
    public int entries() {
        return entryCount;
    }

    /**
     * @return token ids held now.
     */
    public long cachedTokens() {
        return cachedTokens;
    }

    /**
     * @return text characters held now.
     */
    public long cachedChars() {
        return cachedChars;
    }

    /**
     * Token ids held by every entry still reachable, in the map or as an ancestor of one: equals
     * {@link #cachedTokens()} while eviction strands no child (the invariant the test checks).
     *
     * @return token ids reachable from the map.
     */
    long reachableTokens() {
        lock.lock();
        try {
            final Set<Node> seen = Collections.newSetFromMap(new IdentityHashMap<>());
            long sum = 0;
            for (final Node n : map.values()) {
                for (Node x = n; x != null && seen.add(x); x = x.parent) {
                    sum += x.ids.length;
                }
            }
            return sum;
        } finally {
            lock.unlock();
        }
    }

    /**
     * @return the entry bound.
     */
    public int maxEntries() {
        return maxEntries;
    }

    /**
     * @return the token bound.
     */
    public long maxTokens() {
        return maxTokens;
    }

    private record Key(int chars, long h1, long h2) {
    }

    /** One cached segment; immutable, so readers use it outside the lock. */
    private static final class Node {
        final Key key;
        final Node parent;
        final String segment;
        final int[] ids;
        /** Where the prefix ends (characters). */
        final int chars;
        /** Tokens in the prefix. */
        final int tokens;

        Node(final Key key, final Node parent, final String segment, final int[] ids, final int chars,
            final int tokens) {
            this.key = key;
            this.parent = parent;
            this.segment = segment;
            this.ids = ids;
            this.chars = chars;
            this.tokens = tokens;
        }

        boolean matches(final String text) {
            if (text.length() < chars) {
                return false;
            }
            for (Node x = this; x != null; x = x.parent) {
                if (!text.regionMatches(x.chars - x.segment.length(), x.segment, 0, x.segment.length())) {
                    return false;
                }
            }
            return true;
        }
    }
}
