package io.kvidx.routing;

/**
 * Scores every candidate in [0, 1] (higher is better); the selector adds weight x score to each pod's total.
 */
public interface Scorer extends RoutingPlugin {
    @Override
    default Stage stage() {
        return Stage.SCORE;
    }

    /**
     * @param ctx    the decision's context.
     * @param scores output by slot: write an entry in [0, 1] for every candidate.
     */
    void score(RoutingContext ctx, double[] scores);
}
