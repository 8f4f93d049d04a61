package io.kvidx.routing;

/**
 * Cached prefix depth per pod slot (blocks of the request's chain the pod holds from the start), and the
 * chain's length.
 *
 * <p><b>Note:</b> not thread safe; owned by one {@link RoutingContext}.
 */
public final class PodDepths {
    private final int[] depth = new int[PodRegistry.MAX_PODS];
    private int chainLength;

    /**
     * @return depth by slot; writers set an entry for every candidate.
     */
    public int[] depths() {
        return depth;
    }

    /**
     * @param slot pod slot.
     * @return its depth.
     */
    public int depth(final int slot) {
        return depth[slot];
    }

    /**
     * @return length of the chain the depths refer to.
     */
    public int chainLength() {
        return chainLength;
    }

    /**
     * @param chainLength length of the chain the depths refer to.
     */
    public void chainLength(final int chainLength) {
        this.chainLength = chainLength;
    }
}
