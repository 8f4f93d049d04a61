package io.kvidx.daemon.serve;

import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * What {@code GET /dump} serves: one snapshot shared by every caller while it is taken, and kept for
 * {@code minIntervalMs} after it was taken, so that however often and however many clients ask, the writers take at
 * most one snapshot per interval (a snapshot of up to {@code snapshotMaxBytes} costs them a pass over the index).
 * A failed snapshot is not kept: the next caller starts another.
 *
 * <p><b>Note:</b> thread safe (event loops call {@link #get} concurrently; one lock, held only to read or swap the
 * current future, never while a snapshot is taken).
 */
final class SnapshotCache {
    private final Supplier<CompletableFuture<byte[]>> take;
    private final long minIntervalMs;
    private final LongSupplier clockMs;
    private CompletableFuture<byte[]> current;
    private long startedMs;
    private long taken;

    /**
     * @param take          takes a snapshot (never blocks).
     * @param minIntervalMs how long a snapshot is served after it was started.
     * @param clockMs       the clock.
     */
    SnapshotCache(final Supplier<CompletableFuture<byte[]>> take, final long minIntervalMs,
        final LongSupplier clockMs) {
        this.take = take;
        this.minIntervalMs = minIntervalMs;
        this.clockMs = clockMs;
    }

    /**
     * @return the snapshot in flight, the one kept, or a new one.
     */
    synchronized CompletableFuture<byte[]> get() {
        final long now = clockMs.getAsLong();
        final CompletableFuture<byte[]> c = current;
        if (c != null && (!c.isDone() || (!c.isCompletedExceptionally() && now - startedMs < minIntervalMs))) {
            return c;
        }
        current = take.get();
        startedMs = now;
        taken++;
        return current;
    }

    /**
     * @return snapshots started so far.
     */
    synchronized long taken() {
        return taken;
    }
}
