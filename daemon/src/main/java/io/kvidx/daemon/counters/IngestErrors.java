package io.kvidx.daemon.counters;

import org.agrona.collections.LongHashSet;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.errors.DistinctErrorLog;
import org.agrona.concurrent.errors.ErrorLogReader;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.function.Supplier;

/**
 * The daemon's distinct error log. Each problem kind is logged once per pod (the first time it happens) to the
 * log stream and recorded in an Agrona {@link DistinctErrorLog}, which keeps one entry per distinct error with
 * its count and first/last times; counters count every occurrence.
 *
 * <p><b>Note:</b> thread safe.
 */
public final class IngestErrors {
    /** Default size of the distinct error log buffer. */
    public static final int ERROR_LOG_LENGTH_DEFAULT = 1 << 20;

    private final LongHashSet seen = new LongHashSet();
    private final DistinctErrorLog log;
    private final AtomicBuffer buffer;
    private final PrintStream out;

    /**
     * @param out where first occurrences are printed (null: nowhere).
     */
    public IngestErrors(final PrintStream out) {
        this.buffer = new UnsafeBuffer(ByteBuffer.allocateDirect(ERROR_LOG_LENGTH_DEFAULT));
        this.log = new DistinctErrorLog(buffer, SystemEpochClock.INSTANCE);
        this.out = out;
    }

    /**
     * Reports a problem; only its first occurrence for the (kind, pod) pair is logged. The message supplier runs
     * only then, so the common path allocates nothing.
     *
     * @param kind    problem kind (e.g. a counter type's id).
     * @param pod     pod number, or -1 when not pod specific.
     * @param message describes the problem.
     * @return true when this was the first occurrence (and was logged).
     */
    public boolean report(final int kind, final int pod, final Supplier<String> message) {
        final long key = ((long) kind << 32) | (pod & 0xFFFF_FFFFL);
        synchronized (seen) {
            if (!seen.add(key)) {
                return false;
            }
        }
        final String text = message.get();
        log.record(new IngestProblem(text));
        if (out != null) {
            out.println("kvidx: " + text + " (logged once; see counters)");
        }
        return true;
    }

    /**
     * Forgets the pod's logged problems (after a reset or clear, so that a recurrence is logged again).
     *
     * @param kind problem kind.
     * @param pod  pod number.
     */
    public void forget(final int kind, final int pod) {
        synchronized (seen) {
            seen.remove(((long) kind << 32) | (pod & 0xFFFF_FFFFL));
        }
    }

    /**
     * @return number of distinct errors in the log.
     */
    public int distinctCount() {
        return ErrorLogReader.read(buffer, (count, first, last, text) -> { });
    }

    /**
     * @return the log's entries as text.
     */
    public String dump() {
        final StringBuilder b = new StringBuilder();
        ErrorLogReader.read(buffer, (count, first, last, text) -> b.append(count).append("x ").append(text)
            .append('\n'));
        return b.toString();
    }

    /**
     * A logged ingestion problem (no stack trace: the message says it all).
     */
    static final class IngestProblem extends RuntimeException {
        private static final long serialVersionUID = 1L;

        IngestProblem(final String message) {
            super(message, null, false, false);
        }
    }
}
