package io.kvidx.daemon.ingest.zmq;

/**
 * How an engine frames the replies of its replay socket, as a DEALER receives them (the ROUTER's identity frame
 * stripped). Each reply, and the end marker (sequence {@code ff x 8}, empty payload), has one of two layouts:
 * <ul>
 *   <li>{@code ["", seq, payload]}: vLLM before 0.26, SGLang (whose replies carry no topic frame);</li>
 *   <li>{@code ["", topic, seq, payload]}: vLLM 0.26 and later (end marker {@code ["", "", ff x 8, ""]}).</li>
 * </ul>
 * An endpoint's framing is chosen with its engine (see {@link ZmqEndpoint#replayFraming()}); {@link #ANY} tells the
 * two apart by the frame count.
 */
public enum ReplayFraming {
    /** Either layout, told apart by the frame count (a vLLM engine of unknown version). */
    ANY,
    /** {@code ["", seq, payload]} only: vLLM before 0.26, SGLang. */
    SEQ_PAYLOAD,
    /** {@code ["", topic, seq, payload]} only: vLLM 0.26 and later. */
    TOPIC_SEQ_PAYLOAD;

    /**
     * @param frames a reply's frame count.
     * @return the index of its sequence frame, or -1 when this framing does not have that many frames.
     */
    int sequenceFrame(final int frames) {
        return switch (this) {
            case ANY -> frames == 3 ? 1 : frames == 4 ? 2 : -1;
            case SEQ_PAYLOAD -> frames == 3 ? 1 : -1;
            case TOPIC_SEQ_PAYLOAD -> frames == 4 ? 2 : -1;
        };
    }

    /**
     * @return the layouts this framing accepts, for error messages.
     */
    String describe() {
        return switch (this) {
            case ANY -> "[\"\", seq, payload] or [\"\", topic, seq, payload]";
            case SEQ_PAYLOAD -> "[\"\", seq, payload]";
            case TOPIC_SEQ_PAYLOAD -> "[\"\", topic, seq, payload]";
        };
    }
}
