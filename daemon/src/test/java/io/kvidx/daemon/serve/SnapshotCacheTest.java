package io.kvidx.daemon.serve;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

/** /dump's snapshots: shared while taken, kept for the interval, a failed one not kept. */
class SnapshotCacheTest {
    @Test
    void shouldTakeAtMostOneSnapshotPerInterval() {
        final AtomicLong now = new AtomicLong(1_000);
        final AtomicInteger taken = new AtomicInteger();
        final CompletableFuture<byte[]>[] last = new CompletableFuture[1];
        final SnapshotCache cache = new SnapshotCache(() -> {
            taken.incrementAndGet();
            last[0] = new CompletableFuture<>();
            return last[0];
        }, 10_000, now::get);
        final CompletableFuture<byte[]> first = cache.get();
        now.addAndGet(20_000);
        assertSame(first, cache.get(), "callers while it is taken share it, however long it takes");
        first.complete(new byte[] {1});
        assertNotSame(first, cache.get(), "done and older than the interval: a new one");
        assertEquals(2, taken.get());
        last[0].complete(new byte[] {2});
        final CompletableFuture<byte[]> second = last[0];
        now.addAndGet(9_999);
        for (int i = 0; i < 100; i++) {
            assertSame(second, cache.get(), "kept for the interval");
        }
        assertEquals(2, cache.taken());
        now.addAndGet(1);
        final CompletableFuture<byte[]> third = cache.get();
        third.completeExceptionally(new IllegalStateException("writer gone"));
        assertNotSame(third, cache.get(), "a failed snapshot is not kept");
        assertEquals(4, cache.taken());
    }
}
