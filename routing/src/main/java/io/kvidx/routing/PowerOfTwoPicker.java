package io.kvidx.routing;


/**
 * Power of two choices: samples two distinct candidates at random and keeps the less loaded one (by
 * {@link LoadMetric}, default {@link LoadMetric#REQUESTS}); on equal load the higher total, then either. Needs no
 * index and no scores: the default fallback picker.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class PowerOfTwoPicker implements Picker {
    private final String name;
    private final PodRegistry registry;
    private final LoadMetric metric;

    /**
     * @param name     plugin name.
     * @param registry load figures.
     */
    public PowerOfTwoPicker(final String name, final PodRegistry registry) {
        this(name, registry, LoadMetric.REQUESTS);
    }

    /**
     * @param name     plugin name.
     * @param registry load figures (required).
     * @param metric   load metric.
     */
    public PowerOfTwoPicker(final String name, final PodRegistry registry, final LoadMetric metric) {
        if (registry == null) {
            throw new IllegalArgumentException("power-of-two choices needs a pod registry for load figures");
        }
        this.name = name;
        this.registry = registry;
        this.metric = metric;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int pick(final RoutingContext ctx, final double[] totals) {
        final int n = ctx.candidateCount();
        if (n == 1) {
            return ctx.nextCandidate(0);
        }
        final int i = ctx.nextRandomInt(n);
        int j = ctx.nextRandomInt(n - 1);
        if (j >= i) {
            j++;
        }
        final int a = ctx.candidateAt(i);
        final int b = ctx.candidateAt(j);
        final long la = metric.of(registry, a);
        final long lb = metric.of(registry, b);
        if (la != lb) {
            return la < lb ? a : b;
        }
        return totals[b] > totals[a] ? b : a;
    }
}
