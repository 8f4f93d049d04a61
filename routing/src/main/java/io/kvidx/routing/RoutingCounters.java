package io.kvidx.routing;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexException;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of one selector: decisions, fallbacks (index missing or stale, or a scorer without an answer), index
 * errors during a decision (of which: shards busy past the read bound), scorer fallbacks, pod table re-syncs, and
 * decisions that found no candidate.
 *
 * <p><b>Note:</b> thread safe; incremented by every thread deciding through the selector.
 */
public final class RoutingCounters {
    private final LongAdder decisions = new LongAdder();
    private final AtomicLong fallbacks = new AtomicLong();
    private final AtomicLong indexErrors = new AtomicLong();
    private final AtomicLong noCandidate = new AtomicLong();
    private final AtomicLong indexBusy = new AtomicLong();
    private final AtomicLong podTableResyncs = new AtomicLong();
    private final AtomicLong scorerFallbacks = new AtomicLong();

    void decision() {
        decisions.increment();
    }

    void fallback() {
        fallbacks.getAndIncrement();
    }

    void indexError(final IndexException ex) {
        indexErrors.getAndIncrement();
        if (ex instanceof IndexBusyException) {
            indexBusy.getAndIncrement();
        }
    }

    void scorerFallback() {
        scorerFallbacks.getAndIncrement();
    }

    void podTableResync() {
        podTableResyncs.getAndIncrement();
    }

    void countNoCandidate() {
        noCandidate.getAndIncrement();
    }

    /**
     * @return decisions made.
     */
    public long decisions() {
        return decisions.sum();
    }

    /**
     * @return decisions made by the fallback picker.
     */
    public long fallbacks() {
        return fallbacks.get();
    }

    /**
     * @return index failures met during a decision (each also counts as a fallback).
     */
    public long indexErrors() {
        return indexErrors.get();
    }

    /**
     * @return index errors that were a shard (or pod table entry) busy past the reader's read bound.
     */
    public long indexBusy() {
        return indexBusy.get();
    }

    /**
     * @return decisions where a scorer had no answer ({@link RoutingContext#fallBack(String)}; each also counts as a
     * fallback).
     */
    public long scorerFallbacks() {
        return scorerFallbacks.get();
    }

    /**
     * @return passes that found the index's pod table changed since the registry learnt it (the registry re-synced
     * and the pass ran again).
     */
    public long podTableResyncs() {
        return podTableResyncs.get();
    }

    /**
     * @return decisions where no candidate survived the filters.
     */
    public long noCandidates() {
        return noCandidate.get();
    }

    @Override
    public String toString() {
        return "decisions=" + decisions() + " fallbacks=" + fallbacks() + " indexErrors=" + indexErrors()
            + " indexBusy=" + indexBusy() + " scorerFallbacks=" + scorerFallbacks() + " podTableResyncs="
            + podTableResyncs() + " noCandidate="
            + noCandidates();
    }
}
