package io.kvidx.daemon.ingest.zmq;

/**
 * Public access to the test publisher for tests in other packages.
 */
public final class JavaVllmPublisherAccess implements AutoCloseable {
    private final JavaVllmPublisher publisher;

    /**
     * @param topic      topic frame.
     * @param newFraming replay framing of vLLM 0.26+.
     */
    public JavaVllmPublisherAccess(final String topic, final boolean newFraming) {
        publisher = new JavaVllmPublisher(topic, newFraming);
    }

    /**
     * @return PUB endpoint.
     */
    public String endpoint() {
        return publisher.endpoint();
    }

    /**
     * @return replay endpoint.
     */
    public String replayEndpoint() {
        return publisher.replayEndpoint();
    }

    /**
     * @param payload batch.
     * @return its sequence number.
     */
    public long publish(final byte[] payload) {
        return publisher.publish(payload);
    }

    @Override
    public void close() {
        try {
            publisher.close();
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
