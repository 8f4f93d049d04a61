package io.kvidx.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
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
import picocli.CommandLine;

/**
 * The checks every kvidx workload of deploy/kubernetes passes (a Deployment with the daemon as a sidecar, the objects
 * named after it): selectors, security, ports, the index volume, RBAC, and the containers' args and files as the real
 * commands read them.
 */
final class PodChecks {
    static final String INDEX_DIR = "/dev/shm/kvidx";
    /** What $(VAR) becomes in args: a pod IP, which only an address rule for other hosts accepts. */
    static final String POD_IP = "10.0.0.1";
    private static final Pattern VAR_REF = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)");

    private PodChecks() {
    }

    static <T extends HasMetadata> T one(final List<HasMetadata> all, final Class<T> type) {
        final List<T> of = Manifests.ofKind(all, type);
        assertEquals(1, of.size(), "one " + type.getSimpleName());
        return of.getFirst();
    }

    static <T extends HasMetadata> T named(final List<HasMetadata> all, final Class<T> type, final String name) {
        return Manifests.ofKind(all, type).stream().filter(r -> r.getMetadata().getName().equals(name)).findFirst()
            .orElseThrow(() -> new AssertionError("no " + type.getSimpleName() + " " + name));
    }

    /** The objects of a workload: named as its Deployment, or that name and a suffix ({@code kvidx-router-metrics}). */
    static <T extends HasMetadata> List<T> of(final List<HasMetadata> all, final Class<T> type, final Deployment d) {
        final String name = d.getMetadata().getName();
        return Manifests.ofKind(all, type).stream().filter(r -> r.getMetadata().getName().equals(name)
            || r.getMetadata().getName().startsWith(name + "-")).toList();
    }

    static Container container(final PodSpec pod, final String name) {
        return pod.getContainers().stream().filter(c -> c.getName().equals(name)).findFirst()
            .orElseThrow(() -> new AssertionError("no container " + name));
    }

    /** The Deployment's, its Services', PDB's, NetworkPolicy's and anti-affinity's selectors pick its pods. */
    static void assertSelectorsMatch(final String what, final List<HasMetadata> all, final Deployment d) {
        final Map<String, String> labels = d.getSpec().getTemplate().getMetadata().getLabels();
        assertMatches(d.getSpec().getSelector(), labels, what + ": Deployment selector");
        final List<Service> services = of(all, Service.class, d);
        assertFalse(services.isEmpty(), what + ": Services of " + d.getMetadata().getName());
        for (final Service s : services) {
            assertFalse(s.getSpec().getSelector().isEmpty(), "Service " + s.getMetadata().getName());
            assertTrue(labels.entrySet().containsAll(s.getSpec().getSelector().entrySet()),
                what + ": Service " + s.getMetadata().getName() + " selects " + s.getSpec().getSelector());
        }
        final List<PodDisruptionBudget> pdbs = of(all, PodDisruptionBudget.class, d);
        assertEquals(1, pdbs.size(), what + ": one PDB");
        assertMatches(pdbs.getFirst().getSpec().getSelector(), labels, what + ": PDB selector");
        final List<NetworkPolicy> policies = of(all, NetworkPolicy.class, d);
        assertEquals(1, policies.size(), what + ": one NetworkPolicy");
        assertMatches(policies.getFirst().getSpec().getPodSelector(), labels, what + ": NetworkPolicy");
        assertMatches(d.getSpec().getTemplate().getSpec().getAffinity().getPodAntiAffinity()
            .getPreferredDuringSchedulingIgnoredDuringExecution().getFirst().getPodAffinityTerm()
            .getLabelSelector(), labels, what + ": anti-affinity");
    }

    /** Non-root numeric uid, read-only root, no escalation, ALL dropped, seccomp RuntimeDefault, requests, limits. */
    static void assertLockedDown(final String what, final PodSpec pod) {
        final PodSecurityContext p = pod.getSecurityContext();
        assertEquals("RuntimeDefault", p.getSeccompProfile().getType(), what);
        assertTrue(Boolean.TRUE.equals(p.getRunAsNonRoot()), what);
        final List<Container> all = new ArrayList<>(pod.getContainers());
        if (pod.getInitContainers() != null) {
            all.addAll(pod.getInitContainers());
        }
        for (final Container c : all) {
            final SecurityContext s = c.getSecurityContext();
            final String where = what + ": container " + c.getName();
            assertNotNull(s, where);
            final Boolean nonRoot = s.getRunAsNonRoot() != null ? s.getRunAsNonRoot() : p.getRunAsNonRoot();
            final Long uid = s.getRunAsUser() != null ? s.getRunAsUser() : p.getRunAsUser();
            assertTrue(Boolean.TRUE.equals(nonRoot), where + " runAsNonRoot");
            assertTrue(uid != null && uid != 0, where + " runs as a numeric non-root uid");
            assertTrue(Boolean.TRUE.equals(s.getReadOnlyRootFilesystem()), where + " readOnlyRootFilesystem");
            assertTrue(Boolean.FALSE.equals(s.getAllowPrivilegeEscalation()), where + " allowPrivilegeEscalation");
            assertEquals(List.of("ALL"), s.getCapabilities().getDrop(), where + " drops ALL capabilities");
            assertTrue(s.getCapabilities().getAdd() == null || s.getCapabilities().getAdd().isEmpty(), where);
            assertTrue(s.getPrivileged() == null || !s.getPrivileged(), where);
            assertNotNull(c.getResources().getRequests(), where + " requests");
            assertNotNull(c.getResources().getLimits().get("memory"), where + " memory limit");
        }
    }

    /**
     * Every port a probe, a Service of the workload, a scrape annotation or the NetworkPolicy names is a container
     * port (port names unique in the pod).
     *
     * @return the pod's container ports by name.
     */
    static Map<String, Integer> assertPortsDeclared(final String what, final List<HasMetadata> all,
                                                    final Deployment d) {
        final PodSpec pod = d.getSpec().getTemplate().getSpec();
        final Map<String, Integer> byName = new HashMap<>();
        final Set<Integer> numbers = new HashSet<>();
        for (final Container c : pod.getContainers()) {
            for (final ContainerPort p : c.getPorts()) {
                assertTrue(byName.put(p.getName(), p.getContainerPort()) == null, what + ": port name " + p.getName());
                numbers.add(p.getContainerPort());
            }
            for (final Probe probe : probes(c)) {
                final IntOrString port = probe.getHttpGet() != null ? probe.getHttpGet().getPort()
                    : probe.getTcpSocket() != null ? probe.getTcpSocket().getPort()
                    : new IntOrString(probe.getGrpc().getPort());
                assertPortIn(port, c.getPorts(), what + ": a probe of " + c.getName());
            }
        }
        for (final Service s : of(all, Service.class, d)) {
            for (final ServicePort sp : s.getSpec().getPorts()) {
                final IntOrString t = sp.getTargetPort();
                assertTrue(t.getStrVal() != null ? byName.containsKey(t.getStrVal()) : numbers.contains(t.getIntVal()),
                    what + ": Service " + s.getMetadata().getName() + " targets port " + t + ", which no container"
                        + " declares");
            }
            final String annotated = annotation(s.getMetadata().getAnnotations(), "prometheus.io/port");
            if (annotated != null) {
                assertTrue(numbers.contains(Integer.parseInt(annotated)), what + ": Service scrape port " + annotated);
            }
        }
        final String podScrape = annotation(d.getSpec().getTemplate().getMetadata().getAnnotations(),
            "prometheus.io/port");
        assertNotNull(podScrape, what + ": the pod template names its metrics port");
        assertTrue(numbers.contains(Integer.parseInt(podScrape)), what + ": pod scrape port " + podScrape);
        for (final NetworkPolicyIngressRule rule : of(all, NetworkPolicy.class, d).getFirst().getSpec().getIngress()) {
            for (final NetworkPolicyPort p : rule.getPorts()) {
                if (p.getPort().getStrVal() != null) {
                    assertTrue(byName.containsKey(p.getPort().getStrVal()),
                        what + ": NetworkPolicy port " + p.getPort());
                }
            }
        }
        return byName;
    }

    /** One memory-backed emptyDir at the index directory, mounted by every container, read-only by the reader. */
    static void assertIndexShared(final String what, final PodSpec pod, final String reader) {
        final Map<String, Volume> volumes = new HashMap<>();
        pod.getVolumes().forEach(v -> volumes.put(v.getName(), v));
        assertEquals("Memory", volumes.get("index").getEmptyDir().getMedium(), what);
        for (final Container c : pod.getContainers()) {
            for (final VolumeMount m : c.getVolumeMounts()) {
                assertTrue(volumes.containsKey(m.getName()),
                    what + ": " + c.getName() + " mounts an undeclared volume");
            }
            final VolumeMount idx = c.getVolumeMounts().stream().filter(m -> m.getName().equals("index"))
                .findFirst().orElseThrow(() -> new AssertionError(c.getName() + " does not mount the index"));
            assertEquals(INDEX_DIR, idx.getMountPath(), what);
            assertTrue(c.getVolumeMounts().stream().anyMatch(m -> m.getMountPath().equals("/tmp")),
                what + ": " + c.getName() + " has a writable /tmp");
        }
        assertTrue(container(pod, reader).getVolumeMounts().stream()
            .anyMatch(m -> m.getName().equals("index") && Boolean.TRUE.equals(m.getReadOnly())),
            what + ": " + reader + " maps the index read-only");
        assertTrue(container(pod, "daemon").getArgs().contains("--dir=" + INDEX_DIR), what);
    }

    /** The Role is get/list/watch on pods and inferencepools and nothing else, bound to the pods' ServiceAccount. */
    static void assertRbacReadOnly(final String what, final List<HasMetadata> all, final Deployment d) {
        final Role role = one(all, Role.class);
        final Set<String> resources = new HashSet<>();
        for (final PolicyRule r : role.getRules()) {
            assertEquals(List.of("get", "list", "watch"), r.getVerbs(), what);
            assertTrue(r.getResourceNames() == null || r.getResourceNames().isEmpty(), what);
            resources.addAll(r.getResources());
            assertTrue(r.getApiGroups().equals(List.of("")) && r.getResources().equals(List.of("pods"))
                || r.getApiGroups().equals(List.of("inference.networking.k8s.io"))
                && r.getResources().equals(List.of("inferencepools")), what + ": " + r);
        }
        assertEquals(Set.of("pods", "inferencepools"), resources, what);
        final RoleBinding binding = one(all, RoleBinding.class);
        final String sa = one(all, ServiceAccount.class).getMetadata().getName();
        assertEquals(role.getMetadata().getName(), binding.getRoleRef().getName(), what);
        assertEquals("Role", binding.getRoleRef().getKind(), what);
        assertEquals(1, binding.getSubjects().size(), what);
        assertEquals("ServiceAccount", binding.getSubjects().getFirst().getKind(), what);
        assertEquals(sa, binding.getSubjects().getFirst().getName(), what);
        assertEquals(sa, d.getSpec().getTemplate().getSpec().getServiceAccountName(), what);
    }

    /** The container's args with each $(VAR) replaced by {@link #POD_IP}; every VAR must be an env var of it. */
    static List<String> expand(final Container c) {
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
                m.appendReplacement(sb, POD_IP);
            }
            m.appendTail(sb);
            out.add(sb.toString());
        }
        return out;
    }

    /** The args parse with the command's own picocli parser, all matched; the entrypoint is the image's. */
    static CommandLine.ParseResult assertArgsParse(final String what, final Container c, final CommandLine cli) {
        assertTrue(c.getCommand() == null || c.getCommand().isEmpty(), what + ": " + c.getName()
            + ": the image's entrypoint");
        final List<String> args = expand(c);
        try {
            final CommandLine.ParseResult r = cli.parseArgs(args.toArray(String[]::new));
            assertTrue(r.unmatched().isEmpty(), what + ": " + c.getName() + ": unmatched " + r.unmatched());
            return r;
        } catch (final CommandLine.ParameterException ex) {
            return fail(what + ": " + c.getName() + " args " + args + ": " + ex.getMessage());
        }
    }

    /**
     * The file a container reads at {@code path}, from the ConfigMap volume mounted above it, copied to {@code tmp}.
     * Fails when no ConfigMap volume is mounted there or the ConfigMap has no such key.
     */
    static Path configMapFile(final List<HasMetadata> all, final PodSpec pod, final Container c, final String path,
                              final Path tmp) throws IOException {
        for (final VolumeMount m : c.getVolumeMounts()) {
            if (path.startsWith(m.getMountPath() + "/")) {
                final Volume v = pod.getVolumes().stream().filter(x -> x.getName().equals(m.getName())).findFirst()
                    .orElseThrow();
                assertNotNull(v.getConfigMap(), c.getName() + ": " + path + " is not on a ConfigMap volume");
                final ConfigMap cm = named(all, ConfigMap.class, v.getConfigMap().getName());
                final String key = path.substring(m.getMountPath().length() + 1);
                final String data = cm.getData().get(key);
                assertNotNull(data, c.getName() + ": ConfigMap " + cm.getMetadata().getName() + " has no " + key);
                final Path dir = Files.createDirectories(tmp.resolve(c.getName()));
                return Files.writeString(dir.resolve(key), data);
            }
        }
        return fail(c.getName() + ": nothing is mounted above " + path);
    }

    /** The args with {@code --config=PATH} pointing at the copy of that ConfigMap key. */
    static List<String> withConfigCopy(final List<HasMetadata> all, final PodSpec pod, final Container c,
                                       final Path tmp) throws IOException {
        final List<String> out = new ArrayList<>();
        for (final String a : expand(c)) {
            out.add(a.startsWith("--config=")
                ? "--config=" + configMapFile(all, pod, c, a.substring("--config=".length()), tmp) : a);
        }
        return out;
    }

    /**
     * {@code kvidx daemon ARGS --print-config}, with the daemon container's args and its config file: the effective
     * configuration as YAML (what the daemon would run with).
     */
    static Map<String, Object> daemonEffectiveConfig(final List<HasMetadata> all, final PodSpec pod, final Path tmp)
        throws IOException {
        final List<String> args = withConfigCopy(all, pod, container(pod, "daemon"), tmp);
        args.add("--print-config");
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final StringWriter err = new StringWriter();
        final PrintStream saved = System.out;
        final int rc;
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            rc = new CommandLine(new KvidxCli()).setErr(new PrintWriter(err)).execute(args.toArray(String[]::new));
        } finally {
            System.setOut(saved);
        }
        assertEquals(0, rc, "kvidx " + args + ": " + err);
        return Manifests.documents(out.toString(StandardCharsets.UTF_8)).getFirst();
    }

    static void assertMatches(final LabelSelector s, final Map<String, String> labels, final String what) {
        assertTrue(s.getMatchExpressions() == null || s.getMatchExpressions().isEmpty(), what);
        assertFalse(s.getMatchLabels().isEmpty(), what + " selects everything");
        assertTrue(labels.entrySet().containsAll(s.getMatchLabels().entrySet()),
            what + " " + s.getMatchLabels() + " does not match the pod template's " + labels);
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

    private static String annotation(final Map<String, String> annotations, final String key) {
        return annotations == null ? null : annotations.get(key);
    }

    /**
     * A starting replica catches up from the others: the daemon's effective {@code peer} names a Service of the
     * workload's pods at the daemon's HTTP port, {@code peerOptional} lets the first replica start empty.
     *
     * @param what the rendering's name.
     * @param all  its documents.
     * @param d    the workload.
     * @param tmp  a scratch directory for the daemon's effective configuration.
     * @throws Exception when the configuration cannot be rendered.
     */
    static void assertPeerCatchUp(final String what, final List<HasMetadata> all, final Deployment d, final Path tmp)
        throws Exception {
        final PodSpec pod = d.getSpec().getTemplate().getSpec();
        final Map<String, Object> daemon = daemonEffectiveConfig(all, pod, tmp);
        final java.net.URI peer = java.net.URI.create(String.valueOf(daemon.get("peer")));
        assertEquals(Boolean.TRUE, daemon.get("peerOptional"), what + ": the first replica starts empty");
        final Service peers = named(all, Service.class, peer.getHost());
        assertEquals(d.getSpec().getSelector().getMatchLabels(), peers.getSpec().getSelector(),
            what + ": the peers Service reaches the replicas");
        final ServicePort port = peers.getSpec().getPorts().stream().filter(p -> p.getPort() == peer.getPort())
            .findFirst().orElseThrow(() -> new AssertionError(what + ": no port " + peer.getPort()));
        final Map<String, Integer> ports = assertPortsDeclared(what, all, d);
        assertEquals("daemon-http", port.getTargetPort().getStrVal(), what);
        final String http = pod.getContainers().stream().filter(c -> c.getName().equals("daemon")).findFirst()
            .orElseThrow().getArgs().stream().filter(a -> a.startsWith("--http=")).findFirst().orElseThrow();
        assertTrue(http.endsWith(":" + ports.get("daemon-http")), what + ": the daemon's API is " + http);
    }
}
