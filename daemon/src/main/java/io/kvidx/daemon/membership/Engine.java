package io.kvidx.daemon.membership;

import io.kvidx.client.index.DataParallelRanks;
import io.kvidx.client.index.PodIds;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;

import java.util.Objects;

/**
 * One engine (one data-parallel rank of one instance) the daemon subscribes to: where its ZeroMQ publisher and
 * replay socket are, which model it serves, and which routing group (tenant) it belongs to. Its pod id in the
 * index is {@link #podId()}: the instance id, with {@code #<rank>} appended for ranks above 0
 * ({@link DataParallelRanks}), so that every answer maps back to (instance, rank). The instance id is checked by
 * {@link PodIds} (its character set, no {@code #}, the pod table's length bound).
 *
 * @param instanceId     the instance id (Dynamo's worker id: a number, kept as its decimal string; or any name); null
 *                       for a configured endpoint whose pods are named by its messages' topics.
 * @param dpRank         data-parallel rank, 0 for engines without data parallelism.
 * @param endpoint       the engine's ZeroMQ PUB endpoint.
 * @param replayEndpoint its replay ROUTER endpoint, or null.
 * @param model          model name (seeds the router keys of its blocks).
 * @param blockSize      the engine's block size in tokens (must equal the cell's router block size).
 * @param routingGroup   routing group (Mooncake) or tenant (Dynamo); {@link #DEFAULT_GROUP} when none is given.
 * @param additionalSalt salt the engine's registration names; recorded and reported, not folded into keys
 *                       (docs/service-api.md says why).
 * @param type           the engine's event format.
 * @param source         who added it: the API (kept in the cell's state) or the configuration (flags and YAML).
 */
public record Engine(String instanceId, int dpRank, String endpoint, String replayEndpoint, String model,
    int blockSize, String routingGroup, String additionalSalt, ZmqEndpoint.Engine type, Source source) {
    /** The routing group of engines registered without one (Dynamo's tenant name for it). */
    public static final String DEFAULT_GROUP = "default";

    /** Who added an engine. */
    public enum Source {
        /** {@code POST /register}; kept in the cell's state directory across restarts. */
        API,
        /** The {@code --zmq} flags or the YAML file; follows the file when it is reloaded. */
        CONFIG,
        /**
         * Pod discovery from the Kubernetes API server ({@code --discover}); follows the ready pods. Never kept in the
         * state directory: a restarted daemon learns them again from the API server.
         */
        DISCOVERY
    }

    /**
     * Validates.
     */
    public Engine {
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(source, "source");
        if (instanceId == null ? source == Source.API : instanceId.isEmpty()) {
            throw new IllegalArgumentException("instance id must not be empty");
        }
        final String invalid = instanceId == null ? null : PodIds.checkInstanceId(instanceId);
        if (invalid != null) {
            throw new IllegalArgumentException(invalid);
        }
        if (dpRank < 0 || dpRank > DataParallelRanks.MAX_RANK) {
            throw new IllegalArgumentException("dp_rank must be in [0, " + DataParallelRanks.MAX_RANK + "]: "
                + dpRank);
        }
        if (routingGroup == null || routingGroup.isEmpty()) {
            routingGroup = DEFAULT_GROUP;
        }
        if (instanceId != null) {
            // Throws for an id too long for the pod table.
            DataParallelRanks.podId(instanceId, dpRank);
        }
    }

    /**
     * A configured subscription ({@code --zmq} or YAML) as the membership table holds it.
     *
     * @param endpoint the subscription.
     * @return the engine.
     */
    public static Engine configured(final ZmqEndpoint endpoint) {
        final String pod = endpoint.podId();
        final int rank = pod == null ? 0 : DataParallelRanks.rankOf(pod);
        return new Engine(pod == null ? null : DataParallelRanks.basePodId(pod), rank, endpoint.endpoint(),
            endpoint.replayEndpoint(), endpoint.model(), 0, null, null, endpoint.engine(), Source.CONFIG);
    }

    /**
     * @return the engine's pod id in the index, or null when its pods are named by topics.
     */
    public String podId() {
        return instanceId == null ? null : DataParallelRanks.podId(instanceId, dpRank);
    }

    /**
     * @return the key of the engine in the membership table: a registration's pod id; a configured subscription's
     * endpoint (the configuration may give several endpoints the same pod: one per data-parallel rank).
     */
    public String key() {
        return source == Source.CONFIG ? "endpoint:" + endpoint : podId();
    }

    /**
     * @return the ZeroMQ subscription this engine needs: every message of the endpoint is this pod's, whatever its
     * topic.
     */
    public ZmqEndpoint toEndpoint() {
        return new ZmqEndpoint(endpoint, podId(), model, replayEndpoint, type);
    }

    /**
     * @param other another engine.
     * @return true when both subscribe to the same thing (so registering one over the other changes nothing).
     */
    public boolean sameSubscription(final Engine other) {
        return endpoint.equals(other.endpoint) && Objects.equals(replayEndpoint, other.replayEndpoint)
            && Objects.equals(model, other.model) && type == other.type && routingGroup.equals(other.routingGroup);
    }
}
