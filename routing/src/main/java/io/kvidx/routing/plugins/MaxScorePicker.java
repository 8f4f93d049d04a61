package io.kvidx.routing.plugins;

import io.kvidx.routing.Picker;
import io.kvidx.routing.RoutingContext;

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
        final int n = ctx.sealCandidates();
        double best = Double.NEGATIVE_INFINITY;
        int ties = 0;
        int first = -1;
        for (int ci = 0; ci < n; ci++) {
            final double t = totals[ctx.candidateSlot(ci)];
            if (t > best) {
                best = t;
                ties = 1;
                first = ci;
            } else if (t == best) {
                ties++;
            }
        }
        if (ties == 1) {
            return ctx.candidateSlot(first);
        }
        int k = ctx.nextRandomInt(ties);
        for (int ci = first; ci < n; ci++) {
            final int s = ctx.candidateSlot(ci);
            if (totals[s] == best && k-- == 0) {
                return s;
            }
        }
        return ctx.candidateSlot(first);
    }
}
