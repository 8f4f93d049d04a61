package io.kvidx.discovery;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * What to discover and how to turn a pod into engines: the namespace, the pods (a label selector, or the selector
 * and target port of an InferencePool, followed when the pool changes), and the defaults for what a pod's
 * annotations do not say. Defaults live here and only here; the CLI and the YAML name these constants.
 *
 * <p>Annotations read on a pod (all optional):
 * <ul>
 *   <li>{@value #KV_EVENTS_PORT_ANNOTATION}: the port of the engine's ZeroMQ PUB socket (rank 0; rank r uses
 *       port + r, as vLLM binds them); default {@link #kvEventsPort()}.</li>
 *   <li>{@value #KV_REPLAY_PORT_ANNOTATION}: the port of its replay ROUTER socket (offset by rank the same way);
 *       default {@link #kvReplayPort()} (0: none).</li>
 *   <li>{@value #DP_SIZE_ANNOTATION}: how many data-parallel ranks the pod runs (each its own engine and cache);
 *       default 1.</li>
 *   <li>{@value #MODEL_ANNOTATION}: the model served (else the label {@link #modelLabel()}, else {@link #model()}).</li>
 *   <li>{@value #ENGINE_ANNOTATION}: {@code vllm} or {@code sglang}; default {@link #engine()}.</li>
 *   <li>{@value #HTTP_PORT_ANNOTATION}: the port of its OpenAI server; default the pool's target port, else
 *       {@link #httpPort()}.</li>
 * </ul>
 *
 * <p><b>Note:</b> not thread safe; configure, {@link #conclude()}, then hand to {@link PodDiscovery}.
 */
public final class DiscoveryContext {
    /** llm-d's convention for the engines' KV-event PUB port. */
    public static final int KV_EVENTS_PORT_DEFAULT = 5557;
    /** vLLM's OpenAI server port. */
    public static final int HTTP_PORT_DEFAULT = 8000;
    /** How often the informer re-delivers every pod (a safety net; changes arrive by watch at once). */
    public static final long RESYNC_MS_DEFAULT = 60_000;
    /** The event format of pods that do not say. */
    public static final String ENGINE_DEFAULT = "vllm";
    /** The pod label naming the model when no annotation does (llm-d's). */
    public static final String MODEL_LABEL_DEFAULT = "llm-d.ai/model";
    /** Annotation: KV-event PUB port. */
    public static final String KV_EVENTS_PORT_ANNOTATION = "kvidx.io/kv-events-port";
    /** Annotation: replay ROUTER port. */
    public static final String KV_REPLAY_PORT_ANNOTATION = "kvidx.io/kv-replay-port";
    /** Annotation: data-parallel size. */
    public static final String DP_SIZE_ANNOTATION = "kvidx.io/data-parallel-size";
    /** Annotation: model. */
    public static final String MODEL_ANNOTATION = "kvidx.io/model";
    /** Annotation: engine (event format). */
    public static final String ENGINE_ANNOTATION = "kvidx.io/engine";
    /** Annotation: OpenAI server port. */
    public static final String HTTP_PORT_ANNOTATION = "kvidx.io/http-port";
    /** The well-known topology label of a zone (read from the pod's labels when present). */
    public static final String ZONE_LABEL = "topology.kubernetes.io/zone";

    private String namespace;
    private Map<String, String> selector;
    private String pool;
    private int kvEventsPort = KV_EVENTS_PORT_DEFAULT;
    private int kvReplayPort;
    private int httpPort = HTTP_PORT_DEFAULT;
    private String engine = ENGINE_DEFAULT;
    private String model;
    private String modelLabel = MODEL_LABEL_DEFAULT;
    private long resyncMs = RESYNC_MS_DEFAULT;

    /**
     * Parses a label selector of equality terms, {@code k=v[,k2=v2...]} ({@code ==} accepted).
     *
     * @param text the selector.
     * @return the labels, in order.
     * @throws IllegalArgumentException for an empty selector, a term without {@code =}, or an empty key.
     */
    public static Map<String, String> parseSelector(final String text) {
        final Map<String, String> labels = new LinkedHashMap<>();
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("label selector must not be empty");
        }
        for (final String term : text.split(",")) {
            final String t = term.strip();
            final int eq = t.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("label selector term '" + t + "' is not key=value (only "
                    + "equality terms are supported, as in an InferencePool)");
            }
            final String key = t.substring(0, eq).strip();
            String value = t.substring(eq + 1);
            if (value.startsWith("=")) {
                value = value.substring(1);
            }
            if (key.isEmpty() || key.endsWith("!")) {
                throw new IllegalArgumentException("label selector term '" + t + "' is not key=value");
            }
            labels.put(key, value.strip());
        }
        return labels;
    }

    /**
     * @param namespace the namespace to watch; null: the client's (in cluster, the service account's).
     * @return this.
     */
    public DiscoveryContext namespace(final String namespace) {
        this.namespace = namespace;
        return this;
    }

    /** @return the namespace, or null for the client's. */
    public String namespace() {
        return namespace;
    }

    /**
     * @param selector the pods' labels (all must match); exclusive with {@link #pool(String)}.
     * @return this.
     */
    public DiscoveryContext selector(final Map<String, String> selector) {
        this.selector = selector == null ? null : Map.copyOf(selector);
        return this;
    }

    /** @return the label selector, or null when a pool chooses the pods. */
    public Map<String, String> selector() {
        return selector;
    }

    /**
     * @param pool an InferencePool's name: its selector and target port choose the pods, followed when it changes.
     * @return this.
     */
    public DiscoveryContext pool(final String pool) {
        this.pool = pool;
        return this;
    }

    /** @return the InferencePool's name, or null. */
    public String pool() {
        return pool;
    }

    /**
     * @param port the default KV-event PUB port of rank 0.
     * @return this.
     */
    public DiscoveryContext kvEventsPort(final int port) {
        this.kvEventsPort = port;
        return this;
    }

    /** @return the default KV-event PUB port. */
    public int kvEventsPort() {
        return kvEventsPort;
    }

    /**
     * @param port the default replay ROUTER port of rank 0, 0 for none.
     * @return this.
     */
    public DiscoveryContext kvReplayPort(final int port) {
        this.kvReplayPort = port;
        return this;
    }

    /** @return the default replay port, 0 for none. */
    public int kvReplayPort() {
        return kvReplayPort;
    }

    /**
     * @param port the engines' OpenAI server port when neither an annotation nor a pool says.
     * @return this.
     */
    public DiscoveryContext httpPort(final int port) {
        this.httpPort = port;
        return this;
    }

    /** @return the default OpenAI server port. */
    public int httpPort() {
        return httpPort;
    }

    /**
     * @param engine {@code vllm} or {@code sglang}.
     * @return this.
     */
    public DiscoveryContext engine(final String engine) {
        this.engine = engine;
        return this;
    }

    /** @return the default event format. */
    public String engine() {
        return engine;
    }

    /**
     * @param model the model of pods whose annotations and labels do not name one (null: unknown).
     * @return this.
     */
    public DiscoveryContext model(final String model) {
        this.model = model;
        return this;
    }

    /** @return the default model, or null. */
    public String model() {
        return model;
    }

    /**
     * @param label the pod label that names the model.
     * @return this.
     */
    public DiscoveryContext modelLabel(final String label) {
        this.modelLabel = label;
        return this;
    }

    /** @return the pod label that names the model. */
    public String modelLabel() {
        return modelLabel;
    }

    /**
     * @param ms the informers' resync period, 0 for none.
     * @return this.
     */
    public DiscoveryContext resyncMs(final long ms) {
        this.resyncMs = ms;
        return this;
    }

    /** @return the resync period (ms). */
    public long resyncMs() {
        return resyncMs;
    }

    /**
     * Validates once, before use.
     *
     * @return this.
     * @throws IllegalArgumentException naming the setting at fault.
     */
    public DiscoveryContext conclude() {
        if ((selector == null) == (pool == null)) {
            throw new IllegalArgumentException("discovery needs exactly one of a label selector or an InferencePool"
                + " name");
        }
        if (selector != null && selector.isEmpty()) {
            throw new IllegalArgumentException("label selector must not be empty (it would select every pod)");
        }
        if (pool != null && pool.isBlank()) {
            throw new IllegalArgumentException("InferencePool name must not be blank");
        }
        port("kv-events port", kvEventsPort, false);
        port("kv replay port", kvReplayPort, true);
        port("http port", httpPort, false);
        engine(Objects.requireNonNull(engine, "engine"), "the default engine");
        if (resyncMs < 0) {
            throw new IllegalArgumentException("resync must be >= 0 ms: " + resyncMs);
        }
        return this;
    }

    static void port(final String what, final int port, final boolean zeroAllowed) {
        if (port < (zeroAllowed ? 0 : 1) || port > 65_535) {
            throw new IllegalArgumentException(what + " must be in " + (zeroAllowed ? 0 : 1) + "..65535: " + port);
        }
    }

    static String engine(final String engine, final String where) {
        final String e = engine.strip().toLowerCase(java.util.Locale.ROOT);
        if (!e.equals("vllm") && !e.equals("sglang")) {
            throw new IllegalArgumentException(where + " must be vllm or sglang: '" + engine + "'");
        }
        return e;
    }
}
