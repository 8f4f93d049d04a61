package io.kvidx.discovery;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.http.BasicBuilder;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.Interceptor;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * Engines from the API server: a fabric8 informer (list, then watch; relist on 410 Gone; periodic resync) on the
 * pods of one namespace chosen by a label selector, or by an InferencePool ({@code inference.networking.k8s.io/v1}:
 * its {@code spec.selector.matchLabels} and {@code spec.targetPorts[0].number}) whose changes restart the pod
 * informer with the new selector. Every change of the ready pods publishes the whole engine list to the listener;
 * the daemon reconciles its one membership table with it (a pod that leaves, loses readiness or comes back with a
 * new IP is a removal and an arrival there).
 *
 * <p>Informer callbacks only mark the list dirty; one thread of its own ({@code kvidx-discovery}) rebuilds and
 * publishes it. Watch restarts are counted where they happen: a client of its own counts the watch requests it
 * sends, and every one beyond an informer's first re-establishes a lost watch.
 *
 * <p><b>Note:</b> the listener is called on the discovery thread only, never concurrently; {@link #status()} may be
 * read by any thread.
 */
public final class PodDiscovery implements AutoCloseable {
    /** The InferencePool resource (named in full, so no API discovery call is needed). */
    public static final ResourceDefinitionContext POOL = new ResourceDefinitionContext.Builder()
        .withGroup("inference.networking.k8s.io").withVersion("v1").withKind("InferencePool")
        .withPlural("inferencepools").withNamespaced(true).build();

    private static final Logger LOG = LoggerFactory.getLogger(PodDiscovery.class);
    /** How often the status is republished (with the watch restarts counted so far). */
    private static final long WATCH_CHECK_MS = 100;

    private final KubernetesClient client;
    private final DiscoveryContext context;
    private final Consumer<List<DiscoveredEngine>> listener;
    private final String namespace;
    private final ScheduledExecutorService thread;
    private final AtomicBoolean dirty = new AtomicBoolean();
    /** Watch requests sent (every informer's first one and each re-established one). */
    private final AtomicLong watchRequests = new AtomicLong();
    /** Informers started: each sends one watch request that is not a restart. */
    private final AtomicLong informerStarts = new AtomicLong();
    private final AtomicLong lastSyncMs = new AtomicLong();
    private final ModelProbe models = new ModelProbe(this::markDirty);
    private final AtomicBoolean retryScheduled = new AtomicBoolean();

    private SharedIndexInformer<Pod> pods;
    private SharedIndexInformer<GenericKubernetesResource> pool;
    private Map<String, String> selector;
    private int poolPort;
    private List<DiscoveredEngine> published;
    private volatile DiscoveryStatus status;
    private volatile String lastError;
    private volatile boolean closed;

    /**
     * Starts watching (returns at once; the first list arrives on the informer's thread).
     *
     * @param config   how to reach the API server (in-cluster credentials or a kubeconfig: fabric8's
     *                 {@code Config.autoConfigure}, {@code Config.fromKubeconfig}); discovery makes its client.
     * @param context  what to discover ({@link DiscoveryContext#conclude()} is called here).
     * @param listener takes the whole engine list after every change (on the discovery thread).
     */
    public PodDiscovery(final Config config, final DiscoveryContext context,
        final Consumer<List<DiscoveredEngine>> listener) {
        Objects.requireNonNull(config, "config");
        // Its own client, whose requests are counted: every watch request beyond one per informer start is a watch
        // the informer lost and re-established (a closed watch, a 410 Gone).
        this.client = new KubernetesClientBuilder().withConfig(config)
            .withHttpClientBuilderConsumer(b -> b.addOrReplaceInterceptor("kvidx-watch-count", new Interceptor() {
                @Override
                public void before(final BasicBuilder builder, final HttpRequest request,
                    final Interceptor.RequestTags tags) {
                    final String query = request.uri().getRawQuery();
                    if (query != null && (query.startsWith("watch=true") || query.contains("&watch=true"))) {
                        watchRequests.incrementAndGet();
                    }
                }
            })).build();
        this.context = Objects.requireNonNull(context, "context").conclude();
        this.listener = Objects.requireNonNull(listener, "listener");
        this.namespace = context.namespace() != null ? context.namespace() : config.getNamespace();
        if (namespace == null || namespace.isBlank()) {
            client.close();
            throw new IllegalArgumentException("discovery needs a namespace: none given and the client has none");
        }
        this.status = new DiscoveryStatus(false, null, 0, 0, 0, 0, 0, 0, null);
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            final Thread t = new Thread(r, "kvidx-discovery");
            t.setDaemon(true);
            return t;
        });
        thread.execute(() -> {
            if (context.pool() != null) {
                startPool();
            } else {
                selector = context.selector();
                startPods();
            }
        });
        thread.scheduleWithFixedDelay(this::checkWatches, WATCH_CHECK_MS, WATCH_CHECK_MS, TimeUnit.MILLISECONDS);
    }

    /**
     * @return the namespace watched.
     */
    public String namespace() {
        return namespace;
    }

    /**
     * @return what discovery knows now.
     */
    public DiscoveryStatus status() {
        return status;
    }

    private void startPool() {
        informerStarts.incrementAndGet();
        pool = client.genericKubernetesResources(POOL).inNamespace(namespace)
            .withName(context.pool()).runnableInformer(context.resyncMs());
        pool.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(final GenericKubernetesResource obj) {
                thread.execute(() -> poolChanged(obj));
            }

            @Override
            public void onUpdate(final GenericKubernetesResource oldObj, final GenericKubernetesResource newObj) {
                thread.execute(() -> poolChanged(newObj));
            }

            @Override
            public void onDelete(final GenericKubernetesResource obj, final boolean deletedFinalStateUnknown) {
                thread.execute(() -> poolChanged(null));
            }
        });
        pool.exceptionHandler((started, t) -> retry("InferencePool " + context.pool(), t));
        pool.start();
    }

    private void poolChanged(final GenericKubernetesResource obj) {
        if (closed) {
            return;
        }
        lastSyncMs.set(System.currentTimeMillis());
        Map<String, String> wanted = null;
        int port = 0;
        if (obj == null) {
            lastError = "InferencePool " + namespace + "/" + context.pool() + " was deleted";
        } else {
            try {
                final InferencePoolSpec spec = InferencePoolSpec.of(obj);
                wanted = spec.matchLabels();
                port = spec.targetPort();
            } catch (final IllegalArgumentException ex) {
                lastError = "InferencePool " + namespace + "/" + context.pool() + ": " + ex.getMessage();
                LOG.warn("kvidx discovery: {}", lastError);
            }
        }
        if (Objects.equals(wanted, selector) && port == poolPort) {
            publishStatus();
            return;
        }
        LOG.info("kvidx discovery: InferencePool {}/{} selects {} (target port {})", namespace, context.pool(),
            wanted == null ? "no pods" : wanted, port);
        stopPods();
        selector = wanted;
        poolPort = port;
        if (selector != null) {
            startPods();
        } else {
            rebuild();
        }
    }

    private void startPods() {
        informerStarts.incrementAndGet();
        pods = client.pods().inNamespace(namespace).withLabels(selector).runnableInformer(context.resyncMs());
        pods.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(final Pod obj) {
                markDirty();
            }

            @Override
            public void onUpdate(final Pod oldObj, final Pod newObj) {
                markDirty();
            }

            @Override
            public void onDelete(final Pod obj, final boolean deletedFinalStateUnknown) {
                markDirty();
            }
        });
        pods.exceptionHandler((started, t) -> retry("pods " + selectorText(selector), t));
        pods.start().whenComplete((ok, failure) -> markDirty());
    }

    private void stopPods() {
        if (pods != null) {
            pods.stop();
            pods = null;
        }
    }

    private boolean retry(final String what, final Throwable t) {
        lastError = "watch of " + what + " failed: " + t.getMessage();
        LOG.warn("kvidx discovery: {}; retrying", lastError);
        return !closed;
    }

    private void markDirty() {
        lastSyncMs.set(System.currentTimeMillis());
        if (dirty.compareAndSet(false, true) && !closed) {
            thread.execute(() -> {
                dirty.set(false);
                rebuild();
            });
        }
    }

    private void rebuild() {
        if (closed) {
            return;
        }
        final SharedIndexInformer<Pod> informer = pods;
        final List<Pod> matched = informer == null ? List.of() : informer.getStore().list();
        final List<DiscoveredEngine> engines = new ArrayList<>();
        int ready = 0;
        int rejected = 0;
        final long now = System.currentTimeMillis();
        final Set<String> uids = new HashSet<>();
        boolean asking = false;
        for (final Pod pod : matched) {
            uids.add(pod.getMetadata().getUid());
            final PodEngines.Result r = PodEngines.of(pod, context, poolPort, models, now);
            asking |= r.ready() && r.engines().isEmpty() && r.rejected() != null
                && models.whyFailed(pod.getMetadata().getUid()) != null;
            if (r.ready()) {
                ready++;
            }
            if (r.rejected() != null) {
                rejected++;
                if (!r.rejected().equals(lastError)) {
                    lastError = r.rejected();
                    LOG.warn("kvidx discovery: {}; the pod runs no engine until it is fixed", r.rejected());
                }
            }
            engines.addAll(r.engines());
        }
        models.retain(uids);
        if (asking && retryScheduled.compareAndSet(false, true) && !closed) {
            // A pod whose model could not be asked: ask again once the retry delay passed.
            thread.schedule(() -> {
                retryScheduled.set(false);
                markDirty();
            }, ModelProbe.RETRY_MS, TimeUnit.MILLISECONDS);
        }
        engines.sort(Comparator.comparing(DiscoveredEngine::podName).thenComparingInt(DiscoveredEngine::dpRank));
        final boolean synced = informer != null && informer.hasSynced();
        status = new DiscoveryStatus(synced || (context.pool() != null && selector == null && pool != null
            && pool.hasSynced()), selectorText(selector), matched.size(), ready, engines.size(), rejected,
            watchRestarts(), lastSyncMs.get(), lastError);
        if (!engines.equals(published) && (synced || informer == null)) {
            published = List.copyOf(engines);
            try {
                listener.accept(published);
            } catch (final RuntimeException ex) {
                lastError = "applying the engine list failed: " + ex.getMessage();
                LOG.warn("kvidx discovery: {}", lastError, ex);
            }
        }
    }

    private void publishStatus() {
        final DiscoveryStatus s = status;
        status = new DiscoveryStatus(s.synced(), selectorText(selector), s.podsSeen(), s.podsReady(), s.engines(),
            s.podsRejected(), watchRestarts(), lastSyncMs.get(), lastError);
    }

    /** Publishes the status (with the watch restarts counted so far) and finishes a first sync seen late. */
    private void checkWatches() {
        if (closed) {
            return;
        }
        final SharedIndexInformer<Pod> p = pods;
        if (p != null && !status.synced() && p.hasSynced()) {
            rebuild();
        }
        final SharedIndexInformer<GenericKubernetesResource> q = pool;
        if (q != null && selector == null && q.hasSynced() && !status.synced()) {
            if (lastError == null) {
                lastError = "InferencePool " + namespace + "/" + context.pool() + " not found";
            }
            rebuild();
        }
        publishStatus();
    }

    private long watchRestarts() {
        return Math.max(0, watchRequests.get() - informerStarts.get());
    }

    static String selectorText(final Map<String, String> labels) {
        return labels == null ? null : labels.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
            .collect(Collectors.joining(","));
    }

    /**
     * Stops the informers and the thread; the engine list is left as last published.
     */
    @Override
    public void close() {
        closed = true;
        thread.shutdownNow();
        models.close();
        try {
            thread.awaitTermination(5, TimeUnit.SECONDS);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        stopPods();
        if (pool != null) {
            pool.stop();
        }
        client.close();
    }
}
