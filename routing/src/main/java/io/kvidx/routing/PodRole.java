package io.kvidx.routing;

/**
 * What a pod serves in a disaggregated fleet.
 */
public enum PodRole {
    /** Prefill only. */
    PREFILL,
    /** Decode only. */
    DECODE,
    /** Both (aggregated serving). */
    BOTH;

    /**
     * @param wanted the role a stage needs.
     * @return true when a pod of this role can serve it.
     */
    public boolean serves(final PodRole wanted) {
        return this == BOTH || wanted == BOTH || this == wanted;
    }
}
