package io.kvidx.routing.plugins;

import io.kvidx.routing.Picker;
import io.kvidx.routing.RoutingContext;

/**
 * Samples a candidate with probability proportional to {@code exp((total - maxTotal) / temperature)}: a low
 * temperature approaches max-score, a high one approaches uniform.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class SoftmaxPicker implements Picker {
    private final String name;
    private final double temperature;

    /**
     * @param name        plugin name.
     * @param temperature > 0.
     */
    public SoftmaxPicker(final String name, final double temperature) {
        if (!(temperature > 0) || Double.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature must be finite and > 0: " + temperature);
        }
        this.name = name;
        this.temperature = temperature;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int pick(final RoutingContext ctx, final double[] totals) {
        double max = Double.NEGATIVE_INFINITY;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            max = Math.max(max, totals[s]);
        }
        double sum = 0;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            sum += Math.exp((totals[s] - max) / temperature);
        }
        double r = ctx.nextRandomDouble() * sum;
        int last = -1;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            last = s;
            r -= Math.exp((totals[s] - max) / temperature);
            if (r < 0) {
                return s;
            }
        }
        return last;
    }
}
