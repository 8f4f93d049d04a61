package io.kvidx.deploy;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * GIE's {@code inference.networking.k8s.io/v1} InferencePool, field for field as its API reference
 * (gateway-api-inference-extension, site-src/reference/spec.md) defines the spec, with the CRD's validation: fabric8
 * 8.0.0 has no model of it. Only the creators' parameters bind (getters and setters are not detected, so none of
 * {@link HasMetadata}'s default methods becomes a property): with FAIL_ON_UNKNOWN_PROPERTIES any other field fails, and
 * the constructors refuse what the CRD refuses. {@code status} is left out: a manifest does not set it.
 */
@JsonAutoDetect(fieldVisibility = Visibility.NONE, getterVisibility = Visibility.NONE,
    isGetterVisibility = Visibility.NONE, setterVisibility = Visibility.NONE, creatorVisibility = Visibility.ANY)
@JsonDeserialize(using = JsonDeserializer.None.class)
final class InferencePool implements HasMetadata {
    static final String API_VERSION = "inference.networking.k8s.io/v1";
    static final String KIND = "InferencePool";

    private String apiVersion;
    private final String kind;
    private ObjectMeta metadata;
    private final Spec spec;

    @JsonCreator
    InferencePool(@JsonProperty("apiVersion") final String apiVersion, @JsonProperty("kind") final String kind,
                  @JsonProperty("metadata") final ObjectMeta metadata,
                  @JsonProperty(value = "spec", required = true) final Spec spec) {
        if (spec == null) {
            throw new IllegalArgumentException("an InferencePool needs a spec");
        }
        this.apiVersion = apiVersion;
        this.kind = kind;
        this.metadata = metadata;
        this.spec = spec;
    }

    /**
     * @param selector          the pods of the pool (matchLabels only, 1 to 64 labels).
     * @param targetPorts       the model servers' port (exactly one).
     * @param endpointPickerRef the endpoint picker the gateway asks.
     */
    record Spec(@JsonProperty(required = true) Selector selector,
                @JsonProperty(required = true) List<Port> targetPorts,
                @JsonProperty(required = true) EndpointPickerRef endpointPickerRef) {
        Spec {
            if (selector == null || targetPorts == null || endpointPickerRef == null) {
                throw new IllegalArgumentException("spec needs selector, targetPorts and endpointPickerRef");
            }
            if (targetPorts.size() != 1) {
                throw new IllegalArgumentException("spec.targetPorts holds exactly one port, got " + targetPorts);
            }
        }
    }

    /** @param matchLabels the labels every pod of the pool has. */
    record Selector(@JsonProperty(required = true) Map<String, String> matchLabels) {
        Selector {
            if (matchLabels == null || matchLabels.isEmpty() || matchLabels.size() > 64) {
                throw new IllegalArgumentException("selector.matchLabels holds 1 to 64 labels, got " + matchLabels);
            }
        }
    }

    /** @param number a port number, 1 to 65535. */
    record Port(@JsonProperty(required = true) int number) {
        Port {
            if (number < 1 || number > 65_535) {
                throw new IllegalArgumentException("port number must be in 1..65535: " + number);
            }
        }
    }

    /**
     * @param group       the referent's API group ("" or absent: the core group).
     * @param kind        the referent's kind (absent: Service).
     * @param name        its name.
     * @param port        the Service's port (required for a Service), not the container's.
     * @param failureMode FailOpen or FailClose (absent: FailClose).
     */
    record EndpointPickerRef(String group, String kind, @JsonProperty(required = true) String name, Port port,
                             String failureMode) {
        EndpointPickerRef {
            if (name == null || name.isEmpty()) {
                throw new IllegalArgumentException("endpointPickerRef.name is required");
            }
            if ((kind == null || kind.equals("Service")) && port == null) {
                throw new IllegalArgumentException("endpointPickerRef.port is required for a Service");
            }
            if (failureMode != null && !Set.of("FailOpen", "FailClose").contains(failureMode)) {
                throw new IllegalArgumentException("endpointPickerRef.failureMode: FailOpen or FailClose, got "
                    + failureMode);
            }
        }

        /** @return whether the referent is a Service of the core group (the defaults). */
        boolean refersToService() {
            return (group == null || group.isEmpty()) && (kind == null || kind.equals("Service"));
        }
    }

    Spec spec() {
        return spec;
    }

    @Override
    public ObjectMeta getMetadata() {
        return metadata;
    }

    @Override
    public void setMetadata(final ObjectMeta metadata) {
        this.metadata = metadata;
    }

    @Override
    public String getKind() {
        return kind;
    }

    @Override
    public String getApiVersion() {
        return apiVersion;
    }

    @Override
    public void setApiVersion(final String version) {
        this.apiVersion = version;
    }
}
