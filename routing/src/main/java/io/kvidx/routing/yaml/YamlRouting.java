package io.kvidx.routing.yaml;

import io.kvidx.routing.TierLookup;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.KeyFunction;
import io.kvidx.routing.PodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodTopology;
import io.kvidx.routing.PrefillDecodeWorkflow;
import io.kvidx.routing.Profile;
import io.kvidx.routing.ProfileValidationException;
import io.kvidx.routing.Router;
import io.kvidx.routing.Selector;
import io.kvidx.routing.SingleWorkflow;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;
import io.kvidx.routing.Workflow;
import io.kvidx.routing.lmcache.LmCacheWorkerPoller;
import io.kvidx.routing.overlay.PickOverlay;
import io.kvidx.routing.plugins.SessionTable;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
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
    static final String TOKENIZE = "tokenize";

    private YamlRouting() {
    }

    /**
     * What the plugins of a YAML profile are built over.
     */
    public static final class Environment {
        // Package-private: read by PluginFactory.
        PodIndex index;
        PodRegistry registry;
        KeyFunction keyFunction;
        int blockSize = 16;
        PickOverlay overlay;
        SessionTable sessions;
        LmCacheWorkerPoller lmCache;
        TierLookup tiers;
        PodTopology topology = new PodTopology();
        String originNode;
        String originZone;
        final Map<String, PreparerType> preparerTypes = new LinkedHashMap<>();

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
         * @param topology where pods run, for {@code locality} scorers (the router's discovery fills it).
         * @return this.
         */
        public Environment topology(final PodTopology topology) {
            this.topology = java.util.Objects.requireNonNull(topology, "topology");
            return this;
        }

        /**
         * @return where pods run, for {@code locality} scorers (an empty table unless one was given).
         */
        public PodTopology topology() {
            return topology;
        }

        /**
         * @param node the router's own node (a {@code locality} scorer with {@code reference: origin} and no
         *             {@code node} of its own prefers pods there), or null.
         * @param zone the router's own zone, or null.
         * @return this.
         */
        public Environment origin(final String node, final String zone) {
            this.originNode = node;
            this.originZone = zone;
            return this;
        }

        /**
         * @param tiers block tiers for cache-affinity with {@code tiers: true}; when none is given and the index
         *              is an {@link IndexReaderPodIndex}, the cell's host tier map beside it is opened
         *              ({@link io.kvidx.routing.TierMapLookup#nextTo}) on first use.
         * @return this.
         */
        public Environment tiers(final TierLookup tiers) {
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
         * @return the tier lookup given or opened for the profiles (null when none was needed); a {@link io.kvidx.routing.TierMapLookup}
         * opened here is the caller's to close with the index.
         */
        public TierLookup tiers() {
            return tiers;
        }

        /** The tier lookup, opening the host tier map beside the index when none was given. */
        TierLookup tiersOrHostMap() {
            if (tiers == null && index instanceof IndexReaderPodIndex shared && registry != null) {
                tiers = io.kvidx.routing.TierMapLookup.nextTo(shared, registry);
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

        /**
         * Closes what the document opened: the profiles' preparers that hold resources (an LMCache client, a
         * tokenizer) and the environment's tier map when the document opened one. Quietly: a failure to close is
         * ignored. The index and the registry are the caller's.
         *
         * @param env the environment the document was parsed with.
         */
        public void close(final Environment env) {
            for (final Profile p : profiles.values()) {
                for (final var prep : p.preparers()) {
                    if (prep instanceof AutoCloseable c) {
                        closeQuietly(c);
                    }
                }
            }
            if (env.tiers() instanceof AutoCloseable c) {
                closeQuietly(c);
            }
        }

        private static void closeQuietly(final AutoCloseable c) {
            try {
                c.close();
            } catch (final Exception ex) {
                // closing: nothing to do
            }
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

    /**
     * @param yaml    a YAML document.
     * @param env     what plugins are built over.
     * @param baseDir directory relative file names in the document (tokenizers) resolve against, or null for the
     *                working directory.
     * @return profiles and workflow.
     * @throws ProfileValidationException when the document is invalid.
     */
    public static Loaded parse(final String yaml, final Environment env, final Path baseDir) {
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
        final PluginFactory f = new PluginFactory(env, sessions, b);
        for (final Object p : list(m.get("prepare"))) {
            final PluginSpec s = PluginSpec.of(baseDir, p, b);
            if (s != null) {
                f.guard(s, () -> b.prepare(f.preparer(s)));
            }
        }
        for (final Object p : list(m.get("filter"))) {
            final PluginSpec s = PluginSpec.of(baseDir, p, b);
            if (s != null) {
                f.guard(s, () -> b.filter(f.filter(s)));
            }
        }
        for (final Object p : list(m.get("score"))) {
            final PluginSpec s = PluginSpec.of(baseDir, p, b);
            if (s != null) {
                f.guard(s, () -> {
                    final double weight = s.dbl("weight", 1.0);
                    b.score(f.scorer(s), weight);
                });
            }
        }
        if (m.get("pick") != null) {
            final PluginSpec s = PluginSpec.of(baseDir, m.get("pick"), b);
            if (s != null) {
                f.guard(s, () -> b.pick(f.picker(s)));
            }
        }
        if (m.get("fallback") != null) {
            final PluginSpec s = PluginSpec.of(baseDir, m.get("fallback"), b);
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

}
