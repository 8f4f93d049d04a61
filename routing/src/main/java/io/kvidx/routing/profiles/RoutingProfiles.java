package io.kvidx.routing.profiles;

import io.kvidx.routing.KeyFunction;
import io.kvidx.routing.PodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Profile;
import io.kvidx.routing.Router;
import io.kvidx.routing.Selector;
import io.kvidx.routing.SingleWorkflow;
import io.kvidx.routing.Slots;
import io.kvidx.routing.TierLookup;
import io.kvidx.routing.TierMapLookup;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.routing.overlay.PickOverlay;
import io.kvidx.routing.plugins.AliveFilter;
import io.kvidx.routing.plugins.BlockKeysPreparer;
import io.kvidx.routing.plugins.CacheAffinityScorer;
import io.kvidx.routing.plugins.LeastLoadScorer;
import io.kvidx.routing.LoadMetric;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.PrefixQueryPreparer;
import io.kvidx.routing.plugins.RoundRobinScorer;
import io.kvidx.routing.plugins.RouterKeysPreparer;

/**
 * Ready-made profiles and routers for the common cases (and the demo): a cache-aware profile and a round-robin
 * profile over the same index and registry.
 */
public final class RoutingProfiles {
    /** Weight of cache affinity in {@link #cacheAware}. */
    public static final double CACHE_WEIGHT_DEFAULT = 2.0;
    /** Weight of least load in {@link #cacheAware}. */
    public static final double LOAD_WEIGHT_DEFAULT = 1.0;

    private RoutingProfiles() {
    }

    /**
     * Cache-aware: prefix depth from the index (deepened by an overlay when given), alive filter, cache affinity
     * (weight 2) plus least load by queued + running requests (weight 1), max score with random tie-break;
     * power-of-two choices while the index is missing or stale.
     *
     * @param name        profile name.
     * @param index       the index.
     * @param registry    the pods.
     * @param keyFunction tokens to block keys; null to route by keys ({@link Router#routeKeys}).
     * @param blockSize   tokens per block (used with a key function).
     * @param overlay     recent-pick overlay, or null for none.
     * @return the profile.
     */
    public static Profile cacheAware(final String name, final PodIndex index, final PodRegistry registry,
        final KeyFunction keyFunction, final int blockSize, final PickOverlay overlay) {
        final Profile.Builder b = Profile.builder(name);
        if (keyFunction == null) {
            b.input(Slots.BLOCK_KEYS);
        } else {
            b.prepare(new BlockKeysPreparer("block-keys", keyFunction, blockSize));
        }
        return cacheAwareStages(b, index, registry, overlay, null);
    }

    /**
     * Cache-aware over router keys: like {@link #cacheAware(String, PodIndex, PodRegistry, KeyFunction, int,
     * PickOverlay)} with a {@link RouterKeysPreparer} (chain seeded per request by model, LoRA and cache salt).
     *
     * @param name     profile name.
     * @param index    the index.
     * @param registry the pods.
     * @param hasher   router-key hasher; its block size must equal the index's.
     * @param overlay  recent-pick overlay, or null.
     * @return the profile.
     * @throws IllegalArgumentException when the hasher's block size differs from the index's.
     */
    public static Profile cacheAware(final String name, final PodIndex index, final PodRegistry registry,
        final RouterKeyHasher hasher, final PickOverlay overlay) {
        return cacheAware(name, index, registry, hasher, overlay, null);
    }

    /**
     * Cache-aware over router keys, tier-weighted: like {@link #cacheAware(String, PodIndex, PodRegistry,
     * RouterKeyHasher, PickOverlay)} with a tier-weighted {@link CacheAffinityScorer} (llm-d's weights: GPU 1.0,
     * CPU 0.8; disk 0.5), which reads the tiers of its few best candidates by depth from {@code tiers}: in product
     * code the host tier map, {@link TierMapLookup#nextTo}.
     *
     * @param name     profile name.
     * @param index    the index.
     * @param registry the pods.
     * @param hasher   router-key hasher; its block size must equal the index's.
     * @param overlay  recent-pick overlay, or null.
     * @param tiers    where pods hold their blocks, or null for depth-only scoring.
     * @return the profile.
     * @throws IllegalArgumentException when the hasher's block size differs from the index's.
     */
    public static Profile cacheAware(final String name, final PodIndex index, final PodRegistry registry,
        final RouterKeyHasher hasher, final PickOverlay overlay, final TierLookup tiers) {
        if (index.blockSize() > 0 && index.blockSize() != hasher.blockSize()) {
            throw new IllegalArgumentException("router block size " + hasher.blockSize() + " differs from the index's "
                + index.blockSize() + ": every prefix would score 0");
        }
        return cacheAwareStages(Profile.builder(name).prepare(new RouterKeysPreparer("router-keys", hasher)), index,
            registry, overlay, tiers);
    }

    /**
     * The stages both cache-aware profiles share once block keys are in the context: prefix query (plus overlay),
     * alive filter, cache affinity (suspect pods' depths not trusted) + least load, max score.
     */
    private static Profile cacheAwareStages(final Profile.Builder b, final PodIndex index, final PodRegistry registry,
        final PickOverlay overlay, final TierLookup tiers) {
        return b.prepare(new PrefixQueryPreparer("prefix-query",
                overlay == null ? PrefixQueryPreparer.Mode.INDEX : PrefixQueryPreparer.Mode.INDEX_AND_OVERLAY,
                overlay))
            .filter(new AliveFilter("alive", index))
            .score(new CacheAffinityScorer("cache-affinity", tiers, CacheAffinityScorer.GPU_WEIGHT_DEFAULT,
                CacheAffinityScorer.CPU_WEIGHT_DEFAULT, CacheAffinityScorer.DISK_WEIGHT_DEFAULT,
                CacheAffinityScorer.TIER_CANDIDATES_DEFAULT, registry), CACHE_WEIGHT_DEFAULT)
            .score(new LeastLoadScorer("least-load", registry, LoadMetric.REQUESTS), LOAD_WEIGHT_DEFAULT)
            .pick(new MaxScorePicker("max-score", registry))
            .build(registry);
    }

    /**
     * Round robin over the registry's pods (alive ones when an index is given).
     *
     * @param name     profile name.
     * @param index    the index, or null to route over every registered pod.
     * @param registry the pods.
     * @param byKeys   true when requests come as block keys (declares them as input).
     * @return the profile.
     */
    public static Profile roundRobin(final String name, final PodIndex index, final PodRegistry registry,
        final boolean byKeys) {
        final Profile.Builder b = Profile.builder(name);
        if (byKeys) {
            b.input(Slots.BLOCK_KEYS);
        }
        if (index != null) {
            b.filter(new AliveFilter("alive", index));
        }
        return b.score(new RoundRobinScorer("round-robin"), 1.0)
            .pick(new MaxScorePicker("max-score", registry))
            .build(registry);
    }

    /**
     * @param profile  the profile.
     * @param registry the pods.
     * @param index    the index (may be null when the profile does not need it).
     * @return a single-dispatch router.
     */
    public static Router single(final Profile profile, final PodRegistry registry, final PodIndex index) {
        return new Router(new SingleWorkflow(new Selector(profile, registry, index)), registry, index);
    }
}
