package io.kvidx.client.routing.plugins;

import io.kvidx.client.routing.PodRegistry;
import io.kvidx.client.routing.RoutingContext;
import io.kvidx.client.routing.Scorer;
import io.kvidx.client.routing.lmcache.LmCacheWorkerPoller;

import java.util.Objects;

/**
 * The LMCache-aware score over key counts polled from an LMCache controller:
 * <pre>
 *   score = w * key_count / max_key_count + (1 - w) * (max_load - load) / max_load
 * </pre>
 * with maxima over the candidates (a term is 0 when its maximum is 0 for key counts, 1 for load) and
 * {@code w} = 0.7 by default. Load is a {@link LoadMetric} from the registry.
 *
 * <p><b>Note:</b> thread safe (reads the poller's atomics).
 */
public final class LmCacheScorer implements Scorer {
    /** Default weight of the key-count term. */
    public static final double KEY_WEIGHT_DEFAULT = 0.7;

    private final String name;
    private final LmCacheWorkerPoller keys;
    private final PodRegistry registry;
    private final LoadMetric metric;
    private final double w;

    /**
     * @param name      plugin name.
     * @param keys      the poller with key counts.
     * @param registry  load figures.
     * @param metric    load metric.
     * @param keyWeight weight of the key-count term, in [0, 1].
     */
    public LmCacheScorer(final String name, final LmCacheWorkerPoller keys, final PodRegistry registry,
        final LoadMetric metric, final double keyWeight) {
        if (!(keyWeight >= 0 && keyWeight <= 1)) {
            throw new IllegalArgumentException("key weight must be in [0, 1]: " + keyWeight);
        }
        this.name = name;
        this.keys = Objects.requireNonNull(keys, "keys");
        this.registry = Objects.requireNonNull(registry, "registry");
        this.metric = Objects.requireNonNull(metric, "metric");
        this.w = keyWeight;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        long maxKeys = 0;
        long maxLoad = 0;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            maxKeys = Math.max(maxKeys, keys.keyCount(s));
            maxLoad = Math.max(maxLoad, metric.of(registry, s));
        }
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            final double keyTerm = maxKeys == 0 ? 0 : (double) keys.keyCount(s) / maxKeys;
            final double loadTerm = maxLoad == 0 ? 1 : (double) (maxLoad - metric.of(registry, s)) / maxLoad;
            scores[s] = w * keyTerm + (1 - w) * loadTerm;
        }
    }
}
