package io.kvidx.routing;


/**
 * Which load figure a load-aware plugin reads from the {@link PodRegistry}.
 */
public enum LoadMetric {
    /** Requests waiting. */
    QUEUE,
    /** Requests running. */
    RUNNING,
    /** Requests waiting plus running. */
    REQUESTS,
    /** Tokens in flight. */
    TOKENS;

    /**
     * @param registry the registry.
     * @param slot     pod slot.
     * @return the pod's load by this metric.
     */
    public long of(final PodRegistry registry, final int slot) {
        return switch (this) {
            case QUEUE -> registry.queued(slot);
            case RUNNING -> registry.running(slot);
            case REQUESTS -> registry.requests(slot);
            case TOKENS -> registry.tokens(slot);
        };
    }
}
