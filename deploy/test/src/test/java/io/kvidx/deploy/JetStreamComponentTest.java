package io.kvidx.deploy;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.kvidx.daemon.config.DaemonConfigFile;
import io.kvidx.daemon.config.DaemonContext;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Offline checks of deploy/kubernetes/components/jetstream (docs/jetstream.md): the relay's manifests parse strictly,
 * its daemon.yaml is a relay configuration by the daemon's own parser, the patch's targets exist in the router base
 * (container 1 is the daemon sidecar, with the lists the patch appends to), and, where kubectl is here, an overlay of
 * the router base with the component renders the relays and a consuming sidecar.
 */
class JetStreamComponentTest {
    static final Path COMPONENT = Manifests.deployDir().resolve("kubernetes/components/jetstream");

    @TempDir
    Path tmp;

    @Test
    void relaysAreDaemonsInRoleRelay() throws Exception {
        final List<HasMetadata> relay = Manifests.typed(Manifests.documents(Files.readString(
            COMPONENT.resolve("relay.yaml"))));
        final ConfigMap config = Manifests.ofKind(relay, ConfigMap.class).getFirst();
        final DaemonContext c = DaemonConfigFile.parse(config.getData().get("daemon.yaml"), new DaemonContext(),
            "relay.yaml").conclude();
        assertTrue(c.jetstream().relay(), "role relay");
        assertEquals("nats://nats:4222", c.jetstream().url());
        assertNotNull(c.jetstream().credsFile(), "credentials from the Secret kvidx-nats");
        final Deployment d = Manifests.ofKind(relay, Deployment.class).getFirst();
        assertEquals(2, d.getSpec().getReplicas(), "two relays: each event stored once by message id");
        final Container daemon = d.getSpec().getTemplate().getSpec().getContainers().getFirst();
        assertEquals("daemon", daemon.getArgs().getFirst());
        assertTrue(daemon.getArgs().contains("--config=/etc/kvidx/daemon.yaml"), daemon.getArgs().toString());
        assertTrue(d.getSpec().getTemplate().getSpec().getSecurityContext().getRunAsNonRoot());
        // --http-allow-remote on the pod's IP: a NetworkPolicy keeps every pod off the API (its /register) and lets
        // only Prometheus reach the metrics.
        assertTrue(daemon.getArgs().contains("--http-allow-remote"), daemon.getArgs().toString());
        final NetworkPolicy policy = Manifests.ofKind(relay, NetworkPolicy.class).getFirst();
        assertEquals(d.getSpec().getSelector().getMatchLabels(), policy.getSpec().getPodSelector().getMatchLabels());
        assertEquals(List.of("Ingress"), policy.getSpec().getPolicyTypes());
        for (final NetworkPolicyIngressRule rule : policy.getSpec().getIngress()) {
            for (final NetworkPolicyPort port : rule.getPorts()) {
                assertEquals(9464, port.getPort().getIntVal(), "only the metrics port is admitted");
            }
        }
    }

    @Test
    void thePatchAppendsToTheRoutersDaemonSidecar() throws Exception {
        final Deployment router = Manifests.ofKind(Manifests.typed(Manifests.resources(Manifests.routerBase())),
            Deployment.class).stream().filter(d -> "kvidx-router".equals(d.getMetadata().getName())).findFirst()
            .orElseThrow();
        final List<Container> containers = router.getSpec().getTemplate().getSpec().getContainers();
        assertTrue(containers.size() > 1, "the patch edits container 1");
        final Container sidecar = containers.get(1);
        assertEquals("daemon", sidecar.getArgs().getFirst(), "container 1 is the daemon sidecar");
        assertNotNull(sidecar.getVolumeMounts(), "args/- and volumeMounts/- append to existing lists");
        assertNotNull(router.getSpec().getTemplate().getSpec().getVolumes());
    }

    @Test
    void anOverlayRendersRelaysAndAConsumingSidecar() throws Exception {
        final Path overlay = tmp.resolve("overlay");
        Files.createDirectories(overlay);
        // kustomize takes bases and components by relative path only.
        final Path from = overlay.toAbsolutePath();
        Files.writeString(overlay.resolve("kustomization.yaml"), "apiVersion: kustomize.config.k8s.io/v1beta1\n"
            + "kind: Kustomization\nresources:\n  - " + from.relativize(Manifests.routerBase().toAbsolutePath())
            + "\ncomponents:\n  - " + from.relativize(COMPONENT.toAbsolutePath()) + "\n");
        final String rendered = Manifests.kustomize(overlay);
        Assumptions.assumeTrue(rendered != null, "kubectl is not on PATH: the overlay was not rendered");
        final List<HasMetadata> all = Manifests.typed(Manifests.documents(rendered));
        final List<Deployment> deployments = Manifests.ofKind(all, Deployment.class);
        assertTrue(deployments.stream().anyMatch(d -> "kvidx-relay".equals(d.getMetadata().getName())));
        final Deployment router = deployments.stream().filter(d -> "kvidx-router".equals(d.getMetadata().getName()))
            .findFirst().orElseThrow();
        final Container sidecar = router.getSpec().getTemplate().getSpec().getContainers().get(1);
        assertTrue(sidecar.getArgs().contains("--jetstream=nats://nats:4222"), sidecar.getArgs().toString());
        assertTrue(sidecar.getVolumeMounts().stream().anyMatch(m -> "/etc/nats".equals(m.getMountPath())));
    }
}
