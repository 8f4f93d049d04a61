package io.kvidx.daemon.config;

import io.kvidx.discovery.DiscoveryContext;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * Pod discovery from the Kubernetes API server ({@code --discover} / {@code --discover-pool}, or the YAML's
 * {@code discovery:} section): which pods (a label selector or an InferencePool), where (a namespace), what their
 * annotations do not say, and which credentials to use (a kubeconfig file, or else the client's own search:
 * {@code KUBECONFIG}, {@code ~/.kube/config}, then the pod's service account token and CA). Off unless a selector or a
 * pool is given; the defaults are discovery's own ({@link DiscoveryContext}).
 *
 * <p><b>Note:</b> part of a {@link DaemonContext}: not thread safe; filled in on one thread, read after
 * {@link #conclude()}.
 */
public final class DiscoverySettings {
    private String selector;
    private String pool;
    private String namespace;
    private int kvEventsPort = DiscoveryContext.KV_EVENTS_PORT_DEFAULT;
    private int kvReplayPort;
    private String engine = DiscoveryContext.ENGINE_DEFAULT;
    private String model;
    private String modelLabel = DiscoveryContext.MODEL_LABEL_DEFAULT;
    private long resyncMs = DiscoveryContext.RESYNC_MS_DEFAULT;
    private Path kubeconfig;
    private DiscoveryContext context;

    /**
     * @param selector a label selector ({@code k=v[,k2=v2]}), or null.
     * @return this.
     */
    public DiscoverySettings selector(final String selector) {
        this.selector = selector;
        return this;
    }

    /** @return the label selector, or null. */
    public String selector() {
        return selector;
    }

    /**
     * @param pool an InferencePool's name, or null.
     * @return this.
     */
    public DiscoverySettings pool(final String pool) {
        this.pool = pool;
        return this;
    }

    /** @return the InferencePool's name, or null. */
    public String pool() {
        return pool;
    }

    /**
     * @param namespace the namespace to watch, or null for the client's.
     * @return this.
     */
    public DiscoverySettings namespace(final String namespace) {
        this.namespace = namespace;
        return this;
    }

    /** @return the namespace, or null. */
    public String namespace() {
        return namespace;
    }

    /**
     * @param port the engines' KV-event PUB port without an annotation.
     * @return this.
     */
    public DiscoverySettings kvEventsPort(final int port) {
        this.kvEventsPort = port;
        return this;
    }

    /** @return the default KV-event port. */
    public int kvEventsPort() {
        return kvEventsPort;
    }

    /**
     * @param port the engines' replay ROUTER port without an annotation, 0 for none.
     * @return this.
     */
    public DiscoverySettings kvReplayPort(final int port) {
        this.kvReplayPort = port;
        return this;
    }

    /** @return the default replay port, 0 for none. */
    public int kvReplayPort() {
        return kvReplayPort;
    }

    /**
     * @param engine {@code vllm} or {@code sglang}.
     * @return this.
     */
    public DiscoverySettings engine(final String engine) {
        this.engine = engine;
        return this;
    }

    /** @return the default event format. */
    public String engine() {
        return engine;
    }

    /**
     * @param model the model of pods that name none, or null.
     * @return this.
     */
    public DiscoverySettings model(final String model) {
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
    public DiscoverySettings modelLabel(final String label) {
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
    public DiscoverySettings resyncMs(final long ms) {
        this.resyncMs = ms;
        return this;
    }

    /** @return the resync period. */
    public long resyncMs() {
        return resyncMs;
    }

    /**
     * @param kubeconfig a kubeconfig file, or null for the client's own search.
     * @return this.
     */
    public DiscoverySettings kubeconfig(final Path kubeconfig) {
        this.kubeconfig = kubeconfig;
        return this;
    }

    /** @return the kubeconfig file, or null. */
    public Path kubeconfig() {
        return kubeconfig;
    }

    /**
     * @return what to discover (after {@link #conclude()}), or null when discovery is off.
     */
    public DiscoveryContext context() {
        return context;
    }

    /**
     * @param labels a label selector's terms.
     * @return them as {@code k=v,...}.
     */
    static String selectorText(final Map<String, String> labels) {
        return labels.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(","));
    }

    /**
     * Builds the discovery context when a selector or a pool is given, and refuses settings that cannot work or that
     * would be ignored (a discovery option without a selector or pool).
     *
     * @throws ConfigException naming the key at fault.
     */
    void conclude() {
        if (selector != null && pool != null) {
            throw new ConfigException("discovery.selector", "and discovery.pool (--discover, --discover-pool) are "
                + "exclusive");
        }
        if (selector == null && pool == null) {
            final boolean tuned = namespace != null || kvEventsPort != DiscoveryContext.KV_EVENTS_PORT_DEFAULT
                || kvReplayPort != 0 || !DiscoveryContext.ENGINE_DEFAULT.equals(engine) || model != null
                || !DiscoveryContext.MODEL_LABEL_DEFAULT.equals(modelLabel)
                || resyncMs != DiscoveryContext.RESYNC_MS_DEFAULT || kubeconfig != null;
            if (tuned) {
                throw new ConfigException("discovery", "options are set but discovery is off: give "
                    + "discovery.selector (--discover) or discovery.pool (--discover-pool)");
            }
            context = null;
            return;
        }
        try {
            final DiscoveryContext d = new DiscoveryContext().namespace(namespace).kvEventsPort(kvEventsPort)
                .kvReplayPort(kvReplayPort).engine(Objects.requireNonNull(engine, "engine")).model(model)
                .modelLabel(modelLabel).resyncMs(resyncMs);
            if (selector != null) {
                d.selector(DiscoveryContext.parseSelector(selector));
                selector = selectorText(d.selector());
            } else {
                d.pool(pool);
            }
            context = d.conclude();
        } catch (final IllegalArgumentException ex) {
            throw new ConfigException("discovery", ex.getMessage());
        }
        if (kubeconfig != null && !Files.isReadable(kubeconfig)) {
            throw new ConfigException("discovery.kubeconfig", "cannot read " + kubeconfig);
        }
    }
}
