package io.kvidx.deploy;

import static io.kvidx.deploy.PodChecks.INDEX_DIR;
import static io.kvidx.deploy.PodChecks.POD_IP;
import static io.kvidx.deploy.PodChecks.container;
import static io.kvidx.deploy.PodChecks.named;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.kvidx.daemon.cli.KvidxCli;
import io.kvidx.epp.EppArgs;
import io.kvidx.epp.EppCommand;
import io.kvidx.epp.EppConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Offline checks of deploy/kubernetes/picker (kvidx epp with the daemon as a sidecar) and of the overlays using it
 * (rendered by kubectl when it is here): typed parse, selectors, security, ports, the NetworkPolicy, the Service the
 * gateway dials, the containers' args through the commands' own parsers. The InferencePool example's cross-checks:
 * {@link InferencePoolExampleTest}.
 */
class PickerManifestTest {
    static final String PICKER = "kvidx-picker";

    @TempDir
    Path tmp;

    static List<HasMetadata> base() throws IOException {
        return Manifests.typed(Manifests.resources(Manifests.pickerBase()));
    }

    /** The base, and every overlay of it under deploy/kubernetes/examples rendered by kubectl when it is here. */
    static Map<String, List<HasMetadata>> allRenderings() throws Exception {
        final Map<String, List<HasMetadata>> out = new LinkedHashMap<>();
        out.put("picker base", base());
        out.putAll(Manifests.overlaysOf(Manifests.pickerBase()));
        return out;
    }

    static Deployment picker(final List<HasMetadata> all) {
        return named(all, Deployment.class, PICKER);
    }

    @Test
    void everyDocumentParsesIntoTheTypedModel() throws Exception {
        final List<HasMetadata> all = base();
        assertEquals(10, all.size(), "documents of the picker base");
        final Set<String> kinds = new HashSet<>();
        all.forEach(r -> kinds.add(r.getKind()));
        assertEquals(Set.of("ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service",
            "PodDisruptionBudget", "NetworkPolicy"), kinds);
        for (final List<HasMetadata> r : Manifests.overlaysOf(Manifests.pickerBase()).values()) {
            assertTrue(r.size() > all.size());
        }
    }

    @Test
    void selectorsMatchThePodTemplate() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertSelectorsMatch(e.getKey(), e.getValue(), picker(e.getValue()));
        }
    }

    @Test
    void everyContainerRunsAsNonRootOnAReadOnlyRoot() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertLockedDown(e.getKey(), picker(e.getValue()).getSpec().getTemplate().getSpec());
        }
    }

    @Test
    void theIndexIsOneMemoryBackedVolumeSharedByBothContainers() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertIndexShared(e.getKey(), picker(e.getValue()).getSpec().getTemplate().getSpec(), "epp");
        }
    }

    @Test
    void theNetworkPolicyAdmitsTheGatewayToExtProcAndPrometheusToMetricsOnly() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final String what = e.getKey();
            final Deployment d = picker(e.getValue());
            final Map<String, Integer> ports = PodChecks.assertPortsDeclared(what, e.getValue(), d);
            final NetworkPolicy np = named(e.getValue(), NetworkPolicy.class, PICKER);
            assertEquals(List.of("Ingress"), np.getSpec().getPolicyTypes(), what);
            final Map<String, Set<String>> admitted = new LinkedHashMap<>();
            for (final NetworkPolicyIngressRule rule : np.getSpec().getIngress()) {
                assertFalse(rule.getFrom() == null || rule.getFrom().isEmpty(), what + ": a rule admits everyone");
                assertFalse(rule.getPorts() == null || rule.getPorts().isEmpty(), what + ": a rule admits every port");
                final Set<String> names = new HashSet<>();
                for (final NetworkPolicyPort p : rule.getPorts()) {
                    final String name = p.getPort().getStrVal();
                    assertNotNull(name, what + ": NetworkPolicy ports are the containers' port names: " + p.getPort());
                    assertTrue(ports.containsKey(name), what + ": NetworkPolicy port " + name);
                    names.add(name);
                }
                for (final NetworkPolicyPeer peer : rule.getFrom()) {
                    assertNull(peer.getIpBlock(), what + ": peers are pods and namespaces");
                    if (peer.getNamespaceSelector() == null) {
                        // Pods of the policy's own namespace: only the other picker replicas (catch-up snapshots).
                        assertEquals(d.getSpec().getSelector().getMatchLabels(), peer.getPodSelector().getMatchLabels(),
                            what + ": " + peer);
                        assertNull(admitted.put("picker replicas", names), what + ": one rule for the replicas");
                        continue;
                    }
                    assertFalse(peer.getNamespaceSelector().getMatchLabels().isEmpty(), what + ": every namespace");
                    final String kind = peer.getPodSelector() != null ? "gateway pods" : "prometheus namespace";
                    assertNull(admitted.put(kind, names), what + ": one rule for the " + kind);
                    if (peer.getPodSelector() != null) {
                        assertFalse(peer.getPodSelector().getMatchLabels().isEmpty(), what + ": every pod");
                    }
                }
            }
            assertEquals(Map.of("gateway pods", Set.of("ext-proc"), "prometheus namespace",
                Set.of("metrics", "daemon-metrics"), "picker replicas", Set.of("daemon-http")), admitted, what);
            assertEquals(9002, ports.get("ext-proc"), what);
            assertEquals(9090, ports.get("metrics"), what);
        }
    }

    @Test
    void theServiceTheGatewayDialsIsTheExtProcPortOverHttp2() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final Service s = named(e.getValue(), Service.class, PICKER);
            final PodSpec pod = picker(e.getValue()).getSpec().getTemplate().getSpec();
            final ServicePort grpc = s.getSpec().getPorts().stream().filter(p -> p.getPort() == 9002).findFirst()
                .orElseThrow(() -> new AssertionError(e.getKey() + ": Service " + PICKER + " has no port 9002"));
            assertEquals("grpc-ext-proc", grpc.getName(), e.getKey());
            assertEquals("http2", grpc.getAppProtocol(), e.getKey() + ": the gateway speaks HTTP/2 (gRPC) to it");
            assertEquals("ext-proc", grpc.getTargetPort().getStrVal(), e.getKey());
            assertTrue(container(pod, "epp").getPorts().stream()
                .anyMatch(p -> p.getName().equals("ext-proc") && p.getContainerPort() == 9002), e.getKey());
            assertTrue(s.getSpec().getPorts().stream().anyMatch(p -> p.getPort() == 9090
                && "metrics".equals(p.getTargetPort().getStrVal())), e.getKey() + ": metrics port");
            assertEquals("ClusterIP", s.getSpec().getType(), e.getKey());
        }
    }

    @Test
    void theContainersArgsAreOnesTheCommandsAccept() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final String what = e.getKey();
            final PodSpec pod = picker(e.getValue()).getSpec().getTemplate().getSpec();
            assertEquals(Set.of("epp", "daemon"),
                Set.copyOf(pod.getContainers().stream().map(Container::getName).toList()), what);
            final Container epp = container(pod, "epp");
            PodChecks.assertArgsParse(what, epp, new CommandLine(new EppCommand()));
            final CommandLine.ParseResult r = PodChecks.assertArgsParse(what, container(pod, "daemon"),
                new CommandLine(new KvidxCli()));
            assertTrue(r.hasSubcommand() && r.subcommand().commandSpec().name().equals("daemon"),
                what + ": the daemon container runs `kvidx daemon`");

            final List<String> args = PodChecks.withConfigCopy(e.getValue(), pod, epp,
                tmp.resolve(what.replace(' ', '-')));
            final EppConfig c = EppArgs.validated(args.toArray(String[]::new));
            assertEquals(POD_IP, c.listenAddress().getHostString(), what + ": ext_proc on the pod's IP");
            assertEquals(9002, c.listenAddress().getPort(), what);
            assertEquals(POD_IP, c.metricsAddress().getHostString(), what + ": metrics on the pod's IP");
            assertEquals(9090, c.metricsAddress().getPort(), what);
            assertEquals(INDEX_DIR, EppArgs.indexDir(c), what + ": the index the daemon writes");
            assertTrue(EppArgs.servesTls(c), what + ": TLS, which GIE's gateways expect");
            assertFalse(EppArgs.namesPods(c), what + ": pods come from discovery, not pods: or pod-url-template");
            final List<String> local = new ArrayList<>(args);
            local.remove("--allow-remote");
            assertThrows(IllegalArgumentException.class, () -> EppArgs.validated(local.toArray(String[]::new)),
                what + ": the pod IP needs --allow-remote");
        }
    }

    @Test
    void theTlsFilesComeFromTheSecretVolume() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final PodSpec pod = picker(e.getValue()).getSpec().getTemplate().getSpec();
            final Container epp = container(pod, "epp");
            final Map<String, String> files = new LinkedHashMap<>();
            for (final String a : epp.getArgs()) {
                if (a.startsWith("--tls-cert=") || a.startsWith("--tls-key=")) {
                    files.put(a.substring(2, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
                }
            }
            assertEquals(Set.of("tls-cert", "tls-key"), files.keySet(), e.getKey());
            for (final Map.Entry<String, String> f : files.entrySet()) {
                final Path p = Path.of(f.getValue());
                final VolumeMount m = epp.getVolumeMounts().stream()
                    .filter(x -> Path.of(x.getMountPath()).equals(p.getParent())).findFirst()
                    .orElseThrow(() -> new AssertionError(e.getKey() + ": nothing mounted at " + p.getParent()));
                assertTrue(Boolean.TRUE.equals(m.getReadOnly()), e.getKey());
                final Volume v = pod.getVolumes().stream().filter(x -> x.getName().equals(m.getName())).findFirst()
                    .orElseThrow();
                assertNotNull(v.getSecret(), e.getKey() + ": " + f.getKey() + " is on a Secret volume");
                assertEquals(PICKER + "-tls", v.getSecret().getSecretName(), e.getKey());
                assertTrue(v.getSecret().getItems() == null || v.getSecret().getItems().isEmpty(), e.getKey());
                // A kubernetes.io/tls Secret's keys.
                assertEquals(f.getKey().equals("tls-cert") ? "tls.crt" : "tls.key", p.getFileName().toString());
                assertEquals(0440, v.getSecret().getDefaultMode(), e.getKey() + ": owner and group read");
            }
        }
    }

    @Test
    void theDaemonFollowsAnInferencePool() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final PodSpec pod = picker(e.getValue()).getSpec().getTemplate().getSpec();
            final Map<String, Object> daemon = PodChecks.daemonEffectiveConfig(e.getValue(), pod,
                tmp.resolve(e.getKey().replace(' ', '-')));
            assertEquals(INDEX_DIR, daemon.get("dir"), e.getKey());
            @SuppressWarnings("unchecked")
            final Map<String, Object> discovery = (Map<String, Object>) daemon.get("discovery");
            assertNotNull(discovery.get("pool"), e.getKey() + ": discovery.pool");
            assertNull(discovery.get("selector"), e.getKey() + ": the pool's selector, not one of its own");
            assertEquals(List.of(), daemon.get("zmq"), e.getKey() + ": no engines by hand");
        }
    }

    @Test
    void aStartingReplicaCatchesUpFromTheOthersThroughThePeersService() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertPeerCatchUp(e.getKey(), e.getValue(), picker(e.getValue()),
                tmp.resolve(e.getKey().replace(' ', '-') + "-peer"));
        }
    }

    @Test
    void rbacIsReadOnlyOnPodsAndInferencePools() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertRbacReadOnly(e.getKey(), e.getValue(), picker(e.getValue()));
        }
    }

    @Test
    void kustomizeRendersExactlyTheResources() throws Exception {
        final String rendered = Manifests.kustomize(Manifests.pickerBase());
        Assumptions.assumeTrue(rendered != null,
            "kubectl is not on PATH: `kubectl kustomize deploy/kubernetes/picker` was not compared (install kubectl"
                + " to run this check)");
        final List<Map<String, Object>> expected = Manifests.resources(Manifests.pickerBase());
        final List<Map<String, Object>> actual = Manifests.documents(rendered);
        assertEquals(expected.size(), actual.size());
        assertEquals(new HashSet<>(expected), new HashSet<>(actual), "kubectl kustomize output vs the resources");
    }
}
