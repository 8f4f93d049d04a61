package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.ingest.vllm.VllmPayloads;

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

    private JavaVllmPublisherAccess(final JavaVllmPublisher publisher) {
        this.publisher = publisher;
    }

    /**
     * @param topic topic frame.
     * @param host  the loopback address both sockets bind on (a "pod IP": 127.0.0.2, 127.0.0.3, ...).
     * @return a publisher with the 0.26+ replay framing, reached at that address.
     */
    public static JavaVllmPublisherAccess at(final String topic, final String host) {
        return new JavaVllmPublisherAccess(new JavaVllmPublisher(topic, true, host));
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

    /**
     * @param topic topic frame.
     * @return a publisher with the 0.26+ replay framing.
     */
    public static JavaVllmPublisherAccess create(final String topic) {
        return new JavaVllmPublisherAccess(topic, true);
    }

    /**
     * Publishes one BlockStored of {@code blocks} new random blocks (random hashes and tokens, no parent) without
     * keeping it for replay, so that an endless stream costs the publisher nothing.
     *
     * @param random source of hashes and tokens.
     * @param blocks blocks in the batch.
     */
    public void publishNewBlocks(final java.util.SplittableRandom random, final int blocks) {
        final long[] hashes = new long[blocks];
        final int[] tokens = new int[blocks * 16];
        for (int i = 0; i < blocks; i++) {
            hashes[i] = random.nextLong();
        }
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = random.nextInt(150_000);
        }
        final byte[] payload = new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(hashes, null, tokens, 16, null, null).batch(0);
        publisher.sendWithSeq(unbuffered++, payload);
    }

    private long unbuffered;

    @Override
    public void close() {
        try {
            publisher.close();
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
