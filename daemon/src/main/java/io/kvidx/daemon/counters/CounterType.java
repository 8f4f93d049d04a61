package io.kvidx.daemon.counters;

/**
 * Every counter the daemon registers, with its type id (unique across kvidx, in Aeron's user range above 1000 so
 * that AeronStat shows them next to the driver's own) and label. A test fails on duplicate ids.
 */
public enum CounterType {
    /** vLLM batches and SBE messages received by the transports. */
    MESSAGES_RECEIVED(5001, "kvidx messages received"),
    /** Events applied to the index (stored, removed, cleared). */
    EVENTS_APPLIED(5002, "kvidx events applied"),
    /** Blocks newly stored for a pod. */
    BLOCKS_STORED(5003, "kvidx blocks stored"),
    /** Blocks removed from a pod. */
    BLOCKS_REMOVED(5004, "kvidx blocks removed"),
    /** Stores of blocks the pod already held (idempotent no-ops). */
    DUPLICATE_BLOCKS(5005, "kvidx duplicate blocks"),
    /** AllBlocksCleared events and resets that cleared a pod. */
    POD_CLEARS(5006, "kvidx pod clears"),
    /** Sequence gaps seen on a publisher. */
    SEQUENCE_GAPS(5007, "kvidx sequence gaps"),
    /** Replays requested from engines. */
    REPLAYS(5008, "kvidx replays"),
    /** Replays that failed or could not fill the gap (replay unavailable): the pod is marked suspect. */
    REPLAY_FAILURES(5009, "kvidx replay failures"),
    /** Publisher restarts detected (sequence went back). */
    SEQUENCE_RESETS(5010, "kvidx sequence resets"),
    /** Messages already applied (replay overlap). */
    DUPLICATE_MESSAGES(5011, "kvidx duplicate messages"),
    /** Events of an unknown type. */
    UNKNOWN_EVENT_TYPES(5012, "kvidx unknown event types"),
    /** Payloads that could not be decoded (malformed msgpack or SBE, wrong schema). */
    DECODE_ERRORS(5013, "kvidx decode errors"),
    /** Messages with the wrong frame count or a bad topic/sequence frame. */
    FRAMING_ERRORS(5014, "kvidx framing errors"),
    /** Well-framed events dropped for a field problem (e.g. hash width). */
    EVENTS_DROPPED(5015, "kvidx events dropped"),
    /** BlockStored events whose parent hash is unknown (dropped). */
    UNKNOWN_PARENTS(5016, "kvidx unknown parents"),
    /** BlockStored events whose block size differs from the index's (dropped). */
    BLOCK_SIZE_MISMATCHES(5017, "kvidx block size mismatches"),
    /** BlockStored events whose token count is not hashes x block size (dropped). */
    TOKEN_COUNT_MISMATCHES(5018, "kvidx token count mismatches"),
    /** BlockRemoved hashes that the pod did not hold (no-ops). */
    UNKNOWN_REMOVALS(5019, "kvidx unknown removals"),
    /** Pods alive in the index. */
    PODS_ALIVE(5020, "kvidx pods alive"),
    /** Pods taken down after their heartbeat timeout. */
    PODS_TIMED_OUT(5021, "kvidx pods timed out"),
    /** Pods that could not be registered (index full) or were rejected. */
    PODS_REJECTED(5022, "kvidx pods rejected"),
    /** Index entries evicted because a shard was full (mirrors the index header). */
    EVICTIONS(5023, "kvidx evictions"),
    /** Messages dropped because they exceed the writer queue's largest message. */
    OVERSIZED_MESSAGES(5024, "kvidx oversized messages"),
    /**
     * Pods suspect now (their state may be incomplete: a gap their engine could not replay), as flagged in the pod
     * table; a pod leaves it when it is cleared and resynced or goes down.
     */
    SUSPECT_PODS(5025, "kvidx suspect pods"),
    /** Mappings a full pod block map evicted (their blocks left the index for that pod). */
    BLOCK_MAP_EVICTIONS(5026, "kvidx block map evictions"),
    /** Exceptions that escaped an agent's duty cycle (logged in the error log). */
    AGENT_ERRORS(5027, "kvidx agent errors"),
    /** Replays after a restart or gap that no longer covered the missing batches, with the policy applied. */
    REPLAY_GAP_CLEARS(5028, "kvidx replay gap clears"),
    /** Writer restarts that re-attached to the existing index (warm restarts). */
    WARM_RESTARTS(5029, "kvidx warm restarts"),
    /**
     * Engines found restarted behind the daemon's back (while it was down or disconnected) by the replay check: the
     * engine no longer holds the batch the daemon applied last under that sequence, or holds another one. Their pods
     * are cleared and resynced from the engine's replay buffer.
     */
    ENGINE_RESYNCS(5050, "kvidx engine resyncs"),
    /**
     * Live batches of a publisher whose replay was in flight that did not fit its bounded hold buffer: dropped and
     * fetched by a follow-up replay.
     */
    REPLAY_HOLD_OVERFLOWS(5051, "kvidx replay hold overflows");

    private final int typeId;
    private final String label;

    CounterType(final int typeId, final String label) {
        this.typeId = typeId;
        this.label = label;
    }

    /**
     * @return the counter's type id.
     */
    public int typeId() {
        return typeId;
    }

    /**
     * @return the counter's label.
     */
    public String label() {
        return label;
    }
}
