package io.kvidx.daemon.writer;

/**
 * Message types on a writer agent's queue (an Agrona many-to-one ring buffer). Every message starts with a
 * {@value #HEADER_LENGTH}-byte header, then the type's payload:
 * <pre>
 *   0 +-------------------------------+-------------------------------+
 *     | pod handle i32 ({@link PodDirectory}: number and generation) | reserved i32 |
 *   8 | received: System.nanoTime() when the transport thread got the message (i64)      |
 *  16 | queued: System.nanoTime() when the message was committed to the queue (i64)      |
 *  24 +---------------------------------------------------------------+
 *     | payload                                                       |
 * </pre>
 * All little-endian. The two times are the first two stages of a batch's event-to-visible time (transport receive
 * to queue, queue wait), observed by the writer beside its decode and apply ({@link ApplyObserver}).
 */
public final class WriterMessages {
    /**
     * A live vLLM msgpack batch (received live, or held while a replay was in flight and released after it);
     * payload = the msgpack bytes. Its timestamp is observed as event-to-visible time.
     */
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
    /**
     * An SBE event (kvidx schema); payload = the SBE message with its header. The schema carries no timestamp: no
     * event-to-visible time is observed.
     */
    public static final int SBE_EVENT = 7;
    /** A live SGLang msgpack batch (decoded by the SGLang decoder), as {@link #VLLM_BATCH}; payload = msgpack. */
    public static final int SGLANG_BATCH = 8;
    /**
     * A vLLM batch brought by a replay (catch-up, gap, recovery after a daemon restart, resync): applied exactly as
     * {@link #VLLM_BATCH}, but its timestamp is not observed as event-to-visible time (it is as old as the gap or the
     * daemon's downtime, not the index's lag).
     */
    public static final int VLLM_BATCH_REPLAYED = 9;
    /** An SGLang batch brought by a replay: applied as {@link #SGLANG_BATCH}, not observed as event-to-visible. */
    public static final int SGLANG_BATCH_REPLAYED = 10;

    /** Offset of the pod handle in a message. */
    public static final int POD_OFFSET = 0;
    /** Offset of the transport's receive time in a message. */
    public static final int RECEIVED_NANOS_OFFSET = 8;
    /** Offset of the queue commit time in a message. */
    public static final int QUEUED_NANOS_OFFSET = 16;
    /** Length of the header before a message's payload. */
    public static final int HEADER_LENGTH = 24;

    /**
     * @param type a message type.
     * @return true for the types that carry engine events (batches of either engine, live or replayed; SBE events).
     */
    public static boolean carriesEvents(final int type) {
        return type == VLLM_BATCH || type == SGLANG_BATCH || type == SBE_EVENT || type == VLLM_BATCH_REPLAYED
            || type == SGLANG_BATCH_REPLAYED;
    }

    /**
     * @param sglang   true for an SGLang batch, false for vLLM.
     * @param replayed true when the batch was brought by a replay.
     * @return the batch's message type.
     */
    public static int batchType(final boolean sglang, final boolean replayed) {
        if (sglang) {
            return replayed ? SGLANG_BATCH_REPLAYED : SGLANG_BATCH;
        }
        return replayed ? VLLM_BATCH_REPLAYED : VLLM_BATCH;
    }

    private WriterMessages() {
    }
}
