package io.kvidx.deploy;

import static io.kvidx.deploy.PodChecks.INDEX_DIR;
import static io.kvidx.deploy.PodChecks.one;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.kvidx.daemon.cli.KvidxCli;
import io.kvidx.router.RouterCommand;
import io.kvidx.router.RouterConfig;
import java.io.IOException;
import java.nio.file.Path;
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
 * Offline checks of deploy/kubernetes/router and the overlays using it: typed parse, selectors, ports, security, the
 * CLIs' args, kustomize. The endpoint picker's base: {@link PickerManifestTest}.
 */
class ManifestTest {
    @TempDir
    Path tmp;

    private static List<HasMetadata> base() throws IOException {
        return Manifests.typed(Manifests.resources(Manifests.routerBase()));
    }

    /** The base, and every overlay of it under deploy/kubernetes/examples rendered by kubectl when it is here. */
    private static Map<String, List<HasMetadata>> allRenderings() throws Exception {
        final Map<String, List<HasMetadata>> out = new LinkedHashMap<>();
        out.put("router base", base());
        out.putAll(Manifests.overlaysOf(Manifests.routerBase()));
        return out;
    }

    @Test
    void everyDocumentParsesIntoTheTypedModel() throws Exception {
        final List<HasMetadata> all = base();
        assertEquals(10, all.size(), "documents of the router base");
        final Set<String> kinds = new HashSet<>();
        all.forEach(r -> kinds.add(r.getKind()));
        assertEquals(Set.of("ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service",
            "PodDisruptionBudget", "NetworkPolicy"), kinds);
        for (final List<HasMetadata> r : allRenderings().values()) {
            assertFalse(r.isEmpty());
        }
    }

    @Test
    void aFieldTheModelDoesNotKnowFails() {
        final Map<String, Object> deployment = Manifests.documents("""
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: x}
            spec:
              replica: 2
            """).getFirst();
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> Manifests.typed(deployment));
        assertTrue(e.getMessage().contains("replica"), e.getMessage());
        final Map<String, Object> nested = Manifests.documents("""
            apiVersion: v1
            kind: Service
            metadata: {name: x}
            spec:
              ports: [{name: http, port: 80, targetport: http}]
            """).getFirst();
        assertThrows(IllegalArgumentException.class, () -> Manifests.typed(nested));
        assertThrows(IllegalArgumentException.class, () -> Manifests.typed(Manifests.documents(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n").getFirst()));
    }

    @Test
    void selectorsMatchThePodTemplate() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertSelectorsMatch(e.getKey(), e.getValue(), one(e.getValue(), Deployment.class));
        }
    }

    @Test
    void aStartingReplicaCatchesUpFromTheOthersThroughThePeersService() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertPeerCatchUp(e.getKey(), e.getValue(), one(e.getValue(), Deployment.class),
                tmp.resolve(e.getKey().replace(' ', '-') + "-peer"));
        }
    }

    @Test
    void everyContainerRunsAsNonRootOnAReadOnlyRoot() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertLockedDown(e.getKey(), one(e.getValue(), Deployment.class).getSpec().getTemplate()
                .getSpec());
        }
    }

    @Test
    void everyReferencedPortIsAContainerPort() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertPortsDeclared(e.getKey(), e.getValue(), one(e.getValue(), Deployment.class));
        }
    }

    @Test
    void theIndexIsOneMemoryBackedVolumeSharedByBothContainers() throws Exception {
        PodChecks.assertIndexShared("router base", one(base(), Deployment.class).getSpec().getTemplate().getSpec(),
            "router");
    }

    @Test
    void theContainersArgsAreOnesTheCommandsAccept() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final PodSpec pod = one(e.getValue(), Deployment.class).getSpec().getTemplate().getSpec();
            assertEquals(Set.of("router", "daemon"),
                Set.copyOf(pod.getContainers().stream().map(Container::getName).toList()));
            PodChecks.assertArgsParse(e.getKey(), PodChecks.container(pod, "router"),
                new CommandLine(new RouterCommand()));
            final CommandLine.ParseResult r = PodChecks.assertArgsParse(e.getKey(), PodChecks.container(pod, "daemon"),
                new CommandLine(new KvidxCli()));
            assertTrue(r.hasSubcommand() && r.subcommand().commandSpec().name().equals("daemon"),
                "the daemon container runs `kvidx daemon`");
        }
    }

    @Test
    void theConfigMapsFilesLoadInTheCommands() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final PodSpec pod = one(e.getValue(), Deployment.class).getSpec().getTemplate().getSpec();
            final Path run = tmp.resolve(e.getKey().replace(' ', '-'));
            final Map<String, Object> daemon = PodChecks.daemonEffectiveConfig(e.getValue(), pod, run);
            assertEquals(16, daemon.get("blockSize"), e.getKey());
            assertEquals(INDEX_DIR, daemon.get("dir"), e.getKey());
            final ConfigMap cm = one(e.getValue(), ConfigMap.class);
            assertNotNull(RouterConfig.fromYaml(cm.getData().get("router.yaml"), tmp));
            @SuppressWarnings("unchecked")
            final Map<String, Object> index = (Map<String, Object>) Manifests.documents(
                cm.getData().get("router.yaml")).getFirst().get("index");
            assertEquals(INDEX_DIR, index.get("dir"), "router.yaml index.dir");
        }
    }

    @Test
    void rbacIsReadOnlyOnPodsAndInferencePools() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            PodChecks.assertRbacReadOnly(e.getKey(), e.getValue(), one(e.getValue(), Deployment.class));
        }
    }

    @Test
    void kustomizeRendersExactlyTheResources() throws Exception {
        final String rendered = Manifests.kustomize(Manifests.routerBase());
        Assumptions.assumeTrue(rendered != null,
            "kubectl is not on PATH: `kubectl kustomize deploy/kubernetes/router` was not compared (install kubectl"
                + " to run this check)");
        final List<Map<String, Object>> expected = Manifests.resources(Manifests.routerBase());
        final List<Map<String, Object>> actual = Manifests.documents(rendered);
        assertEquals(expected.size(), actual.size());
        assertEquals(new HashSet<>(expected), new HashSet<>(actual), "kubectl kustomize output vs the resources");
    }
}
