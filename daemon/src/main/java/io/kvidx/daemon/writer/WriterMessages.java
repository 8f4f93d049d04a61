package io.kvidx.daemon.writer;

/**
 * Message types on a writer agent's queue (an Agrona many-to-one ring buffer). Every message starts with the
 * pod's handle ({@link PodDirectory}: number and generation; int, little-endian) followed by the type's payload.
 */
public final class WriterMessages {
    /** A vLLM msgpack batch; payload = the msgpack bytes. */
    public static final int VLLM_BATCH = 1;
    /**
     * Remove every block of the pod (publisher restart, replay gap policy, engine resync); no payload. Ends the
     * pod's suspicion: the transport clears a pod to rebuild it from a known point.
     */
    public static final int CLEAR_POD = 2;
    /** The pod is alive (its transport is connected); no payload. */
    public static final int HEARTBEAT = 3;
    /** Take the pod down now (explicit PodDown); no payload. */
    public static final int POD_DOWN = 4;
    /** Register the pod (from config or an explicit register); no payload. */
    public static final int REGISTER = 5;
    /**
     * The pod's state may be incomplete (a gap that replay could not fill); no payload. Sets the pod table's suspect
     * flag (layout 3.2) until a {@link #CLEAR_POD} or the pod going down.
     */
    public static final int MARK_SUSPECT = 6;
    /** An SBE event (kvidx schema); payload = the SBE message with its header. */
    public static final int SBE_EVENT = 7;
    /** An SGLang msgpack batch (decoded by the SGLang decoder); payload = the msgpack bytes. */
    public static final int SGLANG_BATCH = 8;

    /** Length of the pod handle prefix. */
    public static final int POD_NUMBER_LENGTH = 4;

    private WriterMessages() {
    }
}
