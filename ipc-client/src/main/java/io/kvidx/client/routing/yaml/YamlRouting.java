package io.kvidx.client.routing.yaml;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.client.routing.Filter;
import io.kvidx.client.routing.IndexReaderPodIndex;
import io.kvidx.client.routing.KeyFunction;
import io.kvidx.client.routing.Picker;
import io.kvidx.client.routing.PodIndex;
import io.kvidx.client.routing.PodRegistry;
import io.kvidx.client.routing.PodRole;
import io.kvidx.client.routing.PrefillDecodeWorkflow;
import io.kvidx.client.routing.Preparer;
import io.kvidx.client.routing.Profile;
import io.kvidx.client.routing.ProfileValidationException;
import io.kvidx.client.routing.Router;
import io.kvidx.client.routing.Scorer;
import io.kvidx.client.routing.Selector;
import io.kvidx.client.routing.SingleWorkflow;
import io.kvidx.client.routing.Slot;
import io.kvidx.client.routing.Slots;
import io.kvidx.client.routing.Workflow;
import io.kvidx.client.routing.lmcache.LmCacheLookupClient;
import io.kvidx.client.routing.lmcache.LmCacheWorkerPoller;
import io.kvidx.client.routing.overlay.PickOverlay;
import io.kvidx.client.routing.plugins.AliveFilter;
import io.kvidx.client.routing.plugins.BlockKeysPreparer;
import io.kvidx.client.routing.plugins.CacheAffinityScorer;
import io.kvidx.client.routing.plugins.ConcurrencyFilter;
import io.kvidx.client.routing.plugins.ConsistentHashPicker;
import io.kvidx.client.routing.plugins.DynamoCostScorer;
import io.kvidx.client.routing.plugins.HashKeyPreparer;
import io.kvidx.client.routing.plugins.KvUtilizationScorer;
import io.kvidx.client.routing.plugins.LeastLoadScorer;
import io.kvidx.client.routing.plugins.LmCacheScorer;
import io.kvidx.client.routing.plugins.LoadMetric;
import io.kvidx.client.routing.plugins.LoraAffinityScorer;
import io.kvidx.client.routing.plugins.LoraFilter;
import io.kvidx.client.routing.plugins.MaxScorePicker;
import io.kvidx.client.routing.plugins.ModelFilter;
import io.kvidx.client.routing.plugins.PowerOfTwoPicker;
import io.kvidx.client.routing.plugins.PrefixQueryPreparer;
import io.kvidx.client.routing.plugins.RoleFilter;
import io.kvidx.client.routing.plugins.RoundRobinScorer;
import io.kvidx.client.routing.plugins.RouterKeysPreparer;
import io.kvidx.client.routing.plugins.SessionAffinityScorer;
import io.kvidx.client.routing.plugins.SessionKeyPreparer;
import io.kvidx.client.routing.plugins.SessionTable;
import io.kvidx.client.routing.plugins.SoftmaxPicker;
import io.kvidx.client.routing.plugins.StickySessionPicker;
import io.kvidx.client.routing.plugins.WeightedRandomPicker;
import io.kvidx.client.tiers.TierMap;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;

/**
 * Routing profiles and a workflow from a YAML document, validated exactly like profiles built in code (a bad file
 * fails at startup with a {@link ProfileValidationException} naming the profile, plugin and slot). Needs
 * snakeyaml-engine on the class path (an optional dependency of ipc-client).
 *
 * <pre>
 * profiles:
 *   cache-aware:
 *     inputs: [block-keys]                 # extra request inputs (block-keys, prefill-pick)
 *     prepare:
 *       - type: prefix-query
 *         mode: index-and-overlay          # index | index-and-overlay | approximate
 *     filter:
 *       - type: alive
 *     score:
 *       - {type: cache-affinity, weight: 2}
 *       - {type: least-load, weight: 1, metric: requests}
 *     pick: {type: max-score}
 *     fallback: {type: power-of-two}       # optional; this is the default
 * workflow: {type: single, profile: cache-aware}
 * #   or    {type: prefill-decode, prefill: p, decode: d}
 * </pre>
 * Plugin types and parameters are listed in docs/routing.md. Unknown types and parameters are errors.
 */
public final class YamlRouting {
    private static final String FILE = "(file)";
    private static final String TOKENIZE = "tokenize";

    private YamlRouting() {
    }

    /**
     * What the plugins of a YAML profile are built over.
     */
    public static final class Environment {
        private PodIndex index;
        private PodRegistry registry;
        private KeyFunction keyFunction;
        private int blockSize = 16;
        private PickOverlay overlay;
        private SessionTable sessions;
        private LmCacheWorkerPoller lmCache;
        private CacheAffinityScorer.TierLookup tiers;
        private final Map<String, PreparerType> preparerTypes = new LinkedHashMap<>();

        /**
         * @param index the index (needed by prefix-query and alive).
         * @return this.
         */
        public Environment index(final PodIndex index) {
            this.index = index;
            return this;
        }

        /**
         * @param registry the router's pods (required).
         * @return this.
         */
        public Environment registry(final PodRegistry registry) {
            this.registry = registry;
            return this;
        }

        /**
         * @param keyFunction tokens to keys (needed by block-keys).
         * @return this.
         */
        public Environment keyFunction(final KeyFunction keyFunction) {
            this.keyFunction = keyFunction;
            return this;
        }

        /**
         * @param blockSize default tokens per block.
         * @return this.
         */
        public Environment blockSize(final int blockSize) {
            this.blockSize = blockSize;
            return this;
        }

        /**
         * @param overlay shared recent-pick overlay (else one is made per prefix-query plugin).
         * @return this.
         */
        public Environment overlay(final PickOverlay overlay) {
            this.overlay = overlay;
            return this;
        }

        /**
         * @param sessions shared session table (else one is made for the file).
         * @return this.
         */
        public Environment sessions(final SessionTable sessions) {
            this.sessions = sessions;
            return this;
        }

        /**
         * @param lmCache LMCache key counts (needed by lmcache in lookup-mode occupancy).
         * @return this.
         */
        public Environment lmCache(final LmCacheWorkerPoller lmCache) {
            this.lmCache = lmCache;
            return this;
        }

        /**
         * @param tiers block tiers for cache-affinity with {@code tiers: true}; when none is given and the index
         *              is an {@link IndexReaderPodIndex}, the cell's host tier map beside it is opened
         *              ({@link TierMap#nextTo}) on first use.
         * @return this.
         */
        public Environment tiers(final CacheAffinityScorer.TierLookup tiers) {
            this.tiers = tiers;
            return this;
        }

        /**
         * Adds a preparer type beyond the built-in ones and those found by {@link ServiceLoader} (it wins over a
         * service of the same name).
         *
         * @param type the type.
         * @return this.
         */
        public Environment preparerType(final PreparerType type) {
            preparerTypes.put(type.type(), type);
            return this;
        }

        /**
         * @return the tier lookup given or opened for the profiles (null when none was needed); a {@link TierMap}
         * opened here is the caller's to close with the index.
         */
        public CacheAffinityScorer.TierLookup tiers() {
            return tiers;
        }

        /** The tier lookup, opening the host tier map beside the index when none was given. */
        CacheAffinityScorer.TierLookup tiersOrHostMap() {
            if (tiers == null && index instanceof IndexReaderPodIndex shared && registry != null) {
                tiers = TierMap.nextTo(shared, registry);
            }
            return tiers;
        }
    }

    /**
     * The loaded profiles and workflow.
     *
     * @param profiles profiles by name, in file order.
     * @param workflow the workflow (single over the only profile when the file names none).
     * @param registry the registry they were built over.
     * @param index    the index (may be null).
     */
    public record Loaded(Map<String, Profile> profiles, Workflow workflow, PodRegistry registry, PodIndex index) {
        /**
         * @return a router over the workflow.
         */
        public Router router() {
            return new Router(workflow, registry, index);
        }
    }

    /**
     * @param file a YAML file.
     * @param env  what plugins are built over.
     * @return profiles and workflow.
     * @throws IOException                when the file cannot be read.
     * @throws ProfileValidationException when the document is invalid.
     */
    public static Loaded load(final Path file, final Environment env) throws IOException {
        return parse(Files.readString(file), env, file.toAbsolutePath().getParent());
    }

    /**
     * @param yaml a YAML document.
     * @param env  what plugins are built over.
     * @return profiles and workflow.
     * @throws ProfileValidationException when the document is invalid.
     */
    public static Loaded parse(final String yaml, final Environment env) {
        return parse(yaml, env, null);
    }

    private static Loaded parse(final String yaml, final Environment env, final Path baseDir) {
        if (env.registry == null) {
            throw new IllegalArgumentException("the environment needs a pod registry");
        }
        final Object doc;
        try {
            doc = new Load(LoadSettings.builder().setLabel("routing profiles").build()).loadFromString(yaml);
        } catch (final YamlEngineException ex) {
            throw fail(FILE, null, "not valid YAML: " + ex.getMessage());
        }
        if (!(doc instanceof Map<?, ?> root) || !(root.get("profiles") instanceof Map<?, ?> profileDefs)) {
            throw fail(FILE, null, "expected a mapping with a 'profiles' mapping");
        }
        for (final Object key : root.keySet()) {
            if (!Set.of("profiles", "workflow").contains(String.valueOf(key))) {
                throw fail(FILE, null, "unknown top-level key '" + key + "'");
            }
        }
        final Map<String, Profile> profiles = new LinkedHashMap<>();
        final List<ProfileValidationException.Problem> problems = new ArrayList<>();
        final SessionTable sessions = env.sessions != null ? env.sessions
            : new SessionTable(1 << 16, SessionTable.TTL_MS_DEFAULT);
        for (final Map.Entry<?, ?> e : profileDefs.entrySet()) {
            final String name = String.valueOf(e.getKey());
            try {
                profiles.put(name, profile(name, e.getValue(), env, sessions, baseDir));
            } catch (final ProfileValidationException ex) {
                problems.addAll(ex.problems());
            }
        }
        if (!problems.isEmpty()) {
            throw new ProfileValidationException(problems);
        }
        return new Loaded(profiles, workflow(root.get("workflow"), profiles, env), env.registry, env.index);
    }

    private static Workflow workflow(final Object def, final Map<String, Profile> profiles, final Environment env) {
        if (def == null) {
            if (profiles.size() != 1) {
                throw fail("workflow", null, "no workflow given and the file has " + profiles.size()
                    + " profiles; name one with workflow: {type: single, profile: NAME}");
            }
            return new SingleWorkflow(selector(profiles.values().iterator().next(), env));
        }
        if (!(def instanceof Map<?, ?> m)) {
            throw fail("workflow", null, "workflow must be a mapping");
        }
        final String type = String.valueOf(m.get("type"));
        switch (type) {
            case "single" -> {
                checkKeys(m, Set.of("type", "profile"));
                return new SingleWorkflow(selector(named(profiles, m.get("profile")), env));
            }
            case "prefill-decode" -> {
                checkKeys(m, Set.of("type", "prefill", "decode"));
                return new PrefillDecodeWorkflow(selector(named(profiles, m.get("prefill")), env),
                    selector(named(profiles, m.get("decode")), env));
            }
            default -> throw fail("workflow", null, "unknown workflow type '" + type
                + "' (single, prefill-decode)");
        }
    }

    private static void checkKeys(final Map<?, ?> m, final Set<String> allowed) {
        for (final Object k : m.keySet()) {
            if (!allowed.contains(String.valueOf(k))) {
                throw fail("workflow", null, "unknown workflow key '" + k + "' (allowed: " + allowed + ")");
            }
        }
    }

    private static Selector selector(final Profile p, final Environment env) {
        return new Selector(p, env.registry, env.index);
    }

    private static Profile named(final Map<String, Profile> profiles, final Object name) {
        final Profile p = profiles.get(String.valueOf(name));
        if (p == null) {
            throw fail("workflow", null, "the workflow names profile '" + name + "', which the file does not define"
                + " (defined: " + profiles.keySet() + ")");
        }
        return p;
    }

    private static ProfileValidationException fail(final String profile, final String plugin, final String detail) {
        return new ProfileValidationException(List.of(new ProfileValidationException.Problem(
            ProfileValidationException.Kind.BAD_DEFINITION, profile, plugin, null, detail)));
    }

    private static Profile profile(final String name, final Object def, final Environment env,
        final SessionTable sessions, final Path baseDir) {
        if (!(def instanceof Map<?, ?> m)) {
            throw fail(name, null, "a profile must be a mapping");
        }
        final Profile.Builder b = Profile.builder(name);
        for (final Object k : m.keySet()) {
            if (!Set.of("inputs", "prepare", "filter", "score", "pick", "fallback").contains(String.valueOf(k))) {
                b.definitionProblem(null, "unknown profile key '" + k
                    + "' (inputs, prepare, filter, score, pick, fallback)");
            }
        }
        for (final Object in : list(m.get("inputs"))) {
            final Slot<?> slot = switch (String.valueOf(in)) {
                case "block-keys" -> Slots.BLOCK_KEYS;
                case "prefill-pick" -> Slots.PREFILL_PICK;
                case "tokens" -> Slots.TOKENS;
                case "request" -> Slots.REQUEST;
                default -> null;
            };
            if (slot == null) {
                b.definitionProblem(null, "unknown input '" + in + "' (block-keys, prefill-pick)");
            } else {
                b.input(slot);
            }
        }
        final Factory f = new Factory(env, sessions, b);
        for (final Object p : list(m.get("prepare"))) {
            final Spec s = Spec.of(baseDir, p, b);
            if (s != null) {
                f.guard(s, () -> b.prepare(f.preparer(s)));
            }
        }
        for (final Object p : list(m.get("filter"))) {
            final Spec s = Spec.of(baseDir, p, b);
            if (s != null) {
                f.guard(s, () -> b.filter(f.filter(s)));
            }
        }
        for (final Object p : list(m.get("score"))) {
            final Spec s = Spec.of(baseDir, p, b);
            if (s != null) {
                f.guard(s, () -> {
                    final double weight = s.dbl("weight", 1.0);
                    b.score(f.scorer(s), weight);
                });
            }
        }
        if (m.get("pick") != null) {
            final Spec s = Spec.of(baseDir, m.get("pick"), b);
            if (s != null) {
                f.guard(s, () -> b.pick(f.picker(s)));
            }
        }
        if (m.get("fallback") != null) {
            final Spec s = Spec.of(baseDir, m.get("fallback"), b);
            if (s != null) {
                f.guard(s, () -> b.fallback(f.picker(s)));
            }
        }
        return b.build(env.registry);
    }

    private static List<?> list(final Object o) {
        if (o == null) {
            return List.of();
        }
        return o instanceof List<?> l ? l : List.of(o);
    }

    /** One plugin definition: type, name and parameters; tracks which parameters were used. */
    private static final class Spec implements PluginParameters {
        final String type;
        final String name;
        final Map<?, ?> params;
        final Path baseDir;
        final Set<String> used = new HashSet<>(Set.of("type", "name"));

        private Spec(final String type, final String name, final Map<?, ?> params, final Path baseDir) {
            this.type = type;
            this.name = name;
            this.params = params;
            this.baseDir = baseDir;
        }

        static Spec of(final Path baseDir, final Object def, final Profile.Builder b) {
            if (def instanceof String s) {
                return new Spec(s, s, Map.of(), baseDir);
            }
            if (!(def instanceof Map<?, ?> m) || m.get("type") == null) {
                b.definitionProblem(null, "a plugin must be a type name or a mapping with 'type': " + def);
                return null;
            }
            final String type = String.valueOf(m.get("type"));
            final Object name = m.get("name");
            return new Spec(type, name == null ? type : String.valueOf(name), m, baseDir);
        }

        @Override
        public String string(final String key, final String dflt) {
            return str(key, dflt);
        }

        @Override
        public Map<String, String> stringMap(final String key) {
            final Object v = raw(key);
            if (v == null) {
                return Map.of();
            }
            if (!(v instanceof Map<?, ?> m)) {
                throw new IllegalArgumentException("'" + key + "' must be a mapping, is '" + v + "'");
            }
            final Map<String, String> out = new LinkedHashMap<>();
            for (final Map.Entry<?, ?> e : m.entrySet()) {
                if (e.getValue() == null || e.getValue() instanceof Map || e.getValue() instanceof List) {
                    throw new IllegalArgumentException("'" + key + "." + e.getKey() + "' must be a scalar, is '"
                        + e.getValue() + "'");
                }
                out.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
            }
            return out;
        }

        @Override
        public Path path(final String key) {
            final String v = str(key, null);
            return v == null ? null : resolve(v);
        }

        @Override
        public Path resolve(final String value) {
            final Path p = Path.of(value);
            return p.isAbsolute() || baseDir == null ? p : baseDir.resolve(p);
        }

        Object raw(final String key) {
            used.add(key);
            return params.get(key);
        }

        String str(final String key, final String dflt) {
            final Object v = raw(key);
            return v == null ? dflt : String.valueOf(v);
        }

        double dbl(final String key, final double dflt) {
            final Object v = raw(key);
            if (v == null) {
                return dflt;
            }
            if (v instanceof Number n) {
                return n.doubleValue();
            }
            throw new IllegalArgumentException("'" + key + "' must be a number, is '" + v + "'");
        }

        @Override
        public int integer(final String key, final int dflt) {
            final Object v = raw(key);
            if (v == null) {
                return dflt;
            }
            if (v instanceof Number n && n.doubleValue() == n.intValue()) {
                return n.intValue();
            }
            throw new IllegalArgumentException("'" + key + "' must be an integer, is '" + v + "'");
        }

        @Override
        public boolean bool(final String key, final boolean dflt) {
            final Object v = raw(key);
            if (v == null) {
                return dflt;
            }
            if (v instanceof Boolean x) {
                return x;
            }
            throw new IllegalArgumentException("'" + key + "' must be true or false, is '" + v + "'");
        }

        <E extends Enum<E>> E enumOf(final String key, final Class<E> type, final E dflt) {
            final String v = str(key, null);
            if (v == null) {
                return dflt;
            }
            try {
                return Enum.valueOf(type, v.toUpperCase(Locale.ROOT).replace('-', '_'));
            } catch (final IllegalArgumentException ex) {
                throw new IllegalArgumentException("'" + key + "' must be one of "
                    + java.util.Arrays.toString(type.getEnumConstants()).toLowerCase(Locale.ROOT).replace('_', '-')
                    + ", is '" + v + "'");
            }
        }

        List<String> unused() {
            final List<String> u = new ArrayList<>();
            for (final Object k : params.keySet()) {
                if (!used.contains(String.valueOf(k))) {
                    u.add(String.valueOf(k));
                }
            }
            return u;
        }
    }

    /** Builds plugins from specs. */
    private static final class Factory {
        private final Environment env;
        private final SessionTable sessions;
        private final Profile.Builder builder;

        Factory(final Environment env, final SessionTable sessions, final Profile.Builder builder) {
            this.env = env;
            this.sessions = sessions;
            this.builder = builder;
        }

        void guard(final Spec s, final Runnable r) {
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

        private <T> T need(final T value, final String what, final Spec s) {
            if (value == null) {
                throw new IllegalStateException("type '" + s.type + "' needs " + what + " in the environment");
            }
            return value;
        }

        Preparer preparer(final Spec s) {
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
                            + (TOKENIZE.equals(s.type) ? "; 'tokenize' needs the kvidx-tokenize jar on the class path"
                            : "") + ")");
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

        Filter filter(final Spec s) {
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

        Scorer scorer(final Spec s) {
            final PodRegistry r = env.registry;
            return switch (s.type) {
                case "cache-affinity" -> s.bool("tiers", false)
                    ? new CacheAffinityScorer(s.name, need(env.tiersOrHostMap(), "a tier lookup (or a shared-memory"
                        + " index, beside which the host tier map is opened)", s),
                        s.dbl("gpu", CacheAffinityScorer.GPU_WEIGHT_DEFAULT),
                        s.dbl("cpu", CacheAffinityScorer.CPU_WEIGHT_DEFAULT),
                        s.dbl("disk", CacheAffinityScorer.DISK_WEIGHT_DEFAULT),
                        s.integer("tier-candidates", CacheAffinityScorer.TIER_CANDIDATES_DEFAULT))
                    : new CacheAffinityScorer(s.name);
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
                default -> throw new IllegalArgumentException("unknown scorer type '" + s.type
                    + "' (cache-affinity, least-load, round-robin, session-affinity, lora-affinity, kv-utilization,"
                    + " lmcache, dynamo-cost)");
            };
        }

        /**
         * {@code lmcache}: {@code lookup-mode: occupancy} (default; key counts from the environment's poller) or
         * {@code prefix-lookup} ({@code POST /lookup} per request to {@code controller}, {@code timeout-ms},
         * {@code worker-map}).
         */
        private Scorer lmCache(final Spec s, final PodRegistry r) {
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

        Picker picker(final Spec s) {
            return switch (s.type) {
                case "max-score" -> new MaxScorePicker(s.name);
                case "weighted-random" -> new WeightedRandomPicker(s.name);
                case "softmax" -> new SoftmaxPicker(s.name, s.dbl("temperature", 1.0));
                case "consistent-hash" -> new ConsistentHashPicker(s.name, env.registry,
                    s.integer("virtual-nodes", ConsistentHashPicker.VIRTUAL_NODES_DEFAULT));
                case "power-of-two" -> new PowerOfTwoPicker(s.name, env.registry,
                    s.enumOf("metric", LoadMetric.class, LoadMetric.REQUESTS));
                case "sticky-session" -> {
                    final Object d = s.raw("delegate");
                    final Spec inner = d == null ? new Spec("max-score", "max-score", Map.of(), s.baseDir)
                        : Spec.of(s.baseDir, d, builder);
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
}
