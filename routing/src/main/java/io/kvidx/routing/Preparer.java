package io.kvidx.routing;

/**
 * Derives facts about the request into context slots.
 */
public interface Preparer extends RoutingPlugin {
    @Override
    default Stage stage() {
        return Stage.PREPARE;
    }

    /**
     * @param ctx the decision's context.
     */
    void prepare(RoutingContext ctx);
}
