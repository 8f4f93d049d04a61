package io.kvidx.discovery;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.kvidx.client.index.DataParallelRanks;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A pod to the engines it runs: none unless it is Running, Ready, not terminating and has an IP; one per
 * data-parallel rank otherwise. A pod whose annotations cannot be read (a port out of range, an unknown engine) runs
 * no engine and says why ({@link Result#rejected()}), so that discovery counts and logs it instead of failing.
 *
 * <p><b>Note:</b> stateless; thread safe.
 */
final class PodEngines {
    /**
     * The engines of a pod, or why it has none.
     *
     * @param engines  its engines (empty when not ready or rejected).
     * @param ready    whether the pod is Running, Ready, not terminating and has an IP.
     * @param rejected why a ready pod's annotations were refused, or null.
     */
    record Result(List<DiscoveredEngine> engines, boolean ready, String rejected) {
    }

    private PodEngines() {
    }

    /**
     * @param pod      the pod.
     * @param context  defaults.
     * @param poolPort the InferencePool's target port, or 0 without a pool.
     * @param models   asks a pod that names no model for it, or null to leave such a pod's model null.
     * @param nowMs    the time.
     * @return its engines (none while its model is being asked).
     */
    static Result of(final Pod pod, final DiscoveryContext context, final int poolPort, final ModelProbe models,
        final long nowMs) {
        if (!isReady(pod)) {
            return new Result(List.of(), false, null);
        }
        final Map<String, String> annotations = orEmpty(pod.getMetadata().getAnnotations());
        final Map<String, String> labels = orEmpty(pod.getMetadata().getLabels());
        final String name = pod.getMetadata().getName();
        final String ip = pod.getStatus().getPodIP();
        try {
            final int kvPort = intAnnotation(annotations, DiscoveryContext.KV_EVENTS_PORT_ANNOTATION,
                context.kvEventsPort(), 1, 65_535);
            final int replayPort = intAnnotation(annotations, DiscoveryContext.KV_REPLAY_PORT_ANNOTATION,
                context.kvReplayPort(), 0, 65_535);
            final int dpSize = intAnnotation(annotations, DiscoveryContext.DP_SIZE_ANNOTATION, 1, 1,
                DataParallelRanks.MAX_RANK + 1);
            final int httpPort = intAnnotation(annotations, DiscoveryContext.HTTP_PORT_ANNOTATION,
                poolPort > 0 ? poolPort : context.httpPort(), 1, 65_535);
            final String engine = annotations.containsKey(DiscoveryContext.ENGINE_ANNOTATION)
                ? DiscoveryContext.engine(annotations.get(DiscoveryContext.ENGINE_ANNOTATION),
                "annotation " + DiscoveryContext.ENGINE_ANNOTATION) : context.engine();
            if (kvPort + dpSize - 1 > 65_535 || (replayPort > 0 && replayPort + dpSize - 1 > 65_535)) {
                throw new IllegalArgumentException("ports offset by " + dpSize + " data-parallel ranks pass 65535");
            }
            String model = annotations.get(DiscoveryContext.MODEL_ANNOTATION);
            if (model == null && context.modelLabel() != null) {
                model = labels.get(context.modelLabel());
            }
            if (model == null) {
                model = context.model();
            }
            final String host = ip.indexOf(':') >= 0 ? "[" + ip + "]" : ip;
            final String httpUrl = "http://" + host + ":" + httpPort;
            if (model == null && models != null) {
                model = models.modelOf(pod.getMetadata().getUid(), httpUrl, nowMs);
                if (model == null) {
                    final String why = models.whyFailed(pod.getMetadata().getUid());
                    return new Result(List.of(), true, "pod " + name + ": no model known (no annotation "
                        + DiscoveryContext.MODEL_ANNOTATION + ", no model label, no default); asking " + httpUrl
                        + "/v1/models" + (why == null ? "" : " (last answer: " + why + ")"));
                }
            }
            final String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
            final String zone = labels.getOrDefault(DiscoveryContext.ZONE_LABEL,
                annotations.get(DiscoveryContext.ZONE_LABEL));
            final List<DiscoveredEngine> engines = new ArrayList<>(dpSize);
            for (int rank = 0; rank < dpSize; rank++) {
                engines.add(new DiscoveredEngine(name, pod.getMetadata().getUid(), ip, rank,
                    "tcp://" + host + ":" + (kvPort + rank),
                    replayPort == 0 ? null : "tcp://" + host + ":" + (replayPort + rank), engine,
                    httpUrl, model, node, zone));
            }
            // Throws for a name too long for the pod table once a rank is appended.
            DataParallelRanks.podId(name, dpSize - 1);
            return new Result(List.copyOf(engines), true, null);
        } catch (final IllegalArgumentException ex) {
            return new Result(List.of(), true, "pod " + name + ": " + ex.getMessage());
        }
    }

    /**
     * @param pod a pod.
     * @return whether it is Running, Ready (condition), not being deleted, and has an IP.
     */
    static boolean isReady(final Pod pod) {
        if (pod.getMetadata() == null || pod.getMetadata().getDeletionTimestamp() != null || pod.getStatus() == null
            || !"Running".equals(pod.getStatus().getPhase())) {
            return false;
        }
        final String ip = pod.getStatus().getPodIP();
        if (ip == null || ip.isEmpty()) {
            return false;
        }
        final List<PodCondition> conditions = pod.getStatus().getConditions();
        if (conditions != null) {
            for (final PodCondition c : conditions) {
                if ("Ready".equals(c.getType())) {
                    return "True".equals(c.getStatus());
                }
            }
        }
        return false;
    }

    private static int intAnnotation(final Map<String, String> annotations, final String key, final int otherwise,
        final int min, final int max) {
        final String text = annotations.get(key);
        if (text == null) {
            return otherwise;
        }
        final int value;
        try {
            value = Integer.parseInt(text.strip());
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException("annotation " + key + " is not a number: '" + text + "'");
        }
        if (value < min || value > max) {
            throw new IllegalArgumentException("annotation " + key + " must be in " + min + ".." + max + ": " + value);
        }
        return value;
    }

    private static Map<String, String> orEmpty(final Map<String, String> map) {
        return map == null ? Map.of() : map;
    }
}
