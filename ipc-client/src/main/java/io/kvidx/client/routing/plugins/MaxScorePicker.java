package io.kvidx.client.routing.plugins;

import io.kvidx.client.routing.Picker;
import io.kvidx.client.routing.RoutingContext;

/**
 * Picks the candidate with the highest total; ties are broken uniformly at random (reservoir sampling over the
 * tied candidates).
 *
 * <p><b>Note:</b> thread safe (stateless; randomness comes from the context).
 */
public final class MaxScorePicker implements Picker {
    private final String name;

    /**
     * @param name plugin name.
     */
    public MaxScorePicker(final String name) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int pick(final RoutingContext ctx, final double[] totals) {
        int best = -1;
        double bestScore = Double.NEGATIVE_INFINITY;
        int ties = 0;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            final double t = totals[s];
            if (t > bestScore) {
                bestScore = t;
                best = s;
                ties = 1;
            } else if (t == bestScore) {
                ties++;
                if (ctx.nextRandomInt(ties) == 0) {
                    best = s;
                }
            }
        }
        return best;
    }
}
