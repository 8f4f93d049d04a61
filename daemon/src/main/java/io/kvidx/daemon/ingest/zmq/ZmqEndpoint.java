package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.PodIds;

import java.util.Locale;

/**
 * One KV event publisher to subscribe to.
 *
 * @param endpoint       the engine's PUB endpoint, e.g. {@code tcp://10.0.0.7:5557}.
 * @param podId          pod id of every message ({@link PodIds#checkPodId}: one character set, a length bound, a
 *                       {@code #} only before a data-parallel rank), or null to take it from the topic
 *                       {@code kv@<pod>@<model>}.
 * @param model          model name, or null to take it from the topic (or leave it unknown).
 * @param replayEndpoint the engine's replay ROUTER endpoint, or null when it has none.
 * @param engine         the engine whose event format the publisher sends.
 * @param replayFraming  how the engine frames its replay replies ({@link ReplayFraming#ANY} accepts vLLM's two
 *                       framings and SGLang's, which has no topic frame).
 */
public record ZmqEndpoint(String endpoint, String podId, String model, String replayEndpoint, Engine engine,
    ReplayFraming replayFraming) {
    /** The event formats a ZeroMQ endpoint may carry (docs/ingestion.md). */
    public enum Engine {
        /** vLLM's KVEventBatch (both event shapes), and engines that emit it (TensorRT-LLM, ROCm ATOM). */
        VLLM,
        /** SGLang's KVEventBatch: its array events (with the trailing metadata map) and its tagged-map events. */
        SGLANG;

        /**
         * @param name {@code vllm} or {@code sglang} (any case).
         * @return the engine.
         * @throws IllegalArgumentException for any other name.
         */
        public static Engine parse(final String name) {
            return switch (name == null ? "" : name.trim().toLowerCase(Locale.ROOT)) {
                case "vllm" -> VLLM;
                case "sglang" -> SGLANG;
                default -> throw new IllegalArgumentException("engine must be vllm or sglang: " + name);
            };
        }

        /**
         * @return the name the CLI and the config file use.
         */
        public String configName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * @param endpoint the endpoint.
     */
    public ZmqEndpoint {
        if (endpoint == null || endpoint.isBlank()) {
            throw new IllegalArgumentException("ZeroMQ endpoint must not be empty");
        }
        if (podId != null) {
            final String invalid = PodIds.checkPodId(podId);
            if (invalid != null) {
                throw new IllegalArgumentException(invalid);
            }
        }
        if (engine == null) {
            engine = Engine.VLLM;
        }
        if (replayFraming == null) {
            replayFraming = ReplayFraming.ANY;
        }
    }

    /**
     * A vLLM-format publisher whose replay replies may come in either vLLM framing.
     *
     * @param endpoint       the engine's PUB endpoint.
     * @param podId          pod id of every message, or null to take it from the topic.
     * @param model          model name, or null.
     * @param replayEndpoint the engine's replay ROUTER endpoint, or null when it has none.
     */
    public ZmqEndpoint(final String endpoint, final String podId, final String model, final String replayEndpoint) {
        this(endpoint, podId, model, replayEndpoint, Engine.VLLM, ReplayFraming.ANY);
    }

    /**
     * A publisher of the given engine's format.
     *
     * @param endpoint       the engine's PUB endpoint.
     * @param podId          pod id, or null for the topic's.
     * @param model          model name, or null.
     * @param replayEndpoint replay endpoint, or null.
     * @param engine         the engine's event format.
     */
    public ZmqEndpoint(final String endpoint, final String podId, final String model, final String replayEndpoint,
        final Engine engine) {
        this(endpoint, podId, model, replayEndpoint, engine, ReplayFraming.ANY);
    }

    /**
     * A vLLM-format publisher with the given replay framing.
     *
     * @param endpoint       the engine's PUB endpoint.
     * @param podId          pod id, or null for the topic's.
     * @param model          model name, or null.
     * @param replayEndpoint replay endpoint, or null.
     * @param replayFraming  how the engine frames its replay replies.
     */
    public ZmqEndpoint(final String endpoint, final String podId, final String model, final String replayEndpoint,
        final ReplayFraming replayFraming) {
        this(endpoint, podId, model, replayEndpoint, Engine.VLLM, replayFraming);
    }

    /**
     * @param replay replay endpoint.
     * @return a copy with the replay endpoint set.
     */
    public ZmqEndpoint withReplay(final String replay) {
        return new ZmqEndpoint(endpoint, podId, model, replay, engine, replayFraming);
    }

    /**
     * @param format the engine whose format the publisher sends.
     * @return a copy with the engine set.
     */
    public ZmqEndpoint withEngine(final Engine format) {
        return new ZmqEndpoint(endpoint, podId, model, replayEndpoint, format, replayFraming);
    }

    /**
     * @param framing how the engine frames its replay replies.
     * @return a copy with the replay framing set.
     */
    public ZmqEndpoint withReplayFraming(final ReplayFraming framing) {
        return new ZmqEndpoint(endpoint, podId, model, replayEndpoint, engine, framing);
    }
}
