package io.kvidx.deploy;

import static io.kvidx.deploy.PodChecks.container;
import static io.kvidx.deploy.PodChecks.named;
import static io.kvidx.deploy.PodChecks.one;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.gatewayapi.v1.HTTPBackendRef;
import io.fabric8.kubernetes.api.model.gatewayapi.v1.HTTPRoute;
import io.fabric8.kubernetes.api.model.gatewayapi.v1.HTTPRouteRule;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * deploy/kubernetes/examples/inference-pool: its InferencePool (GIE v1), HTTPRoute (Gateway API v1) and vLLM engines
 * parse strictly, and they fit together: the pool selects the engines and names the picker's Service and port, the
 * route sends to the pool, the daemon follows that pool on the engines' KV-event ports with their block size.
 */
class InferencePoolExampleTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String POOL_GROUP = "inference.networking.k8s.io";

    @TempDir
    Path tmp;

    private static Path exampleDir() {
        return Manifests.deployDir().resolve("kubernetes/examples/inference-pool");
    }

    /** The overlay as kubectl renders it; skipped, saying so, without kubectl. */
    private static List<HasMetadata> rendering() throws Exception {
        final List<HasMetadata> r = Manifests.overlaysOf(Manifests.pickerBase()).get("inference-pool");
        Assumptions.assumeTrue(r != null, "kubectl is not on PATH: `kubectl kustomize"
            + " deploy/kubernetes/examples/inference-pool` was not rendered, so its documents were not cross-checked"
            + " (install kubectl to run this check)");
        return r;
    }

    @Test
    void theExamplesOwnFilesParseIntoTheTypedModels() throws Exception {
        final Map<String, Object> k = Manifests.documents(Files.readString(exampleDir().resolve("kustomization.yaml")))
            .getFirst();
        @SuppressWarnings("unchecked")
        final List<String> resources = (List<String>) k.get("resources");
        int pools = 0;
        int routes = 0;
        for (final String r : resources) {
            if (r.startsWith("..")) {
                continue;
            }
            for (final HasMetadata doc : Manifests.typed(Manifests.documents(
                Files.readString(exampleDir().resolve(r))))) {
                pools += doc instanceof InferencePool ? 1 : 0;
                routes += doc instanceof HTTPRoute ? 1 : 0;
            }
        }
        assertEquals(1, pools, "one InferencePool");
        assertEquals(1, routes, "one HTTPRoute");
        assertNotNull(Manifests.typed(Manifests.documents(Files.readString(exampleDir().resolve("engines.yaml")))
            .getFirst()));
    }

    @Test
    void aFieldOrValueTheGatewayKindsDoNotAllowFails() {
        final String pool = """
            apiVersion: inference.networking.k8s.io/v1
            kind: InferencePool
            metadata: {name: p}
            spec:
              selector: {matchLabels: {app: a}}
              targetPorts: [{number: 8000}]
              endpointPickerRef: {name: e, port: {number: 9002}}
            """;
        assertNotNull(Manifests.typed(Manifests.documents(pool).getFirst()), "the valid pool parses");
        for (final String bad : List.of(
            // v1alpha2's fields beside v1's: unknown in v1
            pool.replace("targetPorts: [{number: 8000}]", "targetPorts: [{number: 8000}]\n  targetPortNumber: 8000"),
            pool.replace("port: {number: 9002}", "port: {number: 9002}, portNumber: 9002"),
            pool.replace("targetPorts: [{number: 8000}]", "targetPortNumber: 8000"),
            pool.replace("targetPorts: [{number: 8000}]", "targetPorts: [{number: 8000}, {number: 8001}]"),
            pool.replace("number: 8000", "number: 0"),
            pool.replace("{matchLabels: {app: a}}", "{matchLabels: {}}"),
            pool.replace("{name: e, port: {number: 9002}}", "{name: e}"),
            pool.replace("port: {number: 9002}}", "port: {number: 9002}, failureMode: Retry}"),
            pool.replace("metadata: {name: p}", "metadata: {name: p}\nfinalizers: [x]"),
            pool.replace("  selector: {matchLabels: {app: a}}\n", ""))) {
            assertThrows(IllegalArgumentException.class, () -> Manifests.typed(Manifests.documents(bad).getFirst()),
                bad);
        }
        final String route = """
            apiVersion: gateway.networking.k8s.io/v1
            kind: HTTPRoute
            metadata: {name: r}
            spec:
              parentRefs: [{name: g}]
              rules: [{backendRefs: [{group: inference.networking.k8s.io, kind: InferencePool, name: p}]}]
            """;
        assertNotNull(Manifests.typed(Manifests.documents(route).getFirst()), "the valid route parses");
        assertThrows(IllegalArgumentException.class, () -> Manifests.typed(Manifests.documents(
            route.replace("backendRefs:", "backendRef:")).getFirst()));
        assertThrows(IllegalArgumentException.class, () -> Manifests.typed(Manifests.documents(
            route.replace("name: p}", "name: p, pool: p}")).getFirst()));
    }

    @Test
    void thePoolSelectsTheEnginesAndNamesThePickersServiceAndPort() throws Exception {
        final List<HasMetadata> all = rendering();
        final InferencePool pool = one(all, InferencePool.class);
        final Deployment engines = named(all, Deployment.class, "vllm-qwen3");
        final Map<String, String> engineLabels = engines.getSpec().getTemplate().getMetadata().getLabels();
        final Map<String, String> selector = pool.spec().selector().matchLabels();
        assertTrue(engineLabels.entrySet().containsAll(selector.entrySet()),
            "the pool's selector " + selector + " picks the engines " + engineLabels);
        final Map<String, String> pickerLabels = PickerManifestTest.picker(all).getSpec().getTemplate().getMetadata()
            .getLabels();
        assertFalse(pickerLabels.entrySet().containsAll(selector.entrySet()), "the pool does not select the picker");
        final Container vllm = container(engines.getSpec().getTemplate().getSpec(), "vllm");
        assertEquals(pool.spec().targetPorts().getFirst().number(), port(vllm, "http"),
            "the pool's target port is the engines' OpenAI server");

        final InferencePool.EndpointPickerRef ref = pool.spec().endpointPickerRef();
        assertTrue(ref.refersToService(), "endpointPickerRef is a Service");
        final Service picker = named(all, Service.class, ref.name());
        assertEquals(PickerManifestTest.PICKER, picker.getMetadata().getName());
        final ServicePort sp = picker.getSpec().getPorts().stream()
            .filter(p -> p.getPort() == ref.port().number()).findFirst()
            .orElseThrow(() -> new AssertionError("Service " + ref.name() + " has no port " + ref.port().number()));
        final Container epp = container(PickerManifestTest.picker(all).getSpec().getTemplate().getSpec(), "epp");
        assertEquals(9002, port(epp, sp.getTargetPort().getStrVal()), "the Service's port reaches ext_proc");
        assertEquals(pool.getMetadata().getNamespace(), picker.getMetadata().getNamespace(), "one namespace");
        assertNotNull(pool.getMetadata().getNamespace());
    }

    @Test
    void theRouteSendsToThePool() throws Exception {
        final List<HasMetadata> all = rendering();
        final InferencePool pool = one(all, InferencePool.class);
        final HTTPRoute route = one(all, HTTPRoute.class);
        assertFalse(route.getSpec().getParentRefs().isEmpty(), "the route names its Gateway");
        assertEquals("Gateway", route.getSpec().getParentRefs().getFirst().getKind());
        assertEquals(pool.getMetadata().getNamespace(), route.getMetadata().getNamespace());
        for (final HTTPRouteRule rule : route.getSpec().getRules()) {
            assertFalse(rule.getBackendRefs().isEmpty());
            for (final HTTPBackendRef b : rule.getBackendRefs()) {
                assertEquals(POOL_GROUP, b.getGroup(), "backendRef group");
                assertEquals(InferencePool.KIND, b.getKind(), "backendRef kind");
                assertEquals(pool.getMetadata().getName(), b.getName(), "backendRef name");
                assertTrue(b.getNamespace() == null || b.getNamespace().equals(pool.getMetadata().getNamespace()));
            }
        }
    }

    @Test
    void theDaemonFollowsThatPoolOnTheEnginesPortsAndBlockSize() throws Exception {
        final List<HasMetadata> all = rendering();
        final InferencePool pool = one(all, InferencePool.class);
        final Map<String, Object> daemon = PodChecks.daemonEffectiveConfig(all,
            PickerManifestTest.picker(all).getSpec().getTemplate().getSpec(), tmp);
        @SuppressWarnings("unchecked")
        final Map<String, Object> discovery = (Map<String, Object>) daemon.get("discovery");
        assertEquals(pool.getMetadata().getName(), discovery.get("pool"), "discovery.pool");
        final Container vllm = container(named(all, Deployment.class, "vllm-qwen3").getSpec().getTemplate().getSpec(),
            "vllm");
        assertEquals(port(vllm, "kv-events"), discovery.get("kvEventsPort"));
        assertEquals(port(vllm, "kv-replay"), discovery.get("kvReplayPort"));
        assertEquals(vllm.getArgs().getFirst(), discovery.get("model"), "the model vLLM serves");
        assertEquals("--block-size=" + daemon.get("blockSize"),
            vllm.getArgs().stream().filter(a -> a.startsWith("--block-size=")).findFirst().orElseThrow());

        final String prefix = "--kv-events-config=";
        final JsonNode events = JSON.readTree(vllm.getArgs().stream().filter(a -> a.startsWith(prefix)).findFirst()
            .orElseThrow().substring(prefix.length()));
        assertTrue(events.get("enable_kv_cache_events").asBoolean());
        assertEquals("zmq", events.get("publisher").asText());
        assertEquals("tcp://*:" + discovery.get("kvEventsPort"), events.get("endpoint").asText());
        assertEquals("tcp://*:" + discovery.get("kvReplayPort"), events.get("replay_endpoint").asText());
        assertEquals("kv@$(POD_NAME)@" + discovery.get("model"), events.get("topic").asText());
        assertTrue(vllm.getEnv().stream().map(EnvVar::getName).anyMatch("POD_NAME"::equals), "POD_NAME is set");

        final ConfigMap cm = named(all, ConfigMap.class, PickerManifestTest.PICKER);
        assertTrue(cm.getData().containsKey("epp.yaml"), "the patch keeps the picker's file");
    }

    private static int port(final Container c, final String name) {
        return c.getPorts().stream().filter(p -> name.equals(p.getName())).map(ContainerPort::getContainerPort)
            .findFirst().orElseThrow(() -> new AssertionError(c.getName() + " has no port " + name));
    }
}
