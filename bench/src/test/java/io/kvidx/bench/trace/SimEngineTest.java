package io.kvidx.bench.trace;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class SimEngineTest {
    private static final long[] NO_KEYS = new long[8];

    @Test
    void shouldReuseTheCachedPrefixAndStoreTheRest() {
        final SimEngine e = new SimEngine(4, 4);
        assertEquals(0, e.serve(new long[] {1, 2, 3}, NO_KEYS, 3));
        assertEquals(3, e.storedCount());
        assertEquals(2, e.serve(new long[] {1, 2, 4}, NO_KEYS, 3));
        assertEquals(1, e.storedCount());
        assertEquals(2, e.stored(0));
        assertEquals(0, e.removedCount());
        assertEquals(4, e.size());
        assertEquals(2, e.hits());
        assertEquals(6, e.requested());
    }

    @Test
    void shouldEvictTheLeastRecentlyUsedTailFirst() {
        final SimEngine e = new SimEngine(4, 4);
        e.serve(new long[] {1, 2, 3}, new long[] {11, 12, 13}, 3);
        e.serve(new long[] {1, 2, 4}, new long[] {11, 12, 14}, 3);
        // 3 was used least recently; within the last request the tail (4) is older than its prefix (1, 2).
        e.serve(new long[] {5, 6}, new long[] {15, 16}, 2);
        assertEquals(2, e.removedCount());
        assertEquals(3, e.removedEngineHashes()[0]);
        assertEquals(13, e.removedRouterKeys()[0]);
        assertEquals(4, e.removedEngineHashes()[1]);
        assertEquals(0, e.cachedPrefix(new long[] {3}, 1));
        assertEquals(2, e.cachedPrefix(new long[] {1, 2, 4}, 3));
        assertEquals(2, e.evictions());
    }
}
