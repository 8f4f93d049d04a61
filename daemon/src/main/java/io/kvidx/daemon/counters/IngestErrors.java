package io.kvidx.daemon.counters;

import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.errors.DistinctErrorLog;
import org.agrona.concurrent.errors.ErrorLogReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.function.Supplier;

/**
 * The daemon's distinct error log: one entry per (problem kind, pod), with its count and first and last times, in
 * an Agrona {@link DistinctErrorLog}. A running daemon keeps it in the cell's {@code errors} file, which
 * {@code kvidx errors} prints. The first occurrence of each (kind, pod) is also printed to the log stream; counters
 * count every occurrence. Printing goes through SLF4J (the daemon's one logging API).
 *
 * <p><b>Note:</b> thread safe: any daemon thread may report.
 */
public final class IngestErrors {
    /** Default size of the distinct error log buffer. */
    public static final int ERROR_LOG_LENGTH_DEFAULT = 1 << 20;

    private final Long2ObjectHashMap<IngestProblem> seen = new Long2ObjectHashMap<>();
    private final DistinctErrorLog log;
    private final AtomicBuffer buffer;
    private static final Logger LOG = LoggerFactory.getLogger(IngestErrors.class);

    /**
     * An error log in a process-local buffer (tests and tools).
     */
    public IngestErrors() {
        this(new UnsafeBuffer(ByteBuffer.allocateDirect(ERROR_LOG_LENGTH_DEFAULT)));
    }

    /**
     * @param buffer the log's buffer, e.g. the cell's error log file.
     */
    public IngestErrors(final AtomicBuffer buffer) {
        this.buffer = buffer;
        this.log = new DistinctErrorLog(buffer, SystemEpochClock.INSTANCE);
    }

    /**
     * Reports a problem: every occurrence is counted in the log's (kind, pod) entry; the first is also printed. The
     * message supplier runs only for the first, so a repeated problem allocates nothing.
     *
     * @param kind    problem kind (e.g. a counter type's id).
     * @param pod     pod number, or -1 when not pod specific.
     * @param message describes the problem.
     * @return true when this was the first occurrence (and was printed).
     */
    public boolean report(final int kind, final int pod, final Supplier<String> message) {
        final long key = ((long) kind << 32) | (pod & 0xFFFF_FFFFL);
        IngestProblem problem;
        synchronized (seen) {
            problem = seen.get(key);
        }
        if (problem != null) {
            log.record(problem);
            return false;
        }
        final String text = message.get();
        synchronized (seen) {
            problem = seen.get(key);
            if (problem == null) {
                problem = new IngestProblem(text);
                seen.put(key, problem);
            } else {
                log.record(problem);
                return false;
            }
        }
        log.record(problem);
        LOG.warn("{} (logged once; `kvidx errors` counts recurrences)", text);
        return true;
    }

    /**
     * Forgets the pod's logged problem (after a reset or clear, so that a recurrence is printed again, as a new
     * entry).
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
     * Forgets every logged problem of a pod number (its pod is gone and the number may go to another pod, whose
     * problems are then printed as its own). Walks the problems seen; for a pod's end, not a hot path.
     *
     * @param pod pod number.
     */
    public void forgetPod(final int pod) {
        synchronized (seen) {
            final var keys = seen.keySet().iterator();
            while (keys.hasNext()) {
                if ((int) keys.nextLong() == pod) {
                    keys.remove();
                }
            }
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
     * A logged problem (no stack trace: the message says it all).
     */
    public static final class IngestProblem extends RuntimeException {
        private static final long serialVersionUID = 1L;

        IngestProblem(final String message) {
            super(message, null, false, false);
        }
    }
}
