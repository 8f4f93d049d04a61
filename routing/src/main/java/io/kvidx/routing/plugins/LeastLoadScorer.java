package io.kvidx.routing.plugins;

import io.kvidx.routing.LoadMetric;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Scorer;

import java.util.Objects;

/**
 * Scores the least loaded candidates highest: {@code (max - load) / (max - min)} over the candidates, by a
 * {@link LoadMetric} the router supplies through the {@link PodRegistry}; 1 for all when loads are equal.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class LeastLoadScorer implements Scorer {
    private final String name;
    private final PodRegistry registry;
    private final LoadMetric metric;

    /**
     * @param name     plugin name.
     * @param registry load figures.
     * @param metric   which figure.
     */
    public LeastLoadScorer(final String name, final PodRegistry registry, final LoadMetric metric) {
        this.name = name;
        this.registry = Objects.requireNonNull(registry, "registry");
        this.metric = Objects.requireNonNull(metric, "metric");
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        final int n = ctx.sealCandidates();
        if (metric == LoadMetric.REQUESTS) {
            for (int ci = 0; ci < n; ci++) {
                final int s = ctx.candidateSlot(ci);
                final long load = registry.requests(s);
                scores[s] = load;
                min = Math.min(min, load);
                max = Math.max(max, load);
            }
        } else {
            for (int ci = 0; ci < n; ci++) {
                final int s = ctx.candidateSlot(ci);
                final long load = metric.of(registry, s);
                scores[s] = load;
                min = Math.min(min, load);
                max = Math.max(max, load);
            }
        }
        final double range = (double) max - min;
        if (range <= 0) {
            for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
                scores[ctx.candidateSlot(ci)] = 1.0;
            }
            return;
        }
        final double inv = 1.0 / range;
        final double top = max;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            scores[s] = (top - scores[s]) * inv;
        }
    }
}
