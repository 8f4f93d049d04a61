package io.kvidx.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.kvidx.daemon.cli.KvidxCli;
import io.kvidx.router.RouterCommand;
import io.kvidx.router.RouterConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Offline checks of deploy/kubernetes: typed parse, selectors, ports, security, the CLIs' args, kustomize. */
class ManifestTest {
    private static final String INDEX_DIR = "/dev/shm/kvidx";
    private static final Pattern VAR_REF = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)");

    @TempDir
    Path tmp;

    private static List<HasMetadata> base() throws IOException {
        return Manifests.typed(Manifests.resources(Manifests.routerBase()));
    }

    /** The base, and every overlay under deploy/kubernetes/examples rendered by kubectl when it is here. */
    private static Map<String, List<HasMetadata>> allRenderings() throws Exception {
        final Map<String, List<HasMetadata>> out = new HashMap<>();
        out.put("router base", base());
        try (Stream<Path> s = Files.list(Manifests.deployDir().resolve("kubernetes/examples"))) {
            for (final Path overlay : s.toList()) {
                final String rendered = Manifests.kustomize(overlay);
                if (rendered != null) {
                    out.put(overlay.getFileName().toString(), Manifests.typed(Manifests.documents(rendered)));
                }
            }
        }
        return out;
    }

    @Test
    void everyDocumentParsesIntoTheTypedModel() throws Exception {
        final List<HasMetadata> all = base();
        assertEquals(9, all.size(), "documents of the router base");
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
            final List<HasMetadata> all = e.getValue();
            final Deployment d = one(all, Deployment.class);
            final Map<String, String> labels = d.getSpec().getTemplate().getMetadata().getLabels();
            assertMatches(d.getSpec().getSelector(), labels, e.getKey() + ": Deployment selector");
            for (final Service s : Manifests.ofKind(all, Service.class)) {
                assertFalse(s.getSpec().getSelector().isEmpty(), "Service " + s.getMetadata().getName());
                assertTrue(labels.entrySet().containsAll(s.getSpec().getSelector().entrySet()),
                    e.getKey() + ": Service " + s.getMetadata().getName() + " selects " + s.getSpec().getSelector());
            }
            assertMatches(one(all, PodDisruptionBudget.class).getSpec().getSelector(), labels, "PDB selector");
            assertMatches(one(all, NetworkPolicy.class).getSpec().getPodSelector(), labels, "NetworkPolicy");
            assertMatches(d.getSpec().getTemplate().getSpec().getAffinity().getPodAntiAffinity()
                .getPreferredDuringSchedulingIgnoredDuringExecution().getFirst().getPodAffinityTerm()
                .getLabelSelector(), labels, "anti-affinity");
        }
    }

    @Test
    void everyContainerRunsAsNonRootOnAReadOnlyRoot() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final PodSpec pod = one(e.getValue(), Deployment.class).getSpec().getTemplate().getSpec();
            final PodSecurityContext p = pod.getSecurityContext();
            assertEquals("RuntimeDefault", p.getSeccompProfile().getType());
            assertTrue(Boolean.TRUE.equals(p.getRunAsNonRoot()));
            final List<Container> all = new ArrayList<>(pod.getContainers());
            if (pod.getInitContainers() != null) {
                all.addAll(pod.getInitContainers());
            }
            for (final Container c : all) {
                final SecurityContext s = c.getSecurityContext();
                final String what = e.getKey() + ": container " + c.getName();
                assertNotNull(s, what);
                final Boolean nonRoot = s.getRunAsNonRoot() != null ? s.getRunAsNonRoot() : p.getRunAsNonRoot();
                final Long uid = s.getRunAsUser() != null ? s.getRunAsUser() : p.getRunAsUser();
                assertTrue(Boolean.TRUE.equals(nonRoot), what + " runAsNonRoot");
                assertTrue(uid != null && uid != 0, what + " runs as a numeric non-root uid");
                assertTrue(Boolean.TRUE.equals(s.getReadOnlyRootFilesystem()), what + " readOnlyRootFilesystem");
                assertTrue(Boolean.FALSE.equals(s.getAllowPrivilegeEscalation()), what + " allowPrivilegeEscalation");
                assertEquals(List.of("ALL"), s.getCapabilities().getDrop(), what + " drops ALL capabilities");
                assertTrue(s.getCapabilities().getAdd() == null || s.getCapabilities().getAdd().isEmpty(), what);
                assertTrue(s.getPrivileged() == null || !s.getPrivileged(), what);
                assertNotNull(c.getResources().getRequests(), what + " requests");
                assertNotNull(c.getResources().getLimits().get("memory"), what + " memory limit");
            }
        }
    }

    @Test
    void everyReferencedPortIsAContainerPort() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final List<HasMetadata> all = e.getValue();
            final Deployment d = one(all, Deployment.class);
            final PodSpec pod = d.getSpec().getTemplate().getSpec();
            final Map<String, Integer> byName = new HashMap<>();
            final Set<Integer> numbers = new HashSet<>();
            for (final Container c : pod.getContainers()) {
                for (final ContainerPort p : c.getPorts()) {
                    assertTrue(byName.put(p.getName(), p.getContainerPort()) == null, "port name " + p.getName());
                    numbers.add(p.getContainerPort());
                }
                for (final Probe probe : probes(c)) {
                    final IntOrString port = probe.getHttpGet() != null ? probe.getHttpGet().getPort()
                        : probe.getTcpSocket().getPort();
                    assertPortIn(port, c.getPorts(), e.getKey() + ": a probe of " + c.getName());
                }
            }
            for (final Service s : Manifests.ofKind(all, Service.class)) {
                for (final ServicePort sp : s.getSpec().getPorts()) {
                    assertDeclared(sp.getTargetPort(), byName, numbers, "Service " + s.getMetadata().getName());
                }
                final String annotated = annotation(s.getMetadata().getAnnotations(), "prometheus.io/port");
                if (annotated != null) {
                    assertTrue(numbers.contains(Integer.parseInt(annotated)), "Service scrape port " + annotated);
                }
            }
            final String podScrape = annotation(d.getSpec().getTemplate().getMetadata().getAnnotations(),
                "prometheus.io/port");
            assertNotNull(podScrape, "the pod template names its metrics port");
            assertTrue(numbers.contains(Integer.parseInt(podScrape)), "pod scrape port " + podScrape);
            final NetworkPolicy np = one(all, NetworkPolicy.class);
            for (final NetworkPolicyIngressRule rule : np.getSpec().getIngress()) {
                for (final NetworkPolicyPort p : rule.getPorts()) {
                    if (p.getPort().getStrVal() != null) {
                        assertTrue(byName.containsKey(p.getPort().getStrVal()), "NetworkPolicy port " + p.getPort());
                    }
                }
            }
        }
    }

    @Test
    void theIndexIsOneMemoryBackedVolumeSharedByBothContainers() throws Exception {
        final PodSpec pod = one(base(), Deployment.class).getSpec().getTemplate().getSpec();
        final Map<String, Volume> volumes = new HashMap<>();
        pod.getVolumes().forEach(v -> volumes.put(v.getName(), v));
        final Volume index = volumes.get("index");
        assertEquals("Memory", index.getEmptyDir().getMedium());
        for (final Container c : pod.getContainers()) {
            for (final VolumeMount m : c.getVolumeMounts()) {
                assertTrue(volumes.containsKey(m.getName()), c.getName() + " mounts an undeclared volume");
            }
            final VolumeMount idx = c.getVolumeMounts().stream().filter(m -> m.getName().equals("index"))
                .findFirst().orElseThrow(() -> new AssertionError(c.getName() + " does not mount the index"));
            assertEquals(INDEX_DIR, idx.getMountPath());
            assertTrue(c.getVolumeMounts().stream().anyMatch(m -> m.getMountPath().equals("/tmp")),
                c.getName() + " has a writable /tmp");
        }
        assertTrue(container(pod, "router").getVolumeMounts().stream()
            .anyMatch(m -> m.getName().equals("index") && Boolean.TRUE.equals(m.getReadOnly())),
            "the router maps the index read-only");
        assertTrue(container(pod, "daemon").getArgs().contains("--dir=" + INDEX_DIR));
    }

    @Test
    void theContainersArgsAreOnesTheCommandsAccept() throws Exception {
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            final PodSpec pod = one(e.getValue(), Deployment.class).getSpec().getTemplate().getSpec();
            assertEquals(Set.of("router", "daemon"),
                Set.copyOf(pod.getContainers().stream().map(Container::getName).toList()));
            for (final Container c : pod.getContainers()) {
                assertTrue(c.getCommand() == null || c.getCommand().isEmpty(),
                    c.getName() + ": the image's entrypoint");
                final String[] args = expand(c).toArray(String[]::new);
                final CommandLine cli = c.getName().equals("router") ? new CommandLine(new RouterCommand())
                    : new CommandLine(new KvidxCli());
                try {
                    final CommandLine.ParseResult r = cli.parseArgs(args);
                    assertTrue(r.unmatched().isEmpty(), c.getName() + ": unmatched " + r.unmatched());
                    if (c.getName().equals("daemon")) {
                        assertTrue(r.hasSubcommand() && r.subcommand().commandSpec().name().equals("daemon"),
                            "the daemon container runs `kvidx daemon`");
                    }
                } catch (final CommandLine.ParameterException ex) {
                    fail(e.getKey() + ": " + c.getName() + " args " + List.of(args) + ": " + ex.getMessage());
                }
            }
        }
    }

    @Test
    void theConfigMapsFilesLoadInTheCommands() throws Exception {
        final List<ConfigMap> maps = new ArrayList<>();
        maps.add(one(base(), ConfigMap.class));
        for (final Map.Entry<String, List<HasMetadata>> e : allRenderings().entrySet()) {
            maps.add(one(e.getValue(), ConfigMap.class));
        }
        for (final ConfigMap cm : maps) {
            final Path daemonYaml = Files.writeString(tmp.resolve("daemon.yaml"), cm.getData().get("daemon.yaml"));
            final ByteArrayOutputStream out = new ByteArrayOutputStream();
            final StringWriter err = new StringWriter();
            final PrintStream saved = System.out;
            final int rc;
            try {
                System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
                rc = new CommandLine(new KvidxCli()).setErr(new PrintWriter(err))
                    .execute("daemon", "--config=" + daemonYaml, "--print-config");
            } finally {
                System.setOut(saved);
            }
            assertEquals(0, rc, "kvidx daemon --config daemon.yaml --print-config: " + err);
            assertTrue(out.toString(StandardCharsets.UTF_8).contains("blockSize: 16"), out.toString());
            assertNotNull(RouterConfig.fromYaml(cm.getData().get("router.yaml"), tmp));
            @SuppressWarnings("unchecked")
            final Map<String, Object> index = (Map<String, Object>) Manifests.documents(
                cm.getData().get("router.yaml")).getFirst().get("index");
            assertEquals(INDEX_DIR, index.get("dir"), "router.yaml index.dir");
        }
    }

    @Test
    void rbacIsReadOnlyOnPodsAndInferencePools() throws Exception {
        final List<HasMetadata> all = base();
        final Role role = one(all, Role.class);
        final Set<String> resources = new HashSet<>();
        for (final PolicyRule r : role.getRules()) {
            assertEquals(List.of("get", "list", "watch"), r.getVerbs());
            resources.addAll(r.getResources());
            assertTrue(r.getApiGroups().equals(List.of("")) && r.getResources().equals(List.of("pods"))
                || r.getApiGroups().equals(List.of("inference.networking.k8s.io"))
                && r.getResources().equals(List.of("inferencepools")), r.toString());
        }
        assertEquals(Set.of("pods", "inferencepools"), resources);
        final RoleBinding binding = one(all, RoleBinding.class);
        final String sa = one(all, ServiceAccount.class).getMetadata().getName();
        assertEquals(role.getMetadata().getName(), binding.getRoleRef().getName());
        assertEquals("Role", binding.getRoleRef().getKind());
        assertEquals(sa, binding.getSubjects().getFirst().getName());
        assertEquals(sa, one(all, Deployment.class).getSpec().getTemplate().getSpec().getServiceAccountName());
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

    private static List<String> expand(final Container c) {
        final Set<String> env = new HashSet<>();
        if (c.getEnv() != null) {
            c.getEnv().stream().map(EnvVar::getName).forEach(env::add);
        }
        final List<String> out = new ArrayList<>();
        for (final String a : c.getArgs()) {
            final Matcher m = VAR_REF.matcher(a);
            final StringBuilder sb = new StringBuilder();
            while (m.find()) {
                assertTrue(env.contains(m.group(1)), c.getName() + ": $(" + m.group(1) + ") is not an env var");
                m.appendReplacement(sb, "10.0.0.1");
            }
            m.appendTail(sb);
            out.add(sb.toString());
        }
        return out;
    }

    private static List<Probe> probes(final Container c) {
        final List<Probe> out = new ArrayList<>();
        for (final Probe p : new Probe[] {c.getReadinessProbe(), c.getLivenessProbe(), c.getStartupProbe()}) {
            if (p != null) {
                out.add(p);
            }
        }
        assertTrue(c.getReadinessProbe() != null && c.getLivenessProbe() != null, c.getName() + " has probes");
        return out;
    }

    private static void assertPortIn(final IntOrString port, final List<ContainerPort> ports, final String what) {
        final boolean found = ports.stream().anyMatch(p -> port.getStrVal() != null
            ? port.getStrVal().equals(p.getName()) : port.getIntVal().equals(p.getContainerPort()));
        assertTrue(found, what + " uses port " + port + ", which that container does not declare");
    }

    private static void assertDeclared(final IntOrString port, final Map<String, Integer> byName,
                                       final Set<Integer> numbers, final String what) {
        assertTrue(port.getStrVal() != null ? byName.containsKey(port.getStrVal()) : numbers.contains(port.getIntVal()),
            what + " targets port " + port + ", which no container declares");
    }

    private static void assertMatches(final LabelSelector s, final Map<String, String> labels, final String what) {
        assertTrue(s.getMatchExpressions() == null || s.getMatchExpressions().isEmpty(), what);
        assertFalse(s.getMatchLabels().isEmpty(), what + " selects everything");
        assertTrue(labels.entrySet().containsAll(s.getMatchLabels().entrySet()),
            what + " " + s.getMatchLabels() + " does not match the pod template's " + labels);
    }

    private static String annotation(final Map<String, String> annotations, final String key) {
        return annotations == null ? null : annotations.get(key);
    }

    private static Container container(final PodSpec pod, final String name) {
        return pod.getContainers().stream().filter(c -> c.getName().equals(name)).findFirst().orElseThrow();
    }

    private static <T extends HasMetadata> T one(final List<HasMetadata> all, final Class<T> type) {
        final List<T> of = Manifests.ofKind(all, type);
        assertEquals(1, of.size(), "one " + type.getSimpleName());
        return of.getFirst();
    }
}
