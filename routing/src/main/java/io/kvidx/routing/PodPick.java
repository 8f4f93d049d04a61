package io.kvidx.routing;

/**
 * A selector's pick: a pod slot, or {@link RoutingPlan#NO_POD}.
 *
 * <p><b>Note:</b> not thread safe; owned by one {@link RoutingContext}.
 */
public final class PodPick {
    private int slot = RoutingPlan.NO_POD;

    /**
     * @return the picked slot, or {@link RoutingPlan#NO_POD}.
     */
    public int slot() {
        return slot;
    }

    /**
     * @param slot the picked slot, or {@link RoutingPlan#NO_POD}.
     */
    public void slot(final int slot) {
        this.slot = slot;
    }
}
