package io.kvidx.client.index;

import io.kvidx.ffm.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

/**
 * The read bound of a reader of the shared files (an {@link IndexReader}, a
 * {@link io.kvidx.client.tiers.TierMapReader}): how long a read (a lookup, a query, a pod table entry, a tier map
 * entry) waits for the writer before it gives up, and whether the writer's heartbeat has stopped, which tells a hung
 * or dead writer from a busy one. A read that finds its {@link Seqlock} odd (or moved under it) spins, and every
 * {@value #SPINS_PER_CLOCK_CHECK} spins asks this class: the only place a read looks at the clock.
 *
 * <p>Two faces of one wait: {@link #check} throws ({@link StaleWriterException}, {@link IndexBusyException}), for
 * the index; {@link #poll} returns {@link #STALE} or {@link #BUSY} instead, for readers that answer with codes (the
 * tier map). Both count the reads that gave up at the bound.
 *
 * <p><b>Note:</b> thread safe; the busy count is the only state it writes, and only when a read gives up.
 */
public final class ReadWait {
    /** Spins between two clock readings while a reader waits for the writer (a power of two): about 1-3 us. */
    public static final int SPINS_PER_CLOCK_CHECK = 64;
    /** {@link #poll} result: the read bound has passed with the writer alive; give up, busy. */
    public static final long BUSY = -1;
    /** {@link #poll} result: the writer's heartbeat has stopped (it died or hung mid-change); give up, stale. */
    public static final long STALE = -2;

    private static final VarHandle LONG = Layouts.LONG;
    /** Wait starts are counted from here, so that they are never negative (negative results are outcomes). */
    private static final long ORIGIN_NS = System.nanoTime();

    /** The index mapping (for the heartbeat); null when {@link #writerStale} answers instead. */
    private final MemorySegment segment;
    private final Path path;
    private final long heartbeatTimeoutMs;
    /** Whether the writer is stale, when asked of someone else (the tier map asks the index); else null. */
    private final BooleanSupplier writerStale;
    private final long readBoundNs;
    /** Reads that gave up at the read bound; touched only then. */
    private final LongAdder busy = new LongAdder();

    /**
     * The index reader's wait: the writer is stale when the file's heartbeat is older than the timeout.
     *
     * @param segment            the reader's mapping (for the heartbeat).
     * @param path               the mapped file, for messages.
     * @param heartbeatTimeoutMs heartbeat age beyond which the writer is stale; 0 never.
     * @param readBoundNs        the read bound, &gt; 0.
     */
    ReadWait(final MemorySegment segment, final Path path, final long heartbeatTimeoutMs, final long readBoundNs) {
        this.segment = segment;
        this.path = path;
        this.heartbeatTimeoutMs = heartbeatTimeoutMs;
        this.writerStale = null;
        this.readBoundNs = readBoundNs;
    }

    /**
     * A wait whose writer staleness is asked of a supplier: a file without a heartbeat of its own (the tier map,
     * whose writer is the index's, {@link IndexReader#isWriterStale}). Use {@link #poll}.
     *
     * @param readBoundNs the read bound, &gt; 0.
     * @param writerStale whether the writer's heartbeat has stopped; asked once per clock check of a waiting read.
     */
    public ReadWait(final long readBoundNs, final BooleanSupplier writerStale) {
        this.segment = null;
        this.path = null;
        this.heartbeatTimeoutMs = 0;
        this.writerStale = writerStale;
        this.readBoundNs = readBoundNs;
    }

    /**
     * Called every {@value #SPINS_PER_CLOCK_CHECK} spins of a reader waiting for the writer (a seqlock odd or moved
     * under it): the only place a read looks at the clock. The first call starts the wait's clock; a later one gives
     * up once the read bound has passed. The writer's heartbeat is asked first, at every call.
     *
     * @param waitStartNs the wait's start as returned by the previous call (ignored by the first).
     * @param spins       spins so far, a multiple of {@value #SPINS_PER_CLOCK_CHECK}.
     * @return the wait's start (&gt;= 0: keep spinning), or {@link #STALE} or {@link #BUSY} (counted): give up.
     */
    public long poll(final long waitStartNs, final int spins) {
        final long now = System.nanoTime() - ORIGIN_NS;
        if (isWriterStale()) {
            return STALE;
        }
        if (spins == SPINS_PER_CLOCK_CHECK) {
            return now;
        }
        if (now - waitStartNs < readBoundNs) {
            return waitStartNs;
        }
        busy.increment();
        return BUSY;
    }

    /**
     * {@link #poll} that throws where it gives up.
     *
     * @param waitStartNs the wait's start as returned by the previous call (ignored by the first).
     * @param spins       spins so far, a multiple of {@value #SPINS_PER_CLOCK_CHECK}.
     * @param shard       the shard waited for, or -1.
     * @param slot        the pod slot waited for, or -1.
     * @return the wait's start.
     * @throws StaleWriterException when the writer's heartbeat has stopped: it died mid-change.
     * @throws IndexBusyException   when the read bound has passed with the writer alive.
     */
    long check(final long waitStartNs, final int spins, final int shard, final int slot) {
        final long start = poll(waitStartNs, spins);
        if (start >= 0) {
            return start;
        }
        final String what = (shard >= 0 ? "shard " + shard : "pod table entry " + slot) + " of " + path;
        if (start == STALE) {
            throw new StaleWriterException(what + " stays locked and the writer's heartbeat stopped "
                + heartbeatAgeMs() + " ms ago");
        }
        final long waitedNs = System.nanoTime() - ORIGIN_NS - waitStartNs;
        throw new IndexBusyException(what + " stayed locked or kept changing for " + waitedNs / 1_000
            + " us (read bound " + readBoundNs / 1_000 + " us); the writer is alive (heartbeat " + heartbeatAgeMs()
            + " ms ago)");
    }

    /** See {@link IndexReader#heartbeatAgeMs()}; the index's wait only. */
    long heartbeatAgeMs() {
        return System.currentTimeMillis() - (long) LONG.getAcquire(segment, (long) IndexDescriptor.HEARTBEAT_OFFSET);
    }

    /**
     * @return true when the writer's heartbeat has stopped: older than the timeout (the index's wait), or as the
     * supplier says.
     */
    public boolean isWriterStale() {
        final BooleanSupplier stale = writerStale;
        if (stale != null) {
            return stale.getAsBoolean();
        }
        final long timeout = heartbeatTimeoutMs;
        return timeout > 0 && heartbeatAgeMs() > timeout;
    }

    /**
     * @return reads that gave up at the read bound.
     */
    public long busyCount() {
        return busy.sum();
    }
}
