package io.kvidx.daemon.config;

import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;

import java.util.ArrayList;
import java.util.List;

/**
 * The daemon's ZeroMQ transport: the engine publishers the ZeroMQ ingest agent subscribes to (the {@code zmq} list
 * of the YAML file, each with its replay endpoint and event format) and how it recovers lost batches: the wait for
 * each replay reply, the policy when a replay no longer reaches back far enough, and how often each publisher's
 * applied sequence is checkpointed. No endpoint means the ZeroMQ ingest agent is not started. Defaults from
 * {@link DaemonConfiguration}.
 *
 * <p><b>Note:</b> part of a {@link DaemonContext}: not thread safe; filled in on one thread, read after
 * {@link #conclude()}.
 */
public final class ZmqSettings {
    private final List<ZmqEndpoint> endpoints = new ArrayList<>();
    private int replayTimeoutMs = DaemonConfiguration.REPLAY_TIMEOUT_MS_DEFAULT;
    private int handshakeTimeoutMs = DaemonConfiguration.ZMQ_HANDSHAKE_TIMEOUT_MS_DEFAULT;
    private int ioThreads = DaemonConfiguration.ZMQ_IO_THREADS_DEFAULT;
    private int ingestThreads = DaemonConfiguration.ZMQ_INGEST_THREADS_DEFAULT;
    private String replayGapPolicy = DaemonConfiguration.REPLAY_GAP_POLICY_DEFAULT;
    private long checkpointIntervalMs = DaemonConfiguration.CHECKPOINT_INTERVAL_MS_DEFAULT;
    private final List<String> topicPods = new ArrayList<>(DaemonConfiguration.ZMQ_TOPIC_PODS_DEFAULT);
    private String bind = DaemonConfiguration.ZMQ_BIND_DEFAULT;

    /**
     * Checks the bound socket's endpoint, the replay timeout, the handshake timeout, the replay gap policy, the
     * checkpoint interval, the I/O threads, the ingest threads and the topic pod patterns, in that order.
     *
     * @throws ConfigException naming the key of the first value out of range.
     */
    void conclude() {
        if (bind != null && !bind.startsWith("tcp://") && !bind.startsWith("ipc://")) {
            throw new ConfigException(DaemonConfiguration.ZMQ_BIND_PROP_NAME,
                "must be a ZeroMQ endpoint such as tcp://127.0.0.1:5557: " + bind);
        }
        ConfigException.range(DaemonConfiguration.REPLAY_TIMEOUT_MS_PROP_NAME, replayTimeoutMs, 1, Integer.MAX_VALUE);
        // 0 would be ZeroMQ's "no timeout": a stalled handshake would never be retried.
        ConfigException.range(DaemonConfiguration.ZMQ_HANDSHAKE_TIMEOUT_MS_PROP_NAME, handshakeTimeoutMs, 1,
            Integer.MAX_VALUE);
        if (!DaemonConfiguration.REPLAY_GAP_POLICIES.contains(replayGapPolicy)) {
            throw new ConfigException(DaemonConfiguration.REPLAY_GAP_POLICY_PROP_NAME, "must be one of "
                + String.join(" or ", DaemonConfiguration.REPLAY_GAP_POLICIES) + ": " + replayGapPolicy);
        }
        ConfigException.range(DaemonConfiguration.CHECKPOINT_INTERVAL_MS_PROP_NAME, checkpointIntervalMs, 1,
            Long.MAX_VALUE);
        ConfigException.range(DaemonConfiguration.ZMQ_IO_THREADS_PROP_NAME, ioThreads, 1,
            DaemonConfiguration.ZMQ_IO_THREADS_MAX);
        ConfigException.range(DaemonConfiguration.ZMQ_INGEST_THREADS_PROP_NAME, ingestThreads, 1,
            DaemonConfiguration.ZMQ_INGEST_THREADS_MAX);
        for (final String pattern : topicPods) {
            if (pattern == null || pattern.isEmpty()) {
                throw new ConfigException(DaemonConfiguration.ZMQ_TOPIC_PODS_PROP_NAME,
                    "must be pod ids or globs (* and ?), none empty: " + topicPods);
            }
        }
    }

    /**
     * @param endpoint a vLLM or SGLang publisher to subscribe to.
     * @return this.
     */
    public ZmqSettings addEndpoint(final ZmqEndpoint endpoint) {
        endpoints.add(endpoint);
        return this;
    }

    /**
     * Sets the replay endpoint of the ZeroMQ endpoint(s) of a pod.
     *
     * @param podId  pod id.
     * @param replay replay endpoint.
     * @return this.
     * @throws IllegalArgumentException when no endpoint is the pod's.
     */
    public ZmqSettings replay(final String podId, final String replay) {
        boolean found = false;
        for (int i = 0; i < endpoints.size(); i++) {
            if (podId.equals(endpoints.get(i).podId())) {
                endpoints.set(i, endpoints.get(i).withReplay(replay));
                found = true;
            }
        }
        if (!found) {
            throw new IllegalArgumentException("--replay " + podId + "=...: no --zmq endpoint for pod " + podId);
        }
        return this;
    }

    /**
     * Sets the event format (engine) of the ZeroMQ endpoint(s) of a pod, or of one endpoint given by its address (for
     * an endpoint whose pods come from the topic).
     *
     * @param podOrEndpoint pod id, or the endpoint's address.
     * @param engine        {@code vllm} or {@code sglang}.
     * @return this.
     * @throws IllegalArgumentException for another engine, or when no endpoint is the pod's or at the address.
     */
    public ZmqSettings engine(final String podOrEndpoint, final String engine) {
        final ZmqEndpoint.Engine format = ZmqEndpoint.Engine.parse(engine);
        boolean found = false;
        for (int i = 0; i < endpoints.size(); i++) {
            final ZmqEndpoint e = endpoints.get(i);
            if (podOrEndpoint.equals(e.podId()) || podOrEndpoint.equals(e.endpoint())) {
                endpoints.set(i, e.withEngine(format));
                found = true;
            }
        }
        if (!found) {
            throw new IllegalArgumentException("--engine " + podOrEndpoint + "=...: no --zmq endpoint for pod or at "
                + "address " + podOrEndpoint);
        }
        return this;
    }

    /**
     * @return the ZeroMQ endpoints.
     */
    public List<ZmqEndpoint> endpoints() {
        return endpoints;
    }

    /**
     * @param ms wait for each replay reply.
     * @return this.
     */
    public ZmqSettings replayTimeoutMs(final int ms) {
        this.replayTimeoutMs = ms;
        return this;
    }

    /**
     * @return replay timeout.
     */
    public int replayTimeoutMs() {
        return replayTimeoutMs;
    }

    /**
     * @param ms how long a new ZeroMQ connection (subscription or replay) may take to finish its handshake before
     *           it is dropped and made again; at least 1.
     * @return this.
     */
    public ZmqSettings handshakeTimeoutMs(final int ms) {
        this.handshakeTimeoutMs = ms;
        return this;
    }

    /**
     * @return ZeroMQ handshake timeout.
     */
    public int handshakeTimeoutMs() {
        return handshakeTimeoutMs;
    }

    /**
     * @param threads I/O threads of the subscription sockets' ZeroMQ context, 1..64.
     * @return this.
     */
    public ZmqSettings ioThreads(final int threads) {
        this.ioThreads = threads;
        return this;
    }

    /**
     * @return I/O threads of the subscription sockets' ZeroMQ context.
     */
    public int ioThreads() {
        return ioThreads;
    }

    /**
     * @param threads ZeroMQ ingest agents (threads) sharing the subscriptions by endpoint, 1..16.
     * @return this.
     */
    public ZmqSettings ingestThreads(final int threads) {
        this.ingestThreads = threads;
        return this;
    }

    /**
     * @return ZeroMQ ingest agents (threads).
     */
    public int ingestThreads() {
        return ingestThreads;
    }

    /**
     * @param policy what to do when an engine's replay no longer reaches back to the first missing batch:
     *               {@code clear} (default) clears the pod and rebuilds it from what the engine still buffers (no
     *               block the engine dropped stays indexed); {@code keep} keeps its blocks and marks it suspect.
     * @return this.
     */
    public ZmqSettings replayGapPolicy(final String policy) {
        this.replayGapPolicy = policy;
        return this;
    }

    /**
     * @return the replay gap policy, clear or keep.
     */
    public String replayGapPolicy() {
        return replayGapPolicy;
    }

    /**
     * @param ms how often each publisher's applied sequence is recorded in the state directory.
     * @return this.
     */
    public ZmqSettings checkpointIntervalMs(final long ms) {
        this.checkpointIntervalMs = ms;
        return this;
    }

    /**
     * @return checkpoint interval.
     */
    public long checkpointIntervalMs() {
        return checkpointIntervalMs;
    }

    /**
     * @param pattern a pod id or glob ({@code *} any run of characters, {@code ?} one) accepted from a topic
     *                {@code kv@<pod>@<model>} (the bound SUB socket's, and those of endpoints without a configured
     *                pod); once any is added, messages naming other pods are dropped and counted. Endpoints with a
     *                configured pod are not affected.
     * @return this.
     */
    public ZmqSettings addTopicPod(final String pattern) {
        topicPods.add(pattern);
        return this;
    }

    /**
     * @return the topic pod allow-list; empty accepts every pod.
     */
    public List<String> topicPods() {
        return topicPods;
    }

    /**
     * @param endpoint a ZeroMQ endpoint to bind one SUB socket to, which engines connect to (llm-d's centralized
     *                 mode; pods named by the topic), or null for none.
     * @return this.
     */
    public ZmqSettings bind(final String endpoint) {
        this.bind = endpoint;
        return this;
    }

    /**
     * @return the bound SUB socket's endpoint, or null for none.
     */
    public String bind() {
        return bind;
    }
}
