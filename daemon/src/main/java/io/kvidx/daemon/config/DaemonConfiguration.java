package io.kvidx.daemon.config;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.state.PodBlockMaps;

import java.util.List;

/**
 * Keys of the YAML config file ({@code *_PROP_NAME}) and the one definition of each default ({@code *_DEFAULT})
 * and limit; defaults of the index geometry are those of {@link IndexWriterContext.Configuration}, the block maps'
 * of {@link PodBlockMaps}. The command
 * line's option for each key: {@link DaemonSettings}.
 */
public final class DaemonConfiguration {
    /** Directory key. */
    public static final String DIR_PROP_NAME = "dir";
    /** Cell key. */
    public static final String CELL_PROP_NAME = "cell";
    /** Group key. */
    public static final String GROUP_PROP_NAME = "group";
    /** Default group: none, i.e. the daemon user's primary group. */
    public static final String GROUP_DEFAULT = null;
    /** Block size key. */
    public static final String BLOCK_SIZE_PROP_NAME = "blockSize";
    /** Default block size (vLLM's). */
    public static final int BLOCK_SIZE_DEFAULT = IndexWriterContext.Configuration.BLOCK_SIZE_DEFAULT;
    /** Largest block size. */
    public static final int BLOCK_SIZE_MAX = 1 << 16;
    /** Capacity key. */
    public static final String CAPACITY_BLOCKS_PROP_NAME = "capacityBlocks";
    /** Default capacity. */
    public static final long CAPACITY_BLOCKS_DEFAULT = IndexWriterContext.Configuration.CAPACITY_BLOCKS_DEFAULT;
    /** Shards key. */
    public static final String SHARD_COUNT_PROP_NAME = "shards";
    /** Default shards. */
    public static final int SHARD_COUNT_DEFAULT = IndexWriterContext.Configuration.SHARD_COUNT_DEFAULT;
    /** Max pods key. */
    public static final String MAX_PODS_PROP_NAME = "maxPods";
    /** Default max pods: all the index can address. */
    public static final int MAX_PODS_DEFAULT = IndexDescriptor.MAX_PODS;
    /** Longest chain key. */
    public static final String MAX_CHAIN_LENGTH_PROP_NAME = "maxChainLength";
    /** Default longest chain. */
    public static final int MAX_CHAIN_LENGTH_DEFAULT = IndexWriterContext.Configuration.MAX_CHAIN_LENGTH_DEFAULT;
    /** Writers key. */
    public static final String WRITERS_PROP_NAME = "writers";
    /** Default writers: one (the machine may have few cores). */
    public static final int WRITERS_DEFAULT = 1;
    /** Most writers. */
    public static final int WRITERS_MAX = 64;
    /** Writer queue key. */
    public static final String WRITER_QUEUE_LENGTH_PROP_NAME = "writerQueueLength";
    /** Default writer queue: 8 MiB (largest batch 1 MiB). */
    public static final int WRITER_QUEUE_LENGTH_DEFAULT = 8 << 20;
    /** Shortest writer queue. */
    public static final int WRITER_QUEUE_LENGTH_MIN = 1 << 12;
    /** Longest writer queue. */
    public static final int WRITER_QUEUE_LENGTH_MAX = 1 << 30;
    /** Pod timeout key. */
    public static final String POD_TIMEOUT_MS_PROP_NAME = "podTimeoutMs";
    /** Default pod timeout. */
    public static final long POD_TIMEOUT_MS_DEFAULT = 30_000;
    /** Heartbeat interval key. */
    public static final String HEARTBEAT_INTERVAL_MS_PROP_NAME = "heartbeatIntervalMs";
    /** Default heartbeat interval (the index's). */
    public static final long HEARTBEAT_INTERVAL_MS_DEFAULT = IndexConfiguration.HEARTBEAT_INTERVAL_MS_DEFAULT;
    /** Longest heartbeat interval: one minute. */
    public static final long HEARTBEAT_INTERVAL_MS_MAX = 60_000;
    /** Replay timeout key. */
    public static final String REPLAY_TIMEOUT_MS_PROP_NAME = "replayTimeoutMs";
    /** Default replay timeout. */
    public static final int REPLAY_TIMEOUT_MS_DEFAULT = 2_000;
    /** ZeroMQ handshake timeout key. */
    public static final String ZMQ_HANDSHAKE_TIMEOUT_MS_PROP_NAME = "zmqHandshakeTimeoutMs";
    /**
     * Default ZeroMQ handshake timeout (the subscription's and the replay socket's ZMQ_HANDSHAKE_IVL): a connection
     * whose ZMTP handshake has not completed by then is dropped and made again. JeroMQ 0.6.0 leaves about one new
     * connection in 25 with its handshake never completing (reproduced on loopback, against JeroMQ and libzmq
     * publishers alike), so ZeroMQ's own default of 30 s stalled a pod's events for 30 s; a handshake takes two
     * round trips, well under a second on any network an engine and its router share.
     */
    public static final int ZMQ_HANDSHAKE_TIMEOUT_MS_DEFAULT = 1_000;
    /** ZeroMQ I/O threads key. */
    public static final String ZMQ_IO_THREADS_PROP_NAME = "zmqIoThreads";
    /**
     * Default ZeroMQ I/O threads of the subscription sockets' context: one (JeroMQ's default), which reads and
     * frames every engine's stream; more spread the engines' connections over that many threads, for hosts whose
     * engines publish more than one thread can frame (docs/perf.md, "Write path").
     */
    public static final int ZMQ_IO_THREADS_DEFAULT = 1;
    /** ZeroMQ ingest threads key. */
    public static final String ZMQ_INGEST_THREADS_PROP_NAME = "zmqIngestThreads";
    /**
     * Default ZeroMQ ingest agents (threads): one, which sequences every engine's batches and hands them to the
     * writers; more split the engines (by endpoint) between that many threads, each with its own replay thread.
     */
    public static final int ZMQ_INGEST_THREADS_DEFAULT = 1;
    /** Most ZeroMQ ingest agents. */
    public static final int ZMQ_INGEST_THREADS_MAX = 16;
    /** Most ZeroMQ I/O threads. */
    public static final int ZMQ_IO_THREADS_MAX = 64;
    /** Idle strategy key: the ingest and writer agents' unless they name their own. */
    public static final String IDLE_STRATEGY_PROP_NAME = "idleStrategy";
    /** Default idle strategy: backoff (spin, yield, then park up to 1 ms). */
    public static final String IDLE_STRATEGY_DEFAULT = IdleStrategies.BACKOFF;
    /** ZeroMQ ingest agent's CPU key. */
    public static final String ZMQ_INGEST_CPU_PROP_NAME = "zmqIngestCpu";
    /** ZeroMQ ingest agent's idle strategy key. */
    public static final String ZMQ_INGEST_IDLE_PROP_NAME = "zmqIngestIdle";
    /** ZeroMQ replay agents' CPU key (one replay agent per ZeroMQ ingest agent). */
    public static final String ZMQ_REPLAY_CPU_PROP_NAME = "zmqReplayCpu";
    /** ZeroMQ replay agents' idle strategy key. */
    public static final String ZMQ_REPLAY_IDLE_PROP_NAME = "zmqReplayIdle";
    /**
     * Default idle strategy of the ZeroMQ replay agents: backoff, whatever {@code idleStrategy} says (a replay is
     * rare and not latency critical; a spinning replay thread would take a core for nothing).
     */
    public static final String ZMQ_REPLAY_IDLE_DEFAULT = IdleStrategies.BACKOFF;
    /** Aeron ingest agent's CPU key. */
    public static final String AERON_INGEST_CPU_PROP_NAME = "aeronIngestCpu";
    /** Aeron ingest agent's (and the embedded media driver's) idle strategy key. */
    public static final String AERON_INGEST_IDLE_PROP_NAME = "aeronIngestIdle";
    /** JeroMQ's I/O threads' CPUs key: a list, each I/O thread pinned to one of them in turn. */
    public static final String ZMQ_IO_CPUS_PROP_NAME = "zmqIoCpus";
    /** Writers' CPUs key: a list, one per writer. */
    public static final String WRITER_CPUS_PROP_NAME = "writerCpus";
    /** Writers' idle strategy key. */
    public static final String WRITER_IDLE_PROP_NAME = "writerIdle";
    /** Maintenance agent's CPU key. */
    public static final String MAINTENANCE_CPU_PROP_NAME = "maintenanceCpu";
    /** Maintenance agent's idle strategy key. */
    public static final String MAINTENANCE_IDLE_PROP_NAME = "maintenanceIdle";
    /** Default CPU of every agent: none (no pinning). */
    public static final int CPU_DEFAULT = AgentSettings.NO_CPU;
    /** Default idle strategy of the maintenance agent: sleep 1 ms (heartbeats and sweeps are not urgent). */
    public static final String MAINTENANCE_IDLE_DEFAULT = IdleStrategies.SLEEP_PREFIX + "1ms";
    /** Aeron stream id key (under {@code aeron}). */
    public static final String AERON_STREAM_ID_PROP_NAME = "aeron.streamId";
    /** Default Aeron stream id of kvidx events. */
    public static final int AERON_STREAM_ID_DEFAULT = 7001;
    /** Aeron channels key (under {@code aeron}). */
    public static final String AERON_CHANNELS_PROP_NAME = "aeron.channels";
    /** Aeron directory key (under {@code aeron}). */
    public static final String AERON_DIR_PROP_NAME = "aeron.dir";
    /** Embedded driver key (under {@code aeron}). */
    public static final String EMBEDDED_DRIVER_PROP_NAME = "aeron.embeddedDriver";
    /** Run an embedded media driver by default. */
    public static final boolean EMBEDDED_DRIVER_DEFAULT = true;
    /** Term length key (under {@code aeron}). */
    public static final String AERON_TERM_LENGTH_PROP_NAME = "aeron.termLength";
    /** Default term buffer length: 1 MiB (Aeron's 64 MiB IPC default is far too large here). */
    public static final int AERON_TERM_LENGTH_DEFAULT = 1 << 20;
    /**
     * Allow-remote key (under {@code aeron}): accept UDP channels whose endpoint is a wildcard (0.0.0.0, ::, *) or
     * not a loopback address. The pod id comes from the wire, so anyone who reaches such a channel writes the index.
     */
    public static final String AERON_ALLOW_REMOTE_PROP_NAME = "aeron.allowRemote";
    /** Default: Aeron UDP channels must bind loopback. */
    public static final boolean AERON_ALLOW_REMOTE_DEFAULT = false;
    /** Aeron pod allow-list key (under {@code aeron}): pod ids or globs ({@code *}, {@code ?}) accepted. */
    public static final String AERON_PODS_PROP_NAME = "aeron.pods";
    /** Default Aeron pod allow-list: empty, every pod accepted (set one when Aeron is reachable over a network). */
    public static final List<String> AERON_PODS_DEFAULT = List.of();
    /** Shortest term buffer (Aeron's minimum). */
    public static final int AERON_TERM_LENGTH_MIN = 64 * 1024;
    /** Longest term buffer (Aeron's maximum). */
    public static final int AERON_TERM_LENGTH_MAX = 1 << 30;
    /** Blocks per pod key. */
    public static final String POD_MAX_BLOCKS_PROP_NAME = "podMaxBlocks";
    /** Default most blocks per pod (the block maps', {@link PodBlockMaps#MAX_BLOCKS_DEFAULT}). */
    public static final int POD_MAX_BLOCKS_DEFAULT = PodBlockMaps.MAX_BLOCKS_DEFAULT;
    /** Most blocks per pod. */
    public static final int POD_MAX_BLOCKS_MAX = 1 << 28;
    /** Replay gap policy key. */
    public static final String REPLAY_GAP_POLICY_PROP_NAME = "replayGapPolicy";
    /** Default replay gap policy: clear the pod, rebuild from the engine's buffer. */
    public static final String REPLAY_GAP_POLICY_DEFAULT = "clear";
    /** Accepted replay gap policies. */
    public static final List<String> REPLAY_GAP_POLICIES = List.of(REPLAY_GAP_POLICY_DEFAULT, "keep");
    /** Checkpoint interval key. */
    public static final String CHECKPOINT_INTERVAL_MS_PROP_NAME = "checkpointIntervalMs";
    /** Default checkpoint interval. */
    public static final long CHECKPOINT_INTERVAL_MS_DEFAULT = 200;
    /** Host tier map blocks per pod key (default: {@code IndexWriterContext.Configuration.TIER_MAP_BLOCKS_DEFAULT}). */
    public static final String TIER_MAP_BLOCKS_PROP_NAME = "tierMapBlocks";
    /** Metrics endpoint key. */
    public static final String METRICS_PROP_NAME = "metrics";
    /** Default: no metrics endpoint. */
    public static final String METRICS_DEFAULT = null;
    /**
     * Metrics allow-remote key: accept a metrics endpoint on a wildcard or non-loopback address (it exports pod ids
     * and models to anyone who reaches it).
     */
    public static final String METRICS_ALLOW_REMOTE_PROP_NAME = "metricsAllowRemote";
    /** Default: the metrics endpoint must be on a loopback address. */
    public static final boolean METRICS_ALLOW_REMOTE_DEFAULT = false;
    /** Peer key: the base URL of a running daemon's HTTP API whose snapshot a new cell loads at start. */
    public static final String PEER_PROP_NAME = "peer";
    /** Default: no peer (a new cell starts empty). */
    public static final String PEER_DEFAULT = null;
    /** Peer-optional key: start empty when the peer's snapshot cannot be fetched. */
    public static final String PEER_OPTIONAL_PROP_NAME = "peerOptional";
    /** Default: a peer that cannot be fetched fails the start. */
    public static final boolean PEER_OPTIONAL_DEFAULT = false;
    /** Peer timeout key: bound on connecting to the peer and on the whole snapshot download. */
    public static final String PEER_TIMEOUT_MS_PROP_NAME = "peerTimeoutMs";
    /** Default peer timeout: 30 s (a 512 MiB snapshot at 1 Gbit/s takes about 4 s). */
    public static final long PEER_TIMEOUT_MS_DEFAULT = 30_000;
    /** Longest peer timeout: one hour. */
    public static final long PEER_TIMEOUT_MS_MAX = 3_600_000;
    /** Snapshot size limit key: the longest snapshot this daemon takes ({@code /dump}) or loads ({@code peer}). */
    public static final String SNAPSHOT_MAX_BYTES_PROP_NAME = "snapshotMaxBytes";
    /** Default snapshot size limit: 512 MiB (about 16 million blocks of 32 bytes). */
    public static final long SNAPSHOT_MAX_BYTES_DEFAULT = 512L << 20;
    /** Smallest snapshot size limit. */
    public static final long SNAPSHOT_MAX_BYTES_MIN = 1 << 10;
    /** Largest snapshot size limit: what one Java array holds. */
    public static final long SNAPSHOT_MAX_BYTES_MAX = Integer.MAX_VALUE - 8;
    /**
     * How long the writers have to answer a snapshot request (no key: it bounds the writers' work, which the size
     * limit bounds already).
     */
    public static final long SNAPSHOT_TIMEOUT_MS_DEFAULT = 30_000;
    /** Counters print interval key. */
    public static final String STATS_INTERVAL_MS_PROP_NAME = "statsIntervalMs";
    /** Default: print the counters only at exit. */
    public static final long STATS_INTERVAL_MS_DEFAULT = 0;
    /** Lock-the-index key. */
    public static final String MLOCK_INDEX_PROP_NAME = "mlockIndex";
    /** Default: do not mlock the index (it needs {@code RLIMIT_MEMLOCK} covering the file). */
    public static final boolean MLOCK_INDEX_DEFAULT = false;

    /** Indexer HTTP API key ({@code HOST:PORT}). */
    public static final String HTTP_PROP_NAME = "http";
    /** Default: no HTTP API. */
    public static final String HTTP_DEFAULT = null;
    /** HTTP event-loop threads key. */
    public static final String HTTP_THREADS_PROP_NAME = "httpThreads";
    /** Default HTTP event-loop threads: two (a query takes a few microseconds; more threads rarely help). */
    public static final int HTTP_THREADS_DEFAULT = 2;
    /** Most HTTP event-loop threads. */
    public static final int HTTP_THREADS_MAX = 64;
    /** How the HTTP event loops wait for requests key. */
    public static final String HTTP_IDLE_PROP_NAME = "httpIdle";
    /** HTTP event loops block in the selector until a request comes (no core spent while idle). */
    public static final String HTTP_IDLE_BLOCK = "block";
    /** HTTP event loops poll without sleeping: each takes a whole core, and a request skips the thread wake-up. */
    public static final String HTTP_IDLE_BUSY_SPIN = "busy-spin";
    /** Default: block. */
    public static final String HTTP_IDLE_DEFAULT = HTTP_IDLE_BLOCK;
    /** Largest HTTP request body key (bytes). */
    public static final String HTTP_MAX_BODY_BYTES_PROP_NAME = "httpMaxBodyBytes";
    /**
     * Default largest request body: 8 MiB, Dynamo's indexer's limit for {@code /query} (a 1,000,000-token prompt as
     * JSON is about 6 MiB).
     */
    public static final int HTTP_MAX_BODY_BYTES_DEFAULT = 8 << 20;
    /** Smallest accepted value of the largest request body. */
    public static final int HTTP_MAX_BODY_BYTES_MIN = 1 << 10;
    /** Largest accepted value of the largest request body. */
    public static final int HTTP_MAX_BODY_BYTES_MAX = 64 << 20;

    /** Property: a file holding the bearer token the HTTP API requires (all but /health); null for none. */
    public static final String HTTP_TOKEN_FILE_PROP_NAME = "httpTokenFile";
    /** Property: a second token file: /dump and /metrics then need its token (and the first does not open them). */
    public static final String HTTP_ADMIN_TOKEN_FILE_PROP_NAME = "httpAdminTokenFile";
    /** Property: the HTTP API's TLS certificate chain (PEM); with {@link #HTTP_TLS_KEY_FILE_PROP_NAME}, HTTPS. */
    public static final String HTTP_TLS_CERT_FILE_PROP_NAME = "httpTlsCertFile";
    /** Property: the HTTP API's TLS private key (PEM, PKCS#8). */
    public static final String HTTP_TLS_KEY_FILE_PROP_NAME = "httpTlsKeyFile";
    /** Property: CA certificates (PEM) a client certificate must chain to: mutual TLS (clients without one refused). */
    public static final String HTTP_TLS_CLIENT_CA_FILE_PROP_NAME = "httpTlsClientCaFile";
    /** Property: accept an {@code http} address other hosts reach without a token file. */
    public static final String HTTP_ALLOW_REMOTE_PROP_NAME = "httpAllowRemote";
    /** Default for {@link #HTTP_ALLOW_REMOTE_PROP_NAME}. */
    public static final boolean HTTP_ALLOW_REMOTE_DEFAULT = false;
    /** Property: connections the HTTP API keeps open at once. */
    public static final String HTTP_MAX_CONNECTIONS_PROP_NAME = "httpMaxConnections";
    /** Default for {@link #HTTP_MAX_CONNECTIONS_PROP_NAME}. */
    public static final int HTTP_MAX_CONNECTIONS_DEFAULT = 1024;
    /** Largest {@link #HTTP_MAX_CONNECTIONS_PROP_NAME}. */
    public static final int HTTP_MAX_CONNECTIONS_MAX = 65_536;
    /** Property: time a client may take to send one whole request to the HTTP API, ms. */
    public static final String HTTP_REQUEST_READ_MS_PROP_NAME = "httpRequestReadMs";
    /** Default for {@link #HTTP_REQUEST_READ_MS_PROP_NAME}. */
    public static final int HTTP_REQUEST_READ_MS_DEFAULT = io.kvidx.serve.ServeContext.REQUEST_READ_MS_DEFAULT;
    /** Smallest {@link #HTTP_REQUEST_READ_MS_PROP_NAME}. */
    public static final int HTTP_REQUEST_READ_MS_MIN = 100;
    /** Largest {@link #HTTP_REQUEST_READ_MS_PROP_NAME}. */
    public static final int HTTP_REQUEST_READ_MS_MAX = 600_000;
    /** Property: the most engines API registrations may hold at once (ranks count). */
    public static final String HTTP_MAX_REGISTRATIONS_PROP_NAME = "httpMaxRegistrations";
    /** Default for {@link #HTTP_MAX_REGISTRATIONS_PROP_NAME}: a full pod table. */
    public static final int HTTP_MAX_REGISTRATIONS_DEFAULT = 256;
    /** Largest {@link #HTTP_MAX_REGISTRATIONS_PROP_NAME}. */
    public static final int HTTP_MAX_REGISTRATIONS_MAX = 65_536;
    /** Property: CIDR blocks and host globs a registration's endpoints may name (empty: any host). */
    public static final String HTTP_REGISTER_HOSTS_PROP_NAME = "httpRegisterHosts";
    /** Property: how long a {@code /dump} snapshot is served to every caller after it was taken, ms. */
    public static final String HTTP_DUMP_MIN_INTERVAL_MS_PROP_NAME = "httpDumpMinIntervalMs";
    /** Default for {@link #HTTP_DUMP_MIN_INTERVAL_MS_PROP_NAME}. */
    public static final long HTTP_DUMP_MIN_INTERVAL_MS_DEFAULT = 10_000;
    /** Largest {@link #HTTP_DUMP_MIN_INTERVAL_MS_PROP_NAME}. */
    public static final long HTTP_DUMP_MIN_INTERVAL_MS_MAX = 3_600_000;

    /** Key scheme key: how the cell keys blocks ({@code kvidx} or {@code xxh3-chain}). */
    public static final String KEY_SCHEME_PROP_NAME = "keyScheme";
    /** Default key scheme: kvidx's router keys (model, LoRA, salt and multimodal items in every key). */
    public static final String KEY_SCHEME_DEFAULT = "kvidx";
    /** Bound ZeroMQ SUB endpoint key (engines connect to it). */
    public static final String ZMQ_BIND_PROP_NAME = "zmqBind";
    /** Default: no bound SUB socket. */
    public static final String ZMQ_BIND_DEFAULT = null;
    /**
     * ZeroMQ topic pod allow-list key: pod ids or globs ({@code *}, {@code ?}) accepted from topics
     * {@code kv@<pod>@<model>} (the bound SUB socket's, and those of endpoints without a configured pod).
     */
    public static final String ZMQ_TOPIC_PODS_PROP_NAME = "zmqTopicPods";
    /** Default ZeroMQ topic pod allow-list: empty, every pod accepted. */
    public static final List<String> ZMQ_TOPIC_PODS_DEFAULT = List.of();

    /** NATS servers key ({@code jetstream.url}): comma-separated {@code nats://} or {@code tls://} URLs (ADR 0024). */
    public static final String JETSTREAM_URL_PROP_NAME = "jetstream.url";
    /** Default: no JetStream. */
    public static final String JETSTREAM_URL_DEFAULT = null;
    /** JetStream role key: {@code consumer} (build the index from the stream) or {@code relay} (publish to it). */
    public static final String JETSTREAM_ROLE_PROP_NAME = "jetstream.role";
    /** Default JetStream role. */
    public static final String JETSTREAM_ROLE_DEFAULT = "consumer";
    /** The JetStream roles. */
    public static final List<String> JETSTREAM_ROLES = List.of(JETSTREAM_ROLE_DEFAULT, "relay");
    /** Stream name key. */
    public static final String JETSTREAM_STREAM_PROP_NAME = "jetstream.stream";
    /** Default stream name. */
    public static final String JETSTREAM_STREAM_DEFAULT = "KVIDX_EVENTS";
    /** Subject prefix key: events go to {@code <prefix>.<model>.<pod>}. */
    public static final String JETSTREAM_SUBJECT_PREFIX_PROP_NAME = "jetstream.subjectPrefix";
    /** Default subject prefix. */
    public static final String JETSTREAM_SUBJECT_PREFIX_DEFAULT = "kvidx.events";
    /** Object store bucket key (the index snapshots). */
    public static final String JETSTREAM_BUCKET_PROP_NAME = "jetstream.bucket";
    /** Default snapshot bucket. */
    public static final String JETSTREAM_BUCKET_DEFAULT = "KVIDX_SNAPSHOTS";
    /** Stream retention key: the age after which events are dropped (applies when the stream is created). */
    public static final String JETSTREAM_MAX_AGE_MS_PROP_NAME = "jetstream.maxAgeMs";
    /** Default retention: one hour, as Dynamo's. */
    public static final long JETSTREAM_MAX_AGE_MS_DEFAULT = 3_600_000;
    /** Stream size key: the bytes after which the oldest events are dropped (applies when the stream is created). */
    public static final String JETSTREAM_MAX_BYTES_PROP_NAME = "jetstream.maxBytes";
    /** Default stream size: 1 GiB. */
    public static final long JETSTREAM_MAX_BYTES_DEFAULT = 1L << 30;
    /** Smallest stream size. */
    public static final long JETSTREAM_MAX_BYTES_MIN = 1L << 20;
    /** Duplicate window key: how long the stream remembers message ids (applies when the stream is created). */
    public static final String JETSTREAM_DUPLICATE_WINDOW_MS_PROP_NAME = "jetstream.duplicateWindowMs";
    /** Default duplicate window: two minutes (JetStream's). */
    public static final long JETSTREAM_DUPLICATE_WINDOW_MS_DEFAULT = 120_000;
    /** Snapshot interval key: how often a consumer considers storing a snapshot; 0 = it stores none. */
    public static final String JETSTREAM_SNAPSHOT_INTERVAL_MS_PROP_NAME = "jetstream.snapshotIntervalMs";
    /** Default snapshot interval: five minutes. */
    public static final long JETSTREAM_SNAPSHOT_INTERVAL_MS_DEFAULT = 300_000;
    /** Snapshot events key: events applied after which a consumer considers storing a snapshot early. */
    public static final String JETSTREAM_SNAPSHOT_EVENTS_PROP_NAME = "jetstream.snapshotEvents";
    /** Default snapshot events. */
    public static final long JETSTREAM_SNAPSHOT_EVENTS_DEFAULT = 100_000;
    /**
     * Exit-on-loss key: a consumer that finds stream messages lost while running marks its cell for a new index and
     * stops the daemon (exit 1), so that its supervisor's restart loads the newest snapshot.
     */
    public static final String JETSTREAM_EXIT_ON_LOSS_PROP_NAME = "jetstream.exitOnLoss";
    /** Default: exit on a loss (the daemon recovers through a restart). */
    public static final boolean JETSTREAM_EXIT_ON_LOSS_DEFAULT = true;
    /**
     * Relay lease TTL key: of the relays subscribed to the same engines, only the holder of a pod's lease (a key of
     * the lease bucket with this TTL, renewed every fifth of it) publishes the pod's messages; the others stand by and
     * take over once it expires. 0: no leases, every relay publishes every pod (one relay per engine only: two that
     * see an engine restart at different points publish two clears, ADR 0024).
     */
    public static final String JETSTREAM_LEASE_TTL_MS_PROP_NAME = "jetstream.leaseTtlMs";
    /** Default lease TTL: five seconds (a dead relay's pods are taken over within about that). */
    public static final long JETSTREAM_LEASE_TTL_MS_DEFAULT = 5_000;
    /** Shortest lease TTL accepted (besides 0). */
    public static final long JETSTREAM_LEASE_TTL_MS_MIN = 1_000;
    /** Lease bucket key: the KV bucket of the relays' leases. */
    public static final String JETSTREAM_LEASE_BUCKET_PROP_NAME = "jetstream.leaseBucket";
    /** Default lease bucket. */
    public static final String JETSTREAM_LEASE_BUCKET_DEFAULT = "KVIDX_RELAY_LEASES";
    /** NATS user key (with {@code jetstream.passwordFile}). */
    public static final String JETSTREAM_USER_PROP_NAME = "jetstream.user";
    /** NATS password file key. */
    public static final String JETSTREAM_PASSWORD_FILE_PROP_NAME = "jetstream.passwordFile";
    /** NATS token file key. */
    public static final String JETSTREAM_TOKEN_FILE_PROP_NAME = "jetstream.tokenFile";
    /** NATS credentials file key (a JWT and nkey seed, {@code .creds}). */
    public static final String JETSTREAM_CREDS_FILE_PROP_NAME = "jetstream.credsFile";
    /** NATS nkey seed file key (nkey authentication without a JWT). */
    public static final String JETSTREAM_NKEY_FILE_PROP_NAME = "jetstream.nkeyFile";
    /** TLS CA file key: PEM certificates the NATS servers' certificates must chain to ({@code tls://} URLs). */
    public static final String JETSTREAM_TLS_CA_FILE_PROP_NAME = "jetstream.tlsCaFile";
    /** TLS client certificate key: a PEM certificate (chain) this daemon presents to NATS (mutual TLS). */
    public static final String JETSTREAM_TLS_CERT_FILE_PROP_NAME = "jetstream.tlsCertFile";
    /** TLS client key key: the PEM (PKCS#8) private key of {@code jetstream.tlsCertFile}. */
    public static final String JETSTREAM_TLS_KEY_FILE_PROP_NAME = "jetstream.tlsKeyFile";

    private DaemonConfiguration() {
    }
}
