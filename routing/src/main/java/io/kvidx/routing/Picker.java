package io.kvidx.routing;

/**
 * Chooses one candidate.
 */
public interface Picker extends RoutingPlugin {
    @Override
    default Stage stage() {
        return Stage.PICK;
    }

    /**
     * @param ctx    the decision's context (at least one candidate).
     * @param totals weighted score totals by slot (all 0 when the profile has no scorers or is falling back).
     * @return the picked candidate's slot.
     */
    int pick(RoutingContext ctx, double[] totals);
}
