package io.kvidx.discovery;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What discovery reads of an InferencePool ({@code inference.networking.k8s.io/v1}): {@code spec.selector.matchLabels}
 * (the pods, all labels must match; the API allows nothing else in the selector) and
 * {@code spec.targetPorts[0].number} (the model servers' port; the API allows exactly one).
 *
 * @param matchLabels the pods' labels.
 * @param targetPort  the model servers' port.
 */
record InferencePoolSpec(Map<String, String> matchLabels, int targetPort) {
    /**
     * @param pool the resource as the API server returned it.
     * @return its spec.
     * @throws IllegalArgumentException when the spec lacks a non-empty selector or a valid target port.
     */
    static InferencePoolSpec of(final GenericKubernetesResource pool) {
        final Object spec = pool.getAdditionalProperties().get("spec");
        if (!(spec instanceof Map<?, ?> s)) {
            throw new IllegalArgumentException("no spec");
        }
        final Map<String, String> labels = new LinkedHashMap<>();
        if (s.get("selector") instanceof Map<?, ?> selector && selector.get("matchLabels") instanceof Map<?, ?> m) {
            for (final Map.Entry<?, ?> e : m.entrySet()) {
                if (e.getKey() == null || e.getValue() == null) {
                    throw new IllegalArgumentException("spec.selector.matchLabels holds a null key or value");
                }
                labels.put(e.getKey().toString(), e.getValue().toString());
            }
        }
        if (labels.isEmpty()) {
            throw new IllegalArgumentException("spec.selector.matchLabels is missing or empty (it would select every"
                + " pod of the namespace)");
        }
        if (!(s.get("targetPorts") instanceof List<?> ports) || ports.isEmpty()
            || !(ports.get(0) instanceof Map<?, ?> first) || !(first.get("number") instanceof Number number)) {
            throw new IllegalArgumentException("spec.targetPorts[0].number is missing");
        }
        final int port = number.intValue();
        if (port < 1 || port > 65_535 || number.doubleValue() != port) {
            throw new IllegalArgumentException("spec.targetPorts[0].number must be in 1..65535: " + number);
        }
        return new InferencePoolSpec(Map.copyOf(labels), port);
    }
}
