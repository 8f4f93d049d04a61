package io.kvidx.routing.yaml;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.routing.Filter;
import io.kvidx.routing.Picker;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodRole;
import io.kvidx.routing.Preparer;
import io.kvidx.routing.Profile;
import io.kvidx.routing.Scorer;
import io.kvidx.routing.lmcache.LmCacheLookupClient;
import io.kvidx.routing.overlay.PickOverlay;
import io.kvidx.routing.plugins.AliveFilter;
import io.kvidx.routing.plugins.BlockKeysPreparer;
import io.kvidx.routing.plugins.CacheAffinityScorer;
import io.kvidx.routing.plugins.ConcurrencyFilter;
import io.kvidx.routing.plugins.ConsistentHashPicker;
import io.kvidx.routing.plugins.DynamoCostScorer;
import io.kvidx.routing.plugins.HashKeyPreparer;
import io.kvidx.routing.plugins.KvUtilizationScorer;
import io.kvidx.routing.plugins.LeastLoadScorer;
import io.kvidx.routing.plugins.LmCacheScorer;
import io.kvidx.routing.plugins.LocalityScorer;
import io.kvidx.routing.LoadMetric;
import io.kvidx.routing.plugins.LoraAffinityScorer;
import io.kvidx.routing.plugins.LoraFilter;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.ModelFilter;
import io.kvidx.routing.PowerOfTwoPicker;
import io.kvidx.routing.plugins.PrefixQueryPreparer;
import io.kvidx.routing.plugins.RoleFilter;
import io.kvidx.routing.plugins.RoundRobinScorer;
import io.kvidx.routing.plugins.RouterKeysPreparer;
import io.kvidx.routing.plugins.SessionAffinityScorer;
import io.kvidx.routing.plugins.SessionKeyPreparer;
import io.kvidx.routing.plugins.SessionTable;
import io.kvidx.routing.plugins.SoftmaxPicker;
import io.kvidx.routing.plugins.StickySessionPicker;
import io.kvidx.routing.plugins.WeightedRandomPicker;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * Builds a YAML profile's plugins from their {@link PluginSpec}s, in the environment {@link YamlRouting} was given;
 * a bad definition becomes a definition problem of the profile's builder, named after the plugin.
 *
 * <p><b>Note:</b> used by the thread that loads the YAML.
 */
final class PluginFactory {
    private final YamlRouting.Environment env;
    private final SessionTable sessions;
    private final Profile.Builder builder;

    PluginFactory(final YamlRouting.Environment env, final SessionTable sessions, final Profile.Builder builder) {
        this.env = env;
        this.sessions = sessions;
        this.builder = builder;
    }

    void guard(final PluginSpec s, final Runnable r) {
        try {
            r.run();
            final List<String> unused = s.unused();
            if (!unused.isEmpty()) {
                builder.definitionProblem(s.name, "unknown parameter(s) " + unused + " for type '" + s.type + "'");
            }
        } catch (final IllegalArgumentException | NullPointerException | IllegalStateException ex) {
            builder.definitionProblem(s.name, ex.getMessage());
        }
    }

    private <T> T need(final T value, final String what, final PluginSpec s) {
        if (value == null) {
            throw new IllegalStateException("type '" + s.type + "' needs " + what + " in the environment");
        }
        return value;
    }

    Preparer preparer(final PluginSpec s) {
        return switch (s.type) {
            case "block-keys" -> new BlockKeysPreparer(s.name, need(env.keyFunction, "a key function", s),
                s.integer("block-size", env.blockSize));
            case "router-keys" -> new RouterKeysPreparer(s.name,
                new RouterKeyHasher(s.integer("block-size", env.blockSize)));
            case "prefix-query" -> {
                final PrefixQueryPreparer.Mode mode = s.enumOf("mode", PrefixQueryPreparer.Mode.class,
                    PrefixQueryPreparer.Mode.INDEX);
                final long ttl = (long) s.dbl("ttl-ms", mode == PrefixQueryPreparer.Mode.APPROXIMATE
                    ? PickOverlay.APPROXIMATE_TTL_MS_DEFAULT : PickOverlay.TTL_MS_DEFAULT);
                final int capacity = s.integer("overlay-capacity", 1 << 16);
                final boolean sparse = s.bool("overlay-sparse", true);
                final PickOverlay overlay = mode == PrefixQueryPreparer.Mode.INDEX ? null
                    : env.overlay != null ? env.overlay : new PickOverlay(capacity, ttl, sparse);
                if (mode != PrefixQueryPreparer.Mode.APPROXIMATE) {
                    need(env.index, "an index", s);
                }
                yield new PrefixQueryPreparer(s.name, mode, overlay);
            }
            case "session-key" -> new SessionKeyPreparer(s.name,
                s.str("header", SessionKeyPreparer.HEADER_DEFAULT));
            case "hash-key" -> new HashKeyPreparer(s.name, s.str("header", null),
                s.enumOf("source", HashKeyPreparer.Source.class, HashKeyPreparer.Source.TOKENS),
                s.integer("prefix", 256));
            default -> {
                final PreparerType extra = preparerType(s.type);
                if (extra == null) {
                    throw new IllegalArgumentException("unknown preparer type '" + s.type
                        + "' (router-keys, block-keys, prefix-query, session-key, hash-key"
                        + (YamlRouting.TOKENIZE.equals(s.type)
                        ? "; 'tokenize' needs the kvidx-tokenize jar on the class path" : "") + ")");
                }
                yield extra.create(s.name, s);
            }
        };
    }

    /** A type given to the environment, else the first service of that name on the class path. */
    private PreparerType preparerType(final String type) {
        final PreparerType given = env.preparerTypes.get(type);
        if (given != null) {
            return given;
        }
        for (final PreparerType t : ServiceLoader.load(PreparerType.class, YamlRouting.class.getClassLoader())) {
            if (t.type().equals(type)) {
                return t;
            }
        }
        return null;
    }

    Filter filter(final PluginSpec s) {
        final PodRegistry r = env.registry;
        return switch (s.type) {
            case "alive" -> new AliveFilter(s.name, need(env.index, "an index", s));
            case "role" -> new RoleFilter(s.name, r, s.enumOf("role", PodRole.class, PodRole.BOTH));
            case "model" -> new ModelFilter(s.name, r);
            case "lora" -> new LoraFilter(s.name, r, s.bool("strict", false));
            case "concurrency" -> new ConcurrencyFilter(s.name, r, s.integer("cap", 0));
            default -> throw new IllegalArgumentException("unknown filter type '" + s.type
                + "' (alive, role, model, lora, concurrency)");
        };
    }

    Scorer scorer(final PluginSpec s) {
        final PodRegistry r = env.registry;
        return switch (s.type) {
            case "cache-affinity" -> cacheAffinity(s, r);
            case "least-load" -> new LeastLoadScorer(s.name, r,
                s.enumOf("metric", LoadMetric.class, LoadMetric.REQUESTS));
            case "round-robin" -> new RoundRobinScorer(s.name);
            case "session-affinity" -> new SessionAffinityScorer(s.name, sessions);
            case "lora-affinity" -> new LoraAffinityScorer(s.name, r,
                s.dbl("room-score", LoraAffinityScorer.ROOM_SCORE_DEFAULT));
            case "kv-utilization" -> new KvUtilizationScorer(s.name, r);
            case "lmcache" -> lmCache(s, r);
            case "dynamo-cost" -> new DynamoCostScorer(s.name, r, s.integer("block-size", env.blockSize),
                s.dbl("overlap-weight", DynamoCostScorer.OVERLAP_WEIGHT_DEFAULT));
            case "locality" -> locality(s, r);
            default -> throw new IllegalArgumentException("unknown scorer type '" + s.type
                + "' (cache-affinity, least-load, round-robin, session-affinity, lora-affinity, kv-utilization,"
                + " lmcache, dynamo-cost, locality)");
        };
    }

    /**
     * {@code locality}: {@code reference: prefill} (default; the decode profile of a prefill/decode workflow) or
     * {@code reference: origin} with {@code node} and/or {@code zone} (default the environment's origin);
     * {@code zone-score} for the same zone on another node.
     */
    private Scorer locality(final PluginSpec s, final PodRegistry r) {
        final double zoneScore = s.dbl("zone-score", LocalityScorer.ZONE_SCORE_DEFAULT);
        final String reference = s.str("reference", "prefill");
        return switch (reference) {
            case "prefill" -> LocalityScorer.nearPrefill(s.name, need(r, "a pod registry", s), env.topology,
                zoneScore);
            case "origin" -> LocalityScorer.nearOrigin(s.name, need(r, "a pod registry", s), env.topology,
                s.str("node", env.originNode), s.str("zone", env.originZone), zoneScore);
            default -> throw new IllegalArgumentException("locality scorer '" + s.name + "': reference must be "
                + "prefill or origin, is '" + reference + "'");
        };
    }

    /**
     * {@code cache-affinity}: depth mode, or tier-weighted with {@code tiers: true} ({@code gpu}, {@code cpu},
     * {@code disk}, {@code tier-candidates}); suspect pods score as holding nothing unless {@code trust-suspect: true}.
     */
    private Scorer cacheAffinity(final PluginSpec s, final PodRegistry r) {
        final PodRegistry suspects = s.bool("trust-suspect", false) ? null : r;
        if (!s.bool("tiers", false)) {
            return new CacheAffinityScorer(s.name, suspects);
        }
        return new CacheAffinityScorer(s.name, need(env.tiersOrHostMap(), "a tier lookup (or a shared-memory"
            + " index, beside which the host tier map is opened)", s),
            s.dbl("gpu", CacheAffinityScorer.GPU_WEIGHT_DEFAULT),
            s.dbl("cpu", CacheAffinityScorer.CPU_WEIGHT_DEFAULT),
            s.dbl("disk", CacheAffinityScorer.DISK_WEIGHT_DEFAULT),
            s.integer("tier-candidates", CacheAffinityScorer.TIER_CANDIDATES_DEFAULT), suspects);
    }

    /**
     * {@code lmcache}: {@code lookup-mode: occupancy} (default; key counts from the environment's poller) or
     * {@code prefix-lookup} ({@code POST /lookup} per request to {@code controller}, {@code timeout-ms},
     * {@code worker-map}).
     */
    private Scorer lmCache(final PluginSpec s, final PodRegistry r) {
        final LmCacheScorer.LookupMode mode = s.enumOf("lookup-mode", LmCacheScorer.LookupMode.class,
            LmCacheScorer.LookupMode.OCCUPANCY);
        final LoadMetric metric = s.enumOf("metric", LoadMetric.class, LoadMetric.REQUESTS);
        final double keyWeight = s.dbl("key-weight", LmCacheScorer.KEY_WEIGHT_DEFAULT);
        if (mode == LmCacheScorer.LookupMode.OCCUPANCY) {
            for (final String k : List.of("controller", "timeout-ms", "worker-map")) {
                if (s.raw(k) != null) {
                    throw new IllegalArgumentException("'" + k + "' applies to lookup-mode prefix-lookup only");
                }
            }
            return new LmCacheScorer(s.name, need(env.lmCache, "an LMCache poller", s), r, metric, keyWeight);
        }
        final String controller = s.str("controller", null);
        if (controller == null) {
            throw new IllegalArgumentException("lookup-mode prefix-lookup needs 'controller' (the LMCache"
                + " controller's URL, e.g. http://lmcache-controller:9000)");
        }
        final URI uri;
        try {
            uri = new URI(controller.trim());
        } catch (final URISyntaxException ex) {
            throw new IllegalArgumentException("'controller' is not a URL: '" + controller + "' ("
                + ex.getReason() + ")");
        }
        final int timeoutMs = s.integer("timeout-ms", (int) LmCacheLookupClient.TIMEOUT_MS_DEFAULT);
        return LmCacheScorer.prefixLookup(s.name,
            new LmCacheLookupClient(uri, r, s.stringMap("worker-map"), timeoutMs), r, metric, keyWeight);
    }

    Picker picker(final PluginSpec s) {
        return switch (s.type) {
            case "max-score" -> new MaxScorePicker(s.name, s.enumOf("tie-break", MaxScorePicker.TieBreak.class,
                MaxScorePicker.TieBreak.PROMPT) == MaxScorePicker.TieBreak.PROMPT ? env.registry : null);
            case "weighted-random" -> new WeightedRandomPicker(s.name);
            case "softmax" -> new SoftmaxPicker(s.name, s.dbl("temperature", 1.0));
            case "consistent-hash" -> new ConsistentHashPicker(s.name, env.registry,
                s.integer("virtual-nodes", ConsistentHashPicker.VIRTUAL_NODES_DEFAULT));
            case "power-of-two" -> new PowerOfTwoPicker(s.name, env.registry,
                s.enumOf("metric", LoadMetric.class, LoadMetric.REQUESTS));
            case "sticky-session" -> {
                final Object d = s.raw("delegate");
                final PluginSpec inner = d == null ? new PluginSpec("max-score", "max-score", Map.of(), s.baseDir)
                    : PluginSpec.of(s.baseDir, d, builder);
                if (inner == null) {
                    throw new IllegalArgumentException("bad delegate");
                }
                yield new StickySessionPicker(s.name, sessions, picker(inner));
            }
            default -> throw new IllegalArgumentException("unknown picker type '" + s.type
                + "' (max-score, weighted-random, softmax, consistent-hash, power-of-two, sticky-session)");
        };
    }
}
