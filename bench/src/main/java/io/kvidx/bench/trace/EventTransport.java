package io.kvidx.bench.trace;

import java.util.List;

/**
 * How the replay's events reach the daemon: JeroMQ PUB sockets with vLLM batches ({@link ZmqTransport}, the
 * default), or kvidx SBE messages on an Aeron publication ({@link AeronTransport}). One per replay point
 * ({@link TransportChoice#open}), used by the replay's one sending thread.
 */
interface EventTransport extends AutoCloseable {
    /** @return the {@code kvidx daemon} options that make it receive from this transport. */
    List<String> daemonArgs();

    /**
     * Completes the connection once the daemon runs.
     *
     * @param deadlineNs {@link System#nanoTime()} by which it must be up.
     * @throws IllegalStateException when it is not up by then.
     */
    void connect(long deadlineNs);

    /**
     * @param pods pods of the replay.
     * @return pods whose warm-up markers, once visible, show the daemon receives every pod's events (one per ZeroMQ
     * socket; one for the single Aeron publication).
     */
    int[] warmUpPods(int pods);

    /**
     * Sends one request's bytes (from {@link #encoder()}) for a pod.
     *
     * @param pod     pod number.
     * @param payload the encoded batch.
     * @throws IllegalStateException when the daemon cannot take it within the transport's bound.
     */
    void send(int pod, byte[] payload);

    @Override
    void close();
}
