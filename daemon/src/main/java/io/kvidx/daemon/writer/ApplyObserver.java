package io.kvidx.daemon.writer;

/**
 * Told by a writer agent how long each batch took to apply and how old its events were when they became visible,
 * e.g. to feed the metrics endpoint's histograms.
 *
 * <p><b>Note:</b> called on writer threads, once per batch: implementations are thread safe, allocation free and
 * quick.
 */
@FunctionalInterface
public interface ApplyObserver {
    /** Observes nothing. */
    ApplyObserver NONE = (applyNanos, eventToVisibleMs) -> { };

    /**
     * @param applyNanos        time spent decoding and applying the batch.
     * @param eventToVisibleMs  from the engine's batch timestamp to the batch's blocks being visible in the index,
     *                          or -1 when there is none to observe: the batch carries no timestamp (SBE events:
     *                          the kvidx schema has none) or was brought by a replay (its timestamp measures the
     *                          gap or the daemon's downtime, not the index's lag).
     */
    void batchApplied(long applyNanos, long eventToVisibleMs);
}
