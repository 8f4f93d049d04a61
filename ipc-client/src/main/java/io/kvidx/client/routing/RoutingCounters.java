package io.kvidx.client.routing;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of one selector: decisions, fallbacks (index missing or stale), index errors during a decision, and
 * decisions that found no candidate.
 *
 * <p><b>Note:</b> thread safe; incremented by every thread deciding through the selector.
 */
public final class RoutingCounters {
    private final LongAdder decisions = new LongAdder();
    private final AtomicLong fallbacks = new AtomicLong();
    private final AtomicLong indexErrors = new AtomicLong();
    private final AtomicLong noCandidate = new AtomicLong();

    void decision() {
        decisions.increment();
    }

    void fallback() {
        fallbacks.getAndIncrement();
    }

    void indexError() {
        indexErrors.getAndIncrement();
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
     * @return decisions where no candidate survived the filters.
     */
    public long noCandidates() {
        return noCandidate.get();
    }

    @Override
    public String toString() {
        return "decisions=" + decisions() + " fallbacks=" + fallbacks() + " indexErrors=" + indexErrors()
            + " noCandidate=" + noCandidates();
    }
}
