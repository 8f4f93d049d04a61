package io.kvidx.daemon.cli;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.DiscoverySettings;
import io.kvidx.discovery.DiscoveryContext;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/**
 * The options of {@code kvidx daemon} that find the engines in a Kubernetes cluster (a picocli mixin): pods of one
 * namespace by a label selector ({@code --discover}) or by an InferencePool ({@code --discover-pool}), and what their
 * annotations do not say. Unset options leave the context as the config file made it; defaults are discovery's
 * ({@link DiscoveryContext}). docs/kubernetes.md lists the annotations and the permissions.
 */
final class DiscoveryOptions {
    @Option(names = "--discover", paramLabel = "SELECTOR", description = "Subscribe to the engines of the pods that "
        + "match this label selector (k=v[,k2=v2]) in --discover-namespace, watched on the Kubernetes API server: a "
        + "Running, Ready pod with an IP is an engine (one per data-parallel rank), one that goes away, loses "
        + "readiness or changes IP is removed (default: off).")
    private String selector;

    @Option(names = "--discover-pool", paramLabel = "NAME", description = "Like --discover, with the selector and "
        + "target port of this InferencePool (inference.networking.k8s.io/v1), followed when it changes.")
    private String pool;

    @Option(names = "--discover-namespace", paramLabel = "NS", description = "Namespace to watch (default: the "
        + "service account's in a pod, else the kubeconfig's).")
    private String namespace;

    @Option(names = "--discover-kv-port", paramLabel = "PORT", description = "Engines' KV-event PUB port when the "
        + "pod has no kvidx.io/kv-events-port annotation (default " + DiscoveryContext.KV_EVENTS_PORT_DEFAULT
        + "; rank r uses PORT + r).")
    private Integer kvPort;

    @Option(names = "--discover-replay-port", paramLabel = "PORT", description = "Engines' replay ROUTER port when "
        + "the pod has no kvidx.io/kv-replay-port annotation; 0 for none (default 0).")
    private Integer replayPort;

    @Option(names = "--discover-engine", paramLabel = "vllm|sglang", description = "Event format when the pod has no "
        + "kvidx.io/engine annotation (default " + DiscoveryContext.ENGINE_DEFAULT + ").")
    private String engine;

    @Option(names = "--discover-model", paramLabel = "MODEL", description = "Model of pods whose kvidx.io/model "
        + "annotation and model label are missing (default: unknown).")
    private String model;

    @Option(names = "--discover-model-label", paramLabel = "LABEL", description = "Pod label naming the model "
        + "(default " + DiscoveryContext.MODEL_LABEL_DEFAULT + ").")
    private String modelLabel;

    @Option(names = "--discover-resync-ms", paramLabel = "MS", description = "Informer resync period; 0 for none "
        + "(default " + DiscoveryContext.RESYNC_MS_DEFAULT + ").")
    private Long resyncMs;

    @Option(names = "--kubeconfig", paramLabel = "FILE", description = "Credentials for the API server (default: "
        + "KUBECONFIG, ~/.kube/config, then the pod's service account token and CA).")
    private Path kubeconfig;

    /**
     * Sets the options given.
     *
     * @param context the daemon's context.
     */
    void applyTo(final DaemonContext context) {
        final DiscoverySettings d = context.discovery();
        if (selector != null) {
            d.selector(selector).pool(null);
        }
        if (pool != null) {
            d.pool(pool);
            if (selector == null) {
                d.selector(null);
            }
        }
        if (namespace != null) {
            d.namespace(namespace);
        }
        if (kvPort != null) {
            d.kvEventsPort(kvPort);
        }
        if (replayPort != null) {
            d.kvReplayPort(replayPort);
        }
        if (engine != null) {
            d.engine(engine);
        }
        if (model != null) {
            d.model(model);
        }
        if (modelLabel != null) {
            d.modelLabel(modelLabel);
        }
        if (resyncMs != null) {
            d.resyncMs(resyncMs);
        }
        if (kubeconfig != null) {
            d.kubeconfig(kubeconfig);
        }
    }
}
