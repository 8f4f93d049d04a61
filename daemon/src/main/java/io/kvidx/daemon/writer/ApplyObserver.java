package io.kvidx.daemon.writer;

/**
 * Told by a writer agent, for each batch, how long each stage of its way into the index took, e.g. to feed the
 * metrics endpoint's histograms: transport receive to queued (the transport thread's work: sequencing, the batch's
 * rank), queue wait (queued to taken by the writer), decode and apply (after which its blocks are visible: the index
 * stores are release stores), and the whole way from the engine's own timestamp.
 *
 * <p><b>Note:</b> called on writer threads, once per batch: implementations are thread safe, allocation free and
 * quick.
 */
@FunctionalInterface
public interface ApplyObserver {
    /** Observes nothing. */
    ApplyObserver NONE = (ingestNanos, queueNanos, applyNanos, eventToVisibleMs) -> { };

    /**
     * @param ingestNanos       from the transport thread receiving the batch to its commit to the writer's queue (a
     *                          batch held while a replay was in flight: from the message that released it).
     * @param queueNanos        from the commit to the writer taking it.
     * @param applyNanos        time spent decoding and applying the batch.
     * @param eventToVisibleMs  from the engine's batch timestamp to the batch's blocks being visible in the index,
     *                          or -1 when there is none to observe: the batch carries no timestamp (SBE events:
     *                          the kvidx schema has none) or was brought by a replay (its timestamp measures the
     *                          gap or the daemon's downtime, not the index's lag).
     */
    void batchApplied(long ingestNanos, long queueNanos, long applyNanos, long eventToVisibleMs);
}
