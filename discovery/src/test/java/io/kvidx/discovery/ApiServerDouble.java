package io.kvidx.discovery;

import io.fabric8.kubernetes.client.NamespacedKubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.CustomResourceDefinitionContext;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.ByteString;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;

import java.util.HashMap;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * fabric8's API server double in CRUD mode (real HTTP, real watches over WebSockets, resource versions), with two
 * faults a real API server produces: it closes every open watch ({@link #closeWatches()}, as at a control-plane
 * restart or a watch timeout) and answers the next watches with 410 Gone ({@link #goneOnNextWatches(int)}, an ERROR
 * event as the first of the stream, as when the informer's resource version has been compacted away). The double
 * keeps no event history: a watch resumed from an old resource version misses what changed meanwhile, so only a
 * re-list (after the 410) brings those changes, which is what the tests check.
 */
public final class ApiServerDouble implements AutoCloseable {
    private final Faults dispatcher = new Faults();
    private final KubernetesMockServer server;
    private final NamespacedKubernetesClient client;

    /** Starts the double (HTTP on a free loopback port) and a client for it. */
    public ApiServerDouble() {
        server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), dispatcher, false);
        server.init();
        server.expectCustomResource(new CustomResourceDefinitionContext.Builder()
            .withGroup("inference.networking.k8s.io").withVersion("v1").withKind("InferencePool")
            .withPlural("inferencepools").withScope("Namespaced").build());
        client = server.createClient();
    }

    /** @return a client of the double. */
    public NamespacedKubernetesClient client() {
        return client;
    }

    /** Closes every watch open now; the informers must re-list and re-watch. */
    public void closeWatches() {
        for (final WebSocket ws : dispatcher.open) {
            ws.close(1000, "closed by the API server double");
        }
    }

    /**
     * @param n how many of the next watch requests to refuse with 410 Gone.
     */
    public void goneOnNextWatches(final int n) {
        dispatcher.gone.set(n);
    }

    /** @return watch requests refused with 410 so far. */
    public int goneServed() {
        return dispatcher.goneServed.get();
    }

    /**
     * @param namespace the namespace the kubeconfig names.
     * @return a kubeconfig (YAML) for the double, as a process outside this JVM would be given.
     */
    public String kubeconfig(final String namespace) {
        return String.join("\n", "apiVersion: v1", "kind: Config", "clusters:", "- name: double", "  cluster:",
            "    server: " + client.getConfiguration().getMasterUrl(), "contexts:", "- name: double", "  context:",
            "    cluster: double", "    user: test", "    namespace: " + namespace, "current-context: double",
            "users:", "- name: test", "  user:", "    token: test", "");
    }

    /**
     * Creates or replaces a pod, its status included (as the kubelet would set it).
     *
     * @param pod the pod.
     */
    public void put(final io.fabric8.kubernetes.api.model.Pod pod) {
        final String ns = pod.getMetadata().getNamespace();
        final io.fabric8.kubernetes.api.model.Pod existing = client.pods().inNamespace(ns)
            .withName(pod.getMetadata().getName()).get();
        if (existing == null) {
            client.pods().inNamespace(ns).resource(pod).create();
        } else {
            pod.getMetadata().setResourceVersion(existing.getMetadata().getResourceVersion());
            client.pods().inNamespace(ns).resource(pod).update();
        }
        final io.fabric8.kubernetes.api.model.Pod stored = client.pods().inNamespace(ns)
            .withName(pod.getMetadata().getName()).get();
        if (stored.getStatus() == null || !pod.getStatus().equals(stored.getStatus())) {
            stored.setStatus(pod.getStatus());
            client.pods().inNamespace(ns).resource(stored).updateStatus();
        }
    }

    /**
     * @param namespace   namespace.
     * @param name        pod name.
     * @param ip          pod IP.
     * @param ready       whether its Ready condition is True.
     * @param labels      labels ({@code topology.kubernetes.io/zone: zone-1} is added).
     * @param annotations annotations.
     * @return a Running pod on node-a.
     */
    public static io.fabric8.kubernetes.api.model.Pod pod(final String namespace, final String name,
        final String ip, final boolean ready, final java.util.Map<String, String> labels,
        final java.util.Map<String, String> annotations) {
        final java.util.Map<String, String> allLabels = new java.util.HashMap<>(labels);
        allLabels.put(DiscoveryContext.ZONE_LABEL, "zone-1");
        return new io.fabric8.kubernetes.api.model.PodBuilder().withNewMetadata().withName(name)
            .withNamespace(namespace).withLabels(allLabels).withAnnotations(annotations).endMetadata()
            .withNewSpec().withNodeName("node-a").addNewContainer().withName("vllm").withImage("vllm/vllm-openai")
            .endContainer().endSpec()
            .withNewStatus().withPhase("Running").withPodIP(ip)
            .addNewCondition().withType("Ready").withStatus(ready ? "True" : "False").endCondition()
            .endStatus().build();
    }

    @Override
    public void close() {
        client.close();
        server.destroy();
    }

    private static final class Faults extends KubernetesCrudDispatcher {
        final Set<WebSocket> open = ConcurrentHashMap.newKeySet();
        final AtomicInteger gone = new AtomicInteger();
        final AtomicInteger goneServed = new AtomicInteger();

        @Override
        public MockResponse handleWatch(final String path) {
            if (gone.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                goneServed.incrementAndGet();
                // As a real API server does: the watch opens, then its first event is an ERROR carrying 410.
                return new MockResponse().withWebSocketUpgrade(new WebSocketListener() {
                    @Override
                    public void onOpen(final WebSocket ws, final Response response) {
                        ws.send("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                            + "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version\","
                            + "\"reason\":\"Expired\",\"code\":410}}");
                        ws.close(1000, "expired");
                    }
                });
            }
            final MockResponse watch = super.handleWatch(path);
            final WebSocketListener inner = watch.getWebSocketListener();
            if (inner == null) {
                return watch;
            }
            return watch.withWebSocketUpgrade(new Tracking(inner, open));
        }
    }

    /** Delegates to the CRUD dispatcher's listener and remembers the socket while it is open. */
    private static final class Tracking extends WebSocketListener {
        private final WebSocketListener inner;
        private final Set<WebSocket> open;

        Tracking(final WebSocketListener inner, final Set<WebSocket> open) {
            this.inner = inner;
            this.open = open;
        }

        @Override
        public void onBeforeAccept(final WebSocket ws, final Response response) {
            inner.onBeforeAccept(ws, response);
        }

        @Override
        public void onOpen(final WebSocket ws, final Response response) {
            open.add(ws);
            inner.onOpen(ws, response);
        }

        @Override
        public void onMessage(final WebSocket ws, final String text) {
            inner.onMessage(ws, text);
        }

        @Override
        public void onMessage(final WebSocket ws, final ByteString bytes) {
            inner.onMessage(ws, bytes);
        }

        @Override
        public void onMessage(final WebSocket ws, final byte[] bytes) {
            inner.onMessage(ws, bytes);
        }

        @Override
        public void onPing(final WebSocket ws, final byte[] bytes) {
            inner.onPing(ws, bytes);
        }

        @Override
        public void onClosing(final WebSocket ws, final int code, final String reason) {
            open.remove(ws);
            inner.onClosing(ws, code, reason);
        }

        @Override
        public void onClosed(final WebSocket ws, final int code, final String reason) {
            open.remove(ws);
            inner.onClosed(ws, code, reason);
        }

        @Override
        public void onFailure(final WebSocket ws, final Throwable t, final Response response) {
            open.remove(ws);
            inner.onFailure(ws, t, response);
        }
    }
}
