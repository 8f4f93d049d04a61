package io.kvidx.discovery;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Discovery against fabric8's API server double (real HTTP, watches, resource versions): pods created, becoming
 * Ready, losing readiness, deleted, re-created with a new IP; annotations for ports, ranks, model and engine; a pool
 * whose selector changes; a watch the server closes and a 410 Gone, after which the informer re-lists and the
 * engines are still exact.
 */
@Timeout(60)
class PodDiscoveryTest {
    private static final String NS = "fleet";

    private ApiServerDouble api;
    private KubernetesClient client;
    private final AtomicReference<List<DiscoveredEngine>> engines = new AtomicReference<>();
    private PodDiscovery discovery;

    @BeforeEach
    void start() {
        api = new ApiServerDouble();
        client = api.client();
    }

    @AfterEach
    void stop() {
        if (discovery != null) {
            discovery.close();
        }
        api.close();
    }

    @Test
    void shouldFollowPodsThroughReadinessDeletionAndANewIp() {
        discovery = new PodDiscovery(config(), new DiscoveryContext().namespace(NS)
            .selector(DiscoveryContext.parseSelector("app=vllm")).model("qwen"), engines::set);
        await("the first list", () -> engines.get() != null && discovery.status().synced());
        assertEquals(List.of(), engines.get());

        create(pod("vllm-0", "10.0.0.7", false, Map.of("app", "vllm"), Map.of()));
        create(pod("other", "10.0.0.9", true, Map.of("app", "sglang"), Map.of()));
        await("the unready pod is seen", () -> discovery.status().podsSeen() == 1);
        assertEquals(List.of(), engines.get(), "not Ready: no engine");

        create(pod("vllm-0", "10.0.0.7", true, Map.of("app", "vllm"), Map.of()));
        await("ready", () -> engines.get().size() == 1);
        final DiscoveredEngine e = engines.get().get(0);
        assertEquals("vllm-0", e.podId());
        assertEquals("tcp://10.0.0.7:5557", e.kvEndpoint());
        assertEquals("http://10.0.0.7:8000", e.httpUrl());
        assertEquals("qwen", e.model());
        assertEquals("vllm", e.engine());
        assertNull(e.replayEndpoint());
        assertEquals("node-a", e.node());
        assertEquals("zone-1", e.zone());

        create(pod("vllm-0", "10.0.0.7", false, Map.of("app", "vllm"), Map.of()));
        await("readiness lost", () -> engines.get().isEmpty());

        create(pod("vllm-0", "10.0.0.8", true, Map.of("app", "vllm"), Map.of()));
        await("back with a new IP", () -> engines.get().size() == 1
            && engines.get().get(0).kvEndpoint().equals("tcp://10.0.0.8:5557"));

        client.pods().inNamespace(NS).withName("vllm-0").delete();
        await("deleted", () -> engines.get().isEmpty());
        final DiscoveryStatus s = discovery.status();
        assertEquals(0, s.podsSeen());
        assertEquals("app=vllm", s.selector());
        assertTrue(s.lastSyncMs() > 0);
        assertEquals(0, s.watchRestarts(), "no watch was lost");
    }

    @Test
    void shouldReadPortsRanksModelAndEngineFromAnnotationsAndRefuseBadOnes() {
        discovery = new PodDiscovery(config(), new DiscoveryContext().namespace(NS)
            .selector(Map.of("app", "vllm")).kvReplayPort(5558), engines::set);
        create(pod("dp", "10.0.0.7", true, Map.of("app", "vllm", "llm-d.ai/model", "llama"),
            Map.of(DiscoveryContext.DP_SIZE_ANNOTATION, "2", DiscoveryContext.KV_EVENTS_PORT_ANNOTATION, "6000",
                DiscoveryContext.HTTP_PORT_ANNOTATION, "9000", DiscoveryContext.ENGINE_ANNOTATION, "SGLang")));
        create(pod("bad", "10.0.0.9", true, Map.of("app", "vllm"),
            Map.of(DiscoveryContext.KV_EVENTS_PORT_ANNOTATION, "70000")));
        await("two ranks", () -> engines.get() != null && engines.get().size() == 2);
        final List<DiscoveredEngine> list = engines.get();
        assertEquals(List.of("dp", "dp#1"), list.stream().map(DiscoveredEngine::podId).toList());
        assertEquals(List.of("tcp://10.0.0.7:6000", "tcp://10.0.0.7:6001"),
            list.stream().map(DiscoveredEngine::kvEndpoint).toList());
        assertEquals(List.of("tcp://10.0.0.7:5558", "tcp://10.0.0.7:5559"),
            list.stream().map(DiscoveredEngine::replayEndpoint).toList());
        assertEquals("http://10.0.0.7:9000", list.get(1).httpUrl());
        assertEquals("llama", list.get(0).model());
        assertEquals("sglang", list.get(0).engine());
        await("the bad pod is counted", () -> discovery.status().podsRejected() == 1);
        assertTrue(discovery.status().lastError().contains("kvidx.io/kv-events-port must be in 1..65535: 70000"),
            discovery.status().lastError());
        assertEquals(2, discovery.status().podsReady());
    }

    @Test
    void shouldFollowAnInferencePoolsSelectorAndTargetPort() {
        discovery = new PodDiscovery(config(), new DiscoveryContext().namespace(NS).pool("llama-pool").model("llama"),
            engines::set);
        create(pod("a-0", "10.0.1.1", true, Map.of("app", "a"), Map.of()));
        create(pod("b-0", "10.0.2.1", true, Map.of("app", "b"), Map.of()));
        await("a missing pool is reported", () -> discovery.status().lastError() != null
            && discovery.status().lastError().contains("llama-pool not found"));
        assertTrue(engines.get() == null || engines.get().isEmpty());

        client.genericKubernetesResources(PodDiscovery.POOL).inNamespace(NS).resource(pool("app", "a", 8001))
            .create();
        await("the pool's pods", () -> engines.get() != null && engines.get().size() == 1
            && engines.get().get(0).podName().equals("a-0"));
        assertEquals("http://10.0.1.1:8001", engines.get().get(0).httpUrl(), "the pool's target port");

        client.genericKubernetesResources(PodDiscovery.POOL).inNamespace(NS).resource(pool("app", "b", 8002))
            .update();
        await("the new selector", () -> engines.get().size() == 1 && engines.get().get(0).podName().equals("b-0")
            && engines.get().get(0).httpUrl().equals("http://10.0.2.1:8002"));
        assertEquals("app=b", discovery.status().selector());

        client.genericKubernetesResources(PodDiscovery.POOL).inNamespace(NS).withName("llama-pool").delete();
        await("no pool, no engines", () -> engines.get().isEmpty());
        assertTrue(discovery.status().lastError().contains("was deleted"), discovery.status().lastError());
    }

    @Test
    void shouldRelistAfterAClosedWatchAndA410Gone() {
        discovery = new PodDiscovery(config(), new DiscoveryContext().namespace(NS).selector(Map.of("app", "vllm"))
            .model("m"), engines::set);
        create(pod("vllm-0", "10.0.0.7", true, Map.of("app", "vllm"), Map.of()));
        await("ready", () -> engines.get() != null && engines.get().size() == 1);
        await("watching", () -> discovery.status().synced());
        final long before = discovery.status().watchRestarts();

        api.goneOnNextWatches(1);
        api.closeWatches();
        // Changes while the watch is down must arrive through the re-list.
        create(pod("vllm-1", "10.0.0.8", true, Map.of("app", "vllm"), Map.of()));
        client.pods().inNamespace(NS).withName("vllm-0").delete();
        await("the re-list and the new watch", () -> engines.get().size() == 1
            && engines.get().get(0).podName().equals("vllm-1"));
        await("the 410 was served", () -> api.goneServed() == 1);
        await("the restart is counted", () -> discovery.status().watchRestarts() > before);

        create(pod("vllm-2", "10.0.0.9", true, Map.of("app", "vllm"), Map.of()));
        await("the new watch delivers", () -> engines.get().size() == 2);
    }

    @Test
    void shouldAskAnEngineThatNamesNoModelForItsModel() throws Exception {
        // The engine's OpenAI server: refuses first (still loading), then names its model.
        final java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        final com.sun.net.httpserver.HttpServer engine = com.sun.net.httpserver.HttpServer.create(
            new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        engine.createContext("/v1/models", x -> {
            final byte[] body = (asked.incrementAndGet() == 1 ? "{\"error\": \"loading\"}"
                : "{\"object\": \"list\", \"data\": [{\"id\": \"Qwen/Qwen3-0.6B\", \"object\": \"model\"}]}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
            x.sendResponseHeaders(asked.get() == 1 ? 503 : 200, body.length);
            x.getResponseBody().write(body);
            x.close();
        });
        engine.start();
        try {
            discovery = new PodDiscovery(config(), new DiscoveryContext().namespace(NS)
                .selector(Map.of("app", "vllm")), engines::set);
            create(pod("vllm-0", "127.0.0.1", true, Map.of("app", "vllm"),
                Map.of(DiscoveryContext.HTTP_PORT_ANNOTATION, Integer.toString(engine.getAddress().getPort()))));
            await("the first answer refused", () -> asked.get() >= 1 && discovery.status().podsRejected() == 1
                && discovery.status().lastError() != null && discovery.status().lastError().contains("503"));
            assertTrue(engines.get() == null || engines.get().isEmpty(), "no engine while its model is unknown");
            assertTrue(discovery.status().lastError().contains("/v1/models"), discovery.status().lastError());
            await("asked again after the retry delay, and the model learnt", () -> engines.get() != null
                && engines.get().size() == 1);
            assertEquals("Qwen/Qwen3-0.6B", engines.get().get(0).model());
            assertEquals(0, discovery.status().podsRejected());
            assertEquals(2, asked.get(), "asked once more, not on every rebuild");
            assertEquals("Qwen/Qwen3-0.6B", ModelProbe.firstModel(
                "{\"data\": [{\"id\": \"Qwen/Qwen3-0.6B\"}, {\"id\": \"lora-a\"}]}"));
            for (final String bad : new String[] {"", "[]", "{\"data\": []}", "{\"data\": [{\"id\": 3}]}",
                "{\"data\": [{\"id\": \" \"}]}", "{\"data\": {}}", "not json"}) {
                assertNull(ModelProbe.firstModel(bad), bad);
            }
        } finally {
            engine.stop(0);
        }
    }

    @Test
    void shouldRefuseAContextWithoutExactlyOneSource() {
        assertThrows(IllegalArgumentException.class, () -> new DiscoveryContext().namespace(NS).conclude());
        assertThrows(IllegalArgumentException.class, () -> new DiscoveryContext().selector(Map.of("a", "b"))
            .pool("p").conclude());
        assertThrows(IllegalArgumentException.class, () -> DiscoveryContext.parseSelector("app"));
        assertThrows(IllegalArgumentException.class, () -> DiscoveryContext.parseSelector("app!=x"));
        assertEquals(Map.of("app", "x", "tier", "y"), DiscoveryContext.parseSelector("app=x, tier==y"));
        assertThrows(IllegalArgumentException.class, () -> new DiscoveryContext().selector(Map.of("a", "b"))
            .engine("trt").conclude());
    }

    private io.fabric8.kubernetes.client.Config config() {
        return client.getConfiguration();
    }

    private void create(final Pod pod) {
        api.put(pod);
    }

    static Pod pod(final String name, final String ip, final boolean ready, final Map<String, String> labels,
        final Map<String, String> annotations) {
        return ApiServerDouble.pod(NS, name, ip, ready, labels, annotations);
    }

    static GenericKubernetesResource pool(final String label, final String value, final int port) {
        return new GenericKubernetesResourceBuilder().withApiVersion("inference.networking.k8s.io/v1")
            .withKind("InferencePool").withNewMetadata().withName("llama-pool").withNamespace(NS).endMetadata()
            .addToAdditionalProperties("spec", Map.of("selector", Map.of("matchLabels", Map.of(label, value)),
                "targetPorts", List.of(Map.of("number", port)),
                "endpointPickerRef", Map.of("name", "kvidx-epp", "portNumber", 9002)))
            .build();
    }

    static void await(final String what, final BooleanSupplier condition) {
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + what);
            }
            try {
                Thread.sleep(20);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
                fail("interrupted");
            }
        }
    }
}
