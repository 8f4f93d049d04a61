package io.kvidx.daemon.ingest.zmq;

/**
 * One vLLM event publisher to subscribe to.
 *
 * @param endpoint       the engine's PUB endpoint, e.g. {@code tcp://10.0.0.7:5557}.
 * @param podId          pod id of every message, or null to take it from the topic {@code kv@<pod>@<model>}.
 * @param model          model name, or null to take it from the topic (or leave it unknown).
 * @param replayEndpoint the engine's replay ROUTER endpoint, or null when it has none.
 * @param replayFraming  how the engine frames its replay replies (by engine: SGLang's carry no topic frame).
 */
public record ZmqEndpoint(String endpoint, String podId, String model, String replayEndpoint,
    ReplayFraming replayFraming) {
    /**
     * @param endpoint the endpoint.
     */
    public ZmqEndpoint {
        if (endpoint == null || endpoint.isBlank()) {
            throw new IllegalArgumentException("ZeroMQ endpoint must not be empty");
        }
        if (replayFraming == null) {
            replayFraming = ReplayFraming.ANY;
        }
    }

    /**
     * An endpoint whose replay replies may come in either vLLM framing.
     *
     * @param endpoint       the engine's PUB endpoint.
     * @param podId          pod id of every message, or null to take it from the topic.
     * @param model          model name, or null.
     * @param replayEndpoint the engine's replay ROUTER endpoint, or null when it has none.
     */
    public ZmqEndpoint(final String endpoint, final String podId, final String model, final String replayEndpoint) {
        this(endpoint, podId, model, replayEndpoint, ReplayFraming.ANY);
    }

    /**
     * @param replay replay endpoint.
     * @return a copy with the replay endpoint set.
     */
    public ZmqEndpoint withReplay(final String replay) {
        return new ZmqEndpoint(endpoint, podId, model, replay, replayFraming);
    }

    /**
     * @param framing how the engine frames its replay replies.
     * @return a copy with the replay framing set.
     */
    public ZmqEndpoint withReplayFraming(final ReplayFraming framing) {
        return new ZmqEndpoint(endpoint, podId, model, replayEndpoint, framing);
    }
}
