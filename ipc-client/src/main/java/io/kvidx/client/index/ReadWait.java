package io.kvidx.client.index;

import io.kvidx.ffm.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.concurrent.atomic.LongAdder;

/**
 * The read bound of an {@link IndexReader}: how long a read (a lookup, a query, a pod table entry) waits for the
 * writer before it gives up, and the writer's heartbeat that tells a hung or dead writer from a busy one. A read
 * that finds a shard or pod table entry locked (or changed under it) spins, and every
 * {@value IndexReader#SPINS_PER_CLOCK_CHECK} spins calls {@link #check}: the only place a read looks at the clock.
 *
 * <p><b>Note:</b> thread safe; the busy count is the only state it writes, and only when a read gives up.
 */
final class ReadWait {
    private static final VarHandle LONG = Layouts.LONG;

    private final MemorySegment segment;
    private final Path path;
    private final long heartbeatTimeoutMs;
    private final long readBoundNs;
    /** Reads that gave up at the read bound; touched only then. */
    private final LongAdder busy = new LongAdder();

    /**
     * @param segment            the reader's mapping (for the heartbeat).
     * @param path               the mapped file, for messages.
     * @param heartbeatTimeoutMs heartbeat age beyond which the writer is stale; 0 never.
     * @param readBoundNs        the read bound, &gt; 0.
     */
    ReadWait(final MemorySegment segment, final Path path, final long heartbeatTimeoutMs, final long readBoundNs) {
        this.segment = segment;
        this.path = path;
        this.heartbeatTimeoutMs = heartbeatTimeoutMs;
        this.readBoundNs = readBoundNs;
    }

    /**
     * Called every {@value IndexReader#SPINS_PER_CLOCK_CHECK} spins of a reader waiting for the writer (a shard
     * locked or changed under it, or a pod table entry being changed): the only place a read looks at the clock.
     * The first call starts the wait's clock; a later one gives up once the read bound has passed.
     *
     * @param waitStartNs the wait's start as returned by the previous call (ignored by the first).
     * @param spins       spins so far, a multiple of {@value IndexReader#SPINS_PER_CLOCK_CHECK}.
     * @param shard       the shard waited for, or -1.
     * @param slot        the pod slot waited for, or -1.
     * @return the wait's start.
     * @throws StaleWriterException when the writer's heartbeat has stopped: it died mid-change.
     * @throws IndexBusyException   when the read bound has passed with the writer alive.
     */
    long check(final long waitStartNs, final int spins, final int shard, final int slot) {
        final long now = System.nanoTime();
        if (isWriterStale()) {
            throw new StaleWriterException((shard >= 0 ? "shard " + shard : "pod table entry " + slot) + " of "
                + path + " stays locked and the writer's heartbeat stopped " + heartbeatAgeMs() + " ms ago");
        }
        if (spins == IndexReader.SPINS_PER_CLOCK_CHECK) {
            return now;
        }
        final long waitedNs = now - waitStartNs;
        if (waitedNs < readBoundNs) {
            return waitStartNs;
        }
        busy.increment();
        throw new IndexBusyException((shard >= 0 ? "shard " + shard : "pod table entry " + slot) + " of "
            + path + " stayed locked or kept changing for " + waitedNs / 1_000 + " us (read bound "
            + readBoundNs / 1_000 + " us); the writer is alive (heartbeat " + heartbeatAgeMs() + " ms ago)");
    }

    /** See {@link IndexReader#heartbeatAgeMs()}. */
    long heartbeatAgeMs() {
        return System.currentTimeMillis() - (long) LONG.getAcquire(segment, (long) IndexDescriptor.HEARTBEAT_OFFSET);
    }

    /** See {@link IndexReader#isWriterStale()}. */
    boolean isWriterStale() {
        final long timeout = heartbeatTimeoutMs;
        return timeout > 0 && heartbeatAgeMs() > timeout;
    }

    /** See {@link IndexReader#busyCount()}. */
    long busyCount() {
        return busy.sum();
    }
}
