package io.kvidx.bench.trace;

import org.agrona.collections.Long2LongHashMap;

/**
 * A simulated inference engine's prefix cache: a fixed budget of blocks, least recently used evicted first, the
 * way vLLM's free-block queue behaves once requests finish. Serving a request reuses the longest cached prefix of
 * its blocks, stores the others (evicting as needed) and leaves the request's blocks most recently used with the
 * first block newest, so a chain is evicted from its tail (vLLM frees a request's blocks in reverse order).
 * Requests finish before the next one starts (no blocks pinned by running requests).
 *
 * <p>After {@link #serve} the blocks stored and evicted by it can be read back ({@link #storedCount()},
 * {@link #removedCount()}), which is what the engine's BlockStored / BlockRemoved events carry.
 *
 * <p><b>Note:</b> not thread safe; one simulation thread.
 */
public final class SimEngine {
    private static final int NIL = -1;

    private final int capacity;
    private final long[] engineHash;
    private final long[] routerKey;
    private final int[] prev;
    private final int[] next;
    private final Long2LongHashMap slotOf;
    private int head = NIL;
    private int tail = NIL;
    private int used;
    private final int[] stored;
    private int storedCount;
    private final long[] removedEngine;
    private final long[] removedRouter;
    private int removedCount;
    private long hits;
    private long requested;
    private long evictions;

    /**
     * @param capacity block budget (LRU).
     * @param maxBlocks most blocks one request may have (at most the capacity).
     */
    public SimEngine(final int capacity, final int maxBlocks) {
        if (maxBlocks > capacity) {
            throw new IllegalArgumentException("a request of " + maxBlocks + " blocks does not fit a budget of "
                + capacity);
        }
        this.capacity = capacity;
        this.engineHash = new long[capacity];
        this.routerKey = new long[capacity];
        this.prev = new int[capacity];
        this.next = new int[capacity];
        this.slotOf = new Long2LongHashMap(capacity * 2, 0.65f, NIL);
        this.stored = new int[maxBlocks];
        this.removedEngine = new long[maxBlocks];
        this.removedRouter = new long[maxBlocks];
    }

    /**
     * @param hashes engine hashes of the request's blocks (chained).
     * @param n      number of blocks (at most maxBlocks).
     * @return how many leading blocks were already cached (the prefix hit).
     */
    public int cachedPrefix(final long[] hashes, final int n) {
        int d = 0;
        while (d < n && slotOf.get(hashes[d]) != NIL) {
            d++;
        }
        return d;
    }

    /**
     * Serves a request: reuses the cached prefix, stores the rest, evicts least recently used blocks.
     *
     * @param hashes engine hashes of the request's blocks.
     * @param keys   router keys of the same blocks (carried so evictions can name them).
     * @param n      number of blocks (at most maxBlocks).
     * @return the cached prefix length before serving (blocks reused).
     */
    public int serve(final long[] hashes, final long[] keys, final int n) {
        storedCount = 0;
        removedCount = 0;
        final int hit = cachedPrefix(hashes, n);
        for (int b = 0; b < n; b++) {
            int s = (int) slotOf.get(hashes[b]);
            if (s == NIL) {
                s = allocate();
                engineHash[s] = hashes[b];
                routerKey[s] = keys[b];
                slotOf.put(hashes[b], s);
                stored[storedCount++] = b;
            } else {
                unlink(s);
            }
            pushFront(s);
        }
        // Leave the request's first block most recently used: walk it back to front.
        for (int b = n - 1; b >= 0; b--) {
            final int s = (int) slotOf.get(hashes[b]);
            unlink(s);
            pushFront(s);
        }
        hits += hit;
        requested += n;
        return hit;
    }

    private int allocate() {
        if (used < capacity) {
            return used++;
        }
        final int victim = tail;
        unlink(victim);
        slotOf.remove(engineHash[victim]);
        removedEngine[removedCount] = engineHash[victim];
        removedRouter[removedCount] = routerKey[victim];
        removedCount++;
        evictions++;
        return victim;
    }

    private void unlink(final int s) {
        final int p = prev[s];
        final int q = next[s];
        if (p == NIL) {
            head = q;
        } else {
            next[p] = q;
        }
        if (q == NIL) {
            tail = p;
        } else {
            prev[q] = p;
        }
    }

    private void pushFront(final int s) {
        prev[s] = NIL;
        next[s] = head;
        if (head != NIL) {
            prev[head] = s;
        }
        head = s;
        if (tail == NIL) {
            tail = s;
        }
    }

    /** @return blocks the last {@link #serve} stored. */
    public int storedCount() {
        return storedCount;
    }

    /**
     * @param i index in [0, storedCount()).
     * @return position in the request of the i-th stored block (ascending).
     */
    public int stored(final int i) {
        return stored[i];
    }

    /** @return blocks the last {@link #serve} evicted. */
    public int removedCount() {
        return removedCount;
    }

    /** @return engine hashes of the evicted blocks (first {@link #removedCount()} valid). */
    public long[] removedEngineHashes() {
        return removedEngine;
    }

    /** @return router keys of the evicted blocks (first {@link #removedCount()} valid). */
    public long[] removedRouterKeys() {
        return removedRouter;
    }

    /** @return blocks held now. */
    public int size() {
        return slotOf.size();
    }

    /** @return block budget. */
    public int capacity() {
        return capacity;
    }

    /** @return prefix blocks reused over all requests served. */
    public long hits() {
        return hits;
    }

    /** @return blocks requested over all requests served. */
    public long requested() {
        return requested;
    }

    /** @return blocks evicted over all requests served. */
    public long evictions() {
        return evictions;
    }
}
