package io.kvidx.routing;

/**
 * Removes candidates that cannot serve the request ({@link RoutingContext#removeCandidate(int)}).
 */
public interface Filter extends RoutingPlugin {
    @Override
    default Stage stage() {
        return Stage.FILTER;
    }

    /**
     * @param ctx the decision's context.
     */
    void filter(RoutingContext ctx);
}
