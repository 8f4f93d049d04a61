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
    /** BlockStored / BlockRemoved of a hybrid model's KV cache group the index does not follow (not applied). */
    OTHER_GROUP_EVENTS(5070, "kvidx other group events"),
    /**
     * Batches whose data-parallel rank was absurd (negative, above 1024, or not an integer): applied to the plain
     * pod, as rank 0.
     */
    DP_RANKS_INVALID(5040, "kvidx invalid data-parallel ranks"),
    /** Batches dropped because their rank's pod id ({@code <pod>#<r>}) was too long or the pods were too many. */
    DP_RANK_PODS_REJECTED(5041, "kvidx data-parallel rank pods rejected"),
    /** Host tier map entries evicted because a pod's region was full (their blocks then count as GPU). */
    TIER_MAP_EVICTIONS(5060, "kvidx tier map evictions"),
    /** Tokenless BlockStored events (empty token_ids, block_size 0: CPU offload before vllm#43468) applied. */
    TOKENLESS_STORES(5061, "kvidx tokenless stores"),
    /** Blocks of tokenless BlockStored events whose engine hash the pod's map does not know (not applied). */
    TOKENLESS_UNKNOWN_BLOCKS(5062, "kvidx tokenless unknown blocks"),
    /** Events whose medium was an unknown string or not a string (kept, on the "other" medium). */
    UNKNOWN_MEDIA(5063, "kvidx unknown media"),
    /** Events whose locality was not a string or an unknown one (kept, locality unspecified). */
    BAD_LOCALITIES(5064, "kvidx bad localities"),
    /** BlockStored events dropped for a bad {@code extra_keys} value (wrong shape, count, type, position, size). */
    BAD_EXTRA_KEYS(5030, "kvidx bad extra keys"),
    /** Agent threads that could not pin themselves to their configured CPU (logged with the errno; they run on). */
    PIN_FAILURES(5080, "kvidx pin failures"),
    /**
     * Writer messages whose pod handle was no longer current when the writer read them: the pod's number was freed
     * (the pod went down) after the message was queued. Dropped, never applied to the pod that holds the number now.
     */
    STALE_POD_MESSAGES(5090, "kvidx stale pod messages"),
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
    REPLAY_HOLD_OVERFLOWS(5051, "kvidx replay hold overflows"),
    /**
     * Messages dropped because their pod id is not in the transport's allow-list ({@code aeron.pods} for Aeron,
     * {@code zmqTopicPods} for pods named by a ZeroMQ topic); the pod is never registered.
     */
    PODS_NOT_ALLOWED(5100, "kvidx pods not allowed"),
    /**
     * Messages dropped because the pod id they name (a ZeroMQ topic's, an Aeron message's) is not a valid pod id
     * ({@link io.kvidx.client.index.PodIds}: its character set, its length bound, a {@code #} only before a rank);
     * the pod is never registered and the id is used nowhere.
     */
    INVALID_POD_IDS(5101, "kvidx invalid pod ids"),
    /** Messages a JetStream relay published and the stream acknowledged (stored, or a duplicate of a stored one). */
    JETSTREAM_PUBLISHED(5110, "kvidx jetstream published"),
    /** Acknowledgements saying the stream already held the message (another relay published it first). */
    JETSTREAM_PUBLISH_DUPLICATES(5111, "kvidx jetstream publish duplicates"),
    /** Publishes a relay sent again (no acknowledgement in time, an error, the connection down). */
    JETSTREAM_PUBLISH_RETRIES(5112, "kvidx jetstream publish retries"),
    /** Stream messages a consumer applied (handed to its writers). */
    JETSTREAM_APPLIED(5113, "kvidx jetstream applied"),
    /**
     * Stream messages a consumer skipped as already applied: a redelivery, or a batch at or below its pod's
     * sequence.
     */
    JETSTREAM_DUPLICATES(5114, "kvidx jetstream duplicates"),
    /**
     * Stream messages a consumer never saw because the stream no longer held them (aged out, deleted, purged, or a
     * snapshot older than the stream's first sequence): the index may miss their events; /health is not ready.
     */
    JETSTREAM_LOST(5115, "kvidx jetstream lost events"),
    /** Stream messages a consumer could not read (bad envelope, another major version, an unknown type): dropped. */
    JETSTREAM_BAD_MESSAGES(5116, "kvidx jetstream bad messages"),
    /** Messages the stream still holds after the last one the consumer received (its lag; a gauge). */
    JETSTREAM_LAG(5117, "kvidx jetstream lag"),
    /** Snapshots this daemon stored in the object store. */
    JETSTREAM_SNAPSHOTS_STORED(5118, "kvidx jetstream snapshots stored"),
    /** Snapshots that could not be taken, stored or loaded (corrupt, too old, the store unreachable). */
    JETSTREAM_SNAPSHOT_FAILURES(5119, "kvidx jetstream snapshot failures"),
    /** Errors talking to NATS (connection lost, consumer errors, stream missing); each is in the error log. */
    JETSTREAM_ERRORS(5120, "kvidx jetstream errors"),
    /** Length in bytes of the newest snapshot in the bucket, as a consumer last saw it (a gauge). */
    JETSTREAM_SNAPSHOT_BYTES(5121, "kvidx jetstream snapshot bytes"),
    /** When the newest snapshot in the bucket was stored, epoch seconds, as a consumer last saw it (a gauge; age). */
    JETSTREAM_SNAPSHOT_TIMESTAMP_SECONDS(5122, "kvidx jetstream snapshot timestamp seconds"),
    /** Pods whose lease a relay holds: it publishes their events (a gauge; ADR 0024, "Relay lease"). */
    JETSTREAM_LEASES_HELD(5123, "kvidx jetstream leases held"),
    /** Leases a relay took: a pod's first, or one another relay let expire (a takeover). */
    JETSTREAM_LEASE_TAKEOVERS(5124, "kvidx jetstream lease takeovers"),
    /** Leases a relay lost: not renewed within half the TTL, or taken by another relay; each is in the error log. */
    JETSTREAM_LEASES_LOST(5125, "kvidx jetstream leases lost"),
    /** Messages a relay holds for pods whose lease another relay holds, not yet seen in the stream (a gauge). */
    JETSTREAM_STANDBY_MESSAGES(5126, "kvidx jetstream standby messages");

    private final int typeId;
    private final String label;

    CounterType(final int typeId, final String label) {
        this.typeId = typeId;
        this.label = label;
    }

    private static final java.util.Set<Integer> TYPE_IDS = java.util.Arrays.stream(values())
        .map(CounterType::typeId).collect(java.util.stream.Collectors.toUnmodifiableSet());

    /**
     * @param typeId a counter type id found in a counters buffer.
     * @return true when it is one of the daemon's counter types (not, e.g., one of Aeron's).
     */
    public static boolean isKvidx(final int typeId) {
        return TYPE_IDS.contains(typeId);
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
