package io.kvidx.deploy;

import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.DeserializationConfig;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.deser.BeanDeserializerBuilder;
import com.fasterxml.jackson.databind.deser.BeanDeserializerModifier;
import com.fasterxml.jackson.databind.module.SimpleModule;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.gatewayapi.v1.HTTPRoute;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * Loads deploy/kubernetes into fabric8's typed model (and {@link InferencePool}'s, which fabric8 lacks), strictly: a
 * field the model does not know fails.
 */
final class Manifests {
    /** The kinds the manifests may hold, by apiVersion/kind. Any other kind fails the parse. */
    static final Map<String, Class<? extends HasMetadata>> KINDS = Map.of(
        "v1/ServiceAccount", ServiceAccount.class,
        "v1/ConfigMap", ConfigMap.class,
        "v1/Service", Service.class,
        "apps/v1/Deployment", Deployment.class,
        "policy/v1/PodDisruptionBudget", PodDisruptionBudget.class,
        "networking.k8s.io/v1/NetworkPolicy", NetworkPolicy.class,
        "rbac.authorization.k8s.io/v1/Role", Role.class,
        "rbac.authorization.k8s.io/v1/RoleBinding", RoleBinding.class,
        "gateway.networking.k8s.io/v1/HTTPRoute", HTTPRoute.class,
        InferencePool.API_VERSION + "/" + InferencePool.KIND, InferencePool.class);

    /**
     * fabric8's model classes keep unknown fields in an "additionalProperties" any-setter: this mapper removes every
     * any-setter, so that FAIL_ON_UNKNOWN_PROPERTIES fails on a misspelt or misplaced field.
     */
    static final ObjectMapper STRICT = strictMapper();

    private Manifests() {
    }

    static Path deployDir() {
        final String dir = System.getProperty("kvidx.deploy.dir");
        return dir != null ? Path.of(dir).toAbsolutePath().normalize() : Path.of("..").toAbsolutePath().normalize();
    }

    static Path routerBase() {
        return deployDir().resolve("kubernetes/router");
    }

    static Path pickerBase() {
        return deployDir().resolve("kubernetes/picker");
    }

    /**
     * Every overlay under deploy/kubernetes/examples whose kustomization lists {@code base} among its resources,
     * rendered by {@code kubectl kustomize} and typed, by directory name; empty when kubectl is not on this machine.
     */
    @SuppressWarnings("unchecked")
    static Map<String, List<HasMetadata>> overlaysOf(final Path base) throws IOException, InterruptedException {
        final Map<String, List<HasMetadata>> out = new TreeMap<>();
        try (Stream<Path> s = Files.list(deployDir().resolve("kubernetes/examples"))) {
            for (final Path overlay : s.sorted().toList()) {
                final Map<String, Object> k = documents(Files.readString(overlay.resolve("kustomization.yaml")))
                    .getFirst();
                final boolean usesBase = ((List<String>) k.get("resources")).stream()
                    .anyMatch(r -> overlay.resolve(r).normalize().equals(base.normalize()));
                final String rendered = usesBase ? kustomize(overlay) : null;
                if (rendered != null) {
                    out.put(overlay.getFileName().toString(), typed(documents(rendered)));
                }
            }
        }
        return out;
    }

    static ObjectMapper strictMapper() {
        final SimpleModule strict = new SimpleModule("kvidx-strict");
        strict.setDeserializerModifier(new BeanDeserializerModifier() {
            private static final long serialVersionUID = 1L;

            @Override
            public BeanDeserializerBuilder updateBuilder(final DeserializationConfig config,
                                                         final BeanDescription description,
                                                         final BeanDeserializerBuilder builder) {
                if (builder.getAnySetter() != null) {
                    builder.setAnySetter(null);
                }
                return builder;
            }
        });
        return new ObjectMapper()
            .registerModule(strict)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY);
    }

    /** Every YAML document of a file (comments and empty documents dropped), as plain maps. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> documents(final String yaml) {
        final List<Map<String, Object>> out = new ArrayList<>();
        for (final Object doc : new Load(LoadSettings.builder().setAllowDuplicateKeys(false).build())
            .loadAllFromString(yaml)) {
            if (doc != null) {
                out.add((Map<String, Object>) doc);
            }
        }
        return out;
    }

    /** The documents of a kustomization's resources, in its order. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> resources(final Path kustomizationDir) throws IOException {
        final Map<String, Object> k = documents(Files.readString(kustomizationDir.resolve("kustomization.yaml")))
            .getFirst();
        final List<Map<String, Object>> out = new ArrayList<>();
        for (final String r : (List<String>) k.get("resources")) {
            out.addAll(documents(Files.readString(kustomizationDir.resolve(r))));
        }
        return out;
    }

    /** One document as its typed model object; unknown kinds and fields throw. */
    static HasMetadata typed(final Map<String, Object> doc) {
        final String key = doc.get("apiVersion") + "/" + doc.get("kind");
        final Class<? extends HasMetadata> type = KINDS.get(key);
        if (type == null) {
            throw new IllegalArgumentException("no typed model for " + key + " (Manifests.KINDS)");
        }
        return STRICT.convertValue(doc, type);
    }

    static List<HasMetadata> typed(final List<Map<String, Object>> docs) {
        final List<HasMetadata> out = new ArrayList<>();
        for (final Map<String, Object> d : docs) {
            out.add(typed(d));
        }
        return out;
    }

    static <T extends HasMetadata> List<T> ofKind(final List<HasMetadata> all, final Class<T> type) {
        return all.stream().filter(type::isInstance).map(type::cast).toList();
    }

    /** `kubectl kustomize DIR`, or null when kubectl is not on this machine. */
    static String kustomize(final Path dir) throws IOException, InterruptedException {
        final Path kubectl = findKubectl();
        if (kubectl == null) {
            return null;
        }
        final Path out = Files.createTempFile("kustomize", ".yaml");
        final Path err = Files.createTempFile("kustomize", ".err");
        try {
            final Process p = new ProcessBuilder(kubectl.toString(), "kustomize", dir.toString())
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("kubectl kustomize " + dir + " took over 60 s");
            }
            if (p.exitValue() != 0) {
                throw new IOException("kubectl kustomize " + dir + " failed: " + Files.readString(err));
            }
            return Files.readString(out);
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    private static Path findKubectl() {
        for (final String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            final Path p = Path.of(d.isEmpty() ? "." : d, "kubectl");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }
}
