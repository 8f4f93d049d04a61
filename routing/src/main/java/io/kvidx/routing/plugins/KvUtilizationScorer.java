package io.kvidx.routing.plugins;

import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Scorer;

import java.util.Objects;

/**
 * Prefers pods with free KV-cache memory: {@code 1 - utilization}, from the registry.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class KvUtilizationScorer implements Scorer {
    private final String name;
    private final PodRegistry registry;

    /**
     * @param name     plugin name.
     * @param registry utilisation per pod.
     */
    public KvUtilizationScorer(final String name, final PodRegistry registry) {
        this.name = name;
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            scores[s] = 1.0 - registry.kvUtilization(s);
        }
    }
}
