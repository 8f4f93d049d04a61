package io.kvidx.epp;

/**
 * The picker's bounds on each ext_proc stream, in one place with their defaults (as {@code ServeContext} holds an
 * HTTP server's): the largest request body, the time from a stream's first message to its decision, the streams open
 * at once, the gRPC message size, and the body mode assumed when Envoy does not say (an Envoy before 1.33 sends no
 * {@code protocol_config}).
 *
 * @param maxBodyBytes     largest request body accumulated (413 beyond).
 * @param streamDeadlineMs time from a stream's first message to its answer (408 while the body is still coming, 503
 *                         while the decision is pending).
 * @param maxStreams       streams open at once (503 to a new one beyond).
 * @param defaultBodyMode  the request body mode when the first message has no {@code protocol_config}.
 */
public record EppLimits(int maxBodyBytes, int streamDeadlineMs, int maxStreams, BodyMode defaultBodyMode) {
    /** Default body limit (the router's). */
    public static final int MAX_BODY_BYTES_DEFAULT = 8 << 20;
    /** Default per-stream deadline. */
    public static final int STREAM_DEADLINE_MS_DEFAULT = 10_000;
    /** Default streams open at once. */
    public static final int MAX_STREAMS_DEFAULT = 4096;
    /** Largest gRPC message on top of the body (headers, metadata). */
    public static final int MESSAGE_OVERHEAD_BYTES = 64 << 10;
    /** Largest chunk of a body sent back in FULL_DUPLEX_STREAMED mode (the reference EPP's size). */
    public static final int STREAMED_CHUNK_BYTES = 62_000;

    /** The request body modes the picker tells apart. */
    public enum BodyMode {
        /** Envoy waits for the headers' answer, then sends the whole body once (also BUFFERED_PARTIAL). */
        BUFFERED,
        /** Envoy sends chunks, one answer per chunk; the headers' answer is held until the body ended. */
        STREAMED,
        /** Envoy sends everything without waiting; the picker answers the headers then sends the body back. */
        FULL_DUPLEX_STREAMED
    }

    /** The defaults. */
    public static final EppLimits DEFAULTS = new EppLimits(MAX_BODY_BYTES_DEFAULT, STREAM_DEADLINE_MS_DEFAULT,
        MAX_STREAMS_DEFAULT, BodyMode.FULL_DUPLEX_STREAMED);

    /**
     * Checks every bound.
     */
    public EppLimits {
        if (maxBodyBytes < 1024 || maxBodyBytes > (256 << 20)) {
            throw new IllegalArgumentException("max-body-bytes must be 1 KiB..256 MiB: " + maxBodyBytes);
        }
        if (streamDeadlineMs < 1) {
            throw new IllegalArgumentException("stream-deadline-ms must be > 0: " + streamDeadlineMs);
        }
        if (maxStreams < 1) {
            throw new IllegalArgumentException("max-streams must be > 0: " + maxStreams);
        }
        if (defaultBodyMode == null) {
            throw new IllegalArgumentException("body-mode must be buffered, streamed or full-duplex-streamed");
        }
    }

    /**
     * @param name {@code buffered}, {@code streamed} or {@code full-duplex-streamed}.
     * @return the mode.
     */
    public static BodyMode bodyMode(final String name) {
        return switch (name) {
            case "buffered" -> BodyMode.BUFFERED;
            case "streamed" -> BodyMode.STREAMED;
            case "full-duplex-streamed" -> BodyMode.FULL_DUPLEX_STREAMED;
            default -> throw new IllegalArgumentException("body-mode must be buffered, streamed or"
                + " full-duplex-streamed: '" + name + "'");
        };
    }
}
