package io.kvidx.routing.plugins;

import io.kvidx.routing.Picker;
import io.kvidx.routing.RoutingContext;

/**
 * Picks a candidate with probability proportional to its total (uniformly when every total is 0).
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class WeightedRandomPicker implements Picker {
    private final String name;

    /**
     * @param name plugin name.
     */
    public WeightedRandomPicker(final String name) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int pick(final RoutingContext ctx, final double[] totals) {
        double sum = 0;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            sum += Math.max(0, totals[s]);
        }
        if (!(sum > 0)) {
            return ctx.candidateAt(ctx.nextRandomInt(ctx.candidateCount()));
        }
        double r = ctx.nextRandomDouble() * sum;
        int last = -1;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            final double w = Math.max(0, totals[s]);
            if (w > 0) {
                last = s;
                r -= w;
                if (r < 0) {
                    return s;
                }
            }
        }
        return last;
    }
}
