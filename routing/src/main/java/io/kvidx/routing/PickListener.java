package io.kvidx.routing;

/**
 * Implemented by plugins that learn from the outcome of their selector (an overlay recording the picked pod's
 * prefix, a session table remembering the pod). Called after every successful pick, also when falling back.
 */
public interface PickListener {
    /**
     * @param ctx  the decision's context.
     * @param slot the picked pod.
     */
    void onPicked(RoutingContext ctx, int slot);
}
