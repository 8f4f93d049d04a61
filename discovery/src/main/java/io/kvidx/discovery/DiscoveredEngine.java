package io.kvidx.discovery;

import io.kvidx.client.index.DataParallelRanks;

import java.util.Objects;

/**
 * One engine found in the cluster: one data-parallel rank of one Running, Ready pod with an IP. Everything a daemon
 * needs to subscribe to it and a router needs to send it requests.
 *
 * @param podName      the pod's name (its instance id in the index; ranks above 0 add {@code #<rank>}).
 * @param podUid       the pod's uid (a re-created pod of the same name has another).
 * @param podIp        the pod's IP.
 * @param dpRank       the data-parallel rank, 0 without data parallelism.
 * @param kvEndpoint   the engine's ZeroMQ PUB endpoint, {@code tcp://<podIP>:<port + rank>}.
 * @param replayEndpoint its replay ROUTER endpoint, or null when none is annotated.
 * @param engine       {@code vllm} or {@code sglang}: the event format.
 * @param httpUrl      the engine's OpenAI server, {@code http://<podIP>:<targetPort>}.
 * @param model        the model it serves, or null when neither an annotation, a label nor a default names it.
 * @param node         the node it runs on, or null.
 * @param zone         the node's zone ({@code topology.kubernetes.io/zone} as copied onto the pod), or null.
 */
public record DiscoveredEngine(String podName, String podUid, String podIp, int dpRank, String kvEndpoint,
    String replayEndpoint, String engine, String httpUrl, String model, String node, String zone) {
    /**
     * Validates.
     */
    public DiscoveredEngine {
        Objects.requireNonNull(podName, "podName");
        Objects.requireNonNull(podIp, "podIp");
        Objects.requireNonNull(kvEndpoint, "kvEndpoint");
        Objects.requireNonNull(engine, "engine");
        Objects.requireNonNull(httpUrl, "httpUrl");
        if (dpRank < 0 || dpRank > DataParallelRanks.MAX_RANK) {
            throw new IllegalArgumentException("data-parallel rank out of range: " + dpRank);
        }
    }

    /**
     * @return the engine's pod id in the index: the pod's name, with {@code #<rank>} for ranks above 0.
     */
    public String podId() {
        return DataParallelRanks.podId(podName, dpRank);
    }
}
