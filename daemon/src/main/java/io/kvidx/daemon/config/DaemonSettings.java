package io.kvidx.daemon.config;

import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Function;

import static io.kvidx.daemon.config.DaemonConfiguration.AERON_CHANNELS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.AERON_DIR_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.AERON_INGEST_CPU_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.AERON_INGEST_IDLE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.AERON_STREAM_ID_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.AERON_TERM_LENGTH_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.BLOCK_SIZE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.CAPACITY_BLOCKS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.CELL_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.CHECKPOINT_INTERVAL_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.DIR_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.EMBEDDED_DRIVER_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.GROUP_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.HEARTBEAT_INTERVAL_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.HTTP_MAX_BODY_BYTES_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.HTTP_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.HTTP_THREADS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.IDLE_STRATEGY_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.MAINTENANCE_CPU_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.MAINTENANCE_IDLE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.MAX_CHAIN_LENGTH_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.MAX_PODS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.METRICS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.MLOCK_INDEX_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.POD_MAX_BLOCKS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.POD_TIMEOUT_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.REPLAY_GAP_POLICY_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.REPLAY_TIMEOUT_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.SHARD_COUNT_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.STATS_INTERVAL_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.TIER_MAP_BLOCKS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.WRITERS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.WRITER_CPUS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_IO_CPUS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.WRITER_IDLE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.WRITER_QUEUE_LENGTH_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_BIND_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_HANDSHAKE_TIMEOUT_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_INGEST_CPU_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_INGEST_IDLE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_REPLAY_CPU_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_REPLAY_IDLE_PROP_NAME;

/**
 * Every setting of the daemon: its YAML key (dotted under a mapping: {@code aeron.termLength}), the command-line
 * option that sets the same thing, the YAML value's kind, and how it is set in and read from a
 * {@link DaemonContext}. {@link DaemonConfigFile} reads and prints YAML through this table; the command line's
 * error messages translate keys to options through it; a test checks it against the options the command line
 * declares, so a setting cannot exist on one side only.
 */
public final class DaemonSettings {
    /** Key of the list of ZeroMQ endpoints; each entry is a mapping of {@link #ZMQ_ENTRY_OPTIONS}' keys. */
    public static final String ZMQ_KEY = "zmq";

    /** Keys of a {@code zmq} entry, each with the option that sets it ({@code --zmq POD@MODEL=ENDPOINT}). */
    public static final Map<String, String> ZMQ_ENTRY_OPTIONS = orderedMap(
        "endpoint", "--zmq", "pod", "--zmq", "model", "--zmq", "replay", "--replay", "engine", "--engine");

    /** What a YAML value must be. */
    public enum Kind {
        /** A scalar, read as text. */
        STRING,
        /** A scalar read as text, or null. */
        NULLABLE_STRING,
        /** An integer that fits 32 bits. */
        INT,
        /** An integer that fits 64 bits. */
        LONG,
        /** true or false. */
        BOOLEAN,
        /** {@code none} (or null) or a CPU number. */
        CPU,
        /** {@code none} (or null, or empty) or a list of CPU numbers. */
        CPU_LIST,
        /** A list of scalars, read as text. */
        STRING_LIST,
        /** The list of ZeroMQ endpoints ({@link DaemonConfigFile} reads its entries). */
        ZMQ
    }

    /**
     * One setting.
     *
     * @param key    YAML key, dotted under a mapping.
     * @param option command-line option (its first name).
     * @param kind   what the YAML value must be.
     * @param set    sets the value (converted to the kind's Java type: String, Integer, Long, Boolean, int[],
     *               List of String) in a context.
     * @param get    reads the value back as YAML-ready data (after conclude).
     */
    public record Setting(String key, String option, Kind kind, BiConsumer<DaemonContext, Object> set,
        Function<DaemonContext, Object> get) {
    }

    private static final List<Setting> SETTINGS = List.of(
        new Setting(DIR_PROP_NAME, "--dir", Kind.STRING, (c, v) -> c.dir(Path.of((String) v)),
            c -> c.dir().toString()),
        new Setting(CELL_PROP_NAME, "--cell", Kind.STRING, (c, v) -> c.cell((String) v), DaemonContext::cell),
        new Setting(GROUP_PROP_NAME, "--group", Kind.NULLABLE_STRING, (c, v) -> c.group((String) v),
            DaemonContext::group),
        new Setting(BLOCK_SIZE_PROP_NAME, "--block-size", Kind.INT, (c, v) -> c.blockSize((Integer) v),
            DaemonContext::blockSize),
        new Setting(DaemonConfiguration.KEY_SCHEME_PROP_NAME, "--key-scheme", Kind.STRING,
            (c, v) -> c.keyScheme((String) v), DaemonContext::keyScheme),
        new Setting(CAPACITY_BLOCKS_PROP_NAME, "--capacity-blocks", Kind.LONG, (c, v) -> c.capacityBlocks((Long) v),
            DaemonContext::capacityBlocks),
        new Setting(SHARD_COUNT_PROP_NAME, "--shards", Kind.INT, (c, v) -> c.shardCount((Integer) v),
            DaemonContext::shardCount),
        new Setting(MAX_PODS_PROP_NAME, "--max-pods", Kind.INT, (c, v) -> c.maxPods((Integer) v),
            DaemonContext::maxPods),
        new Setting(MAX_CHAIN_LENGTH_PROP_NAME, "--max-chain-length", Kind.INT,
            (c, v) -> c.maxChainLength((Integer) v), DaemonContext::maxChainLength),
        new Setting(MLOCK_INDEX_PROP_NAME, "--mlock-index", Kind.BOOLEAN, (c, v) -> c.mlockIndex((Boolean) v),
            DaemonContext::mlockIndex),
        new Setting(WRITERS_PROP_NAME, "--writers", Kind.INT, (c, v) -> c.writers((Integer) v),
            DaemonContext::writers),
        new Setting(WRITER_QUEUE_LENGTH_PROP_NAME, "--writer-queue-length", Kind.INT,
            (c, v) -> c.writerQueueLength((Integer) v), DaemonContext::writerQueueLength),
        new Setting(POD_TIMEOUT_MS_PROP_NAME, "--pod-timeout-ms", Kind.LONG, (c, v) -> c.podTimeoutMs((Long) v),
            DaemonContext::podTimeoutMs),
        new Setting(HEARTBEAT_INTERVAL_MS_PROP_NAME, "--heartbeat-interval-ms", Kind.LONG,
            (c, v) -> c.heartbeatIntervalMs((Long) v), DaemonContext::heartbeatIntervalMs),
        new Setting(REPLAY_TIMEOUT_MS_PROP_NAME, "--replay-timeout-ms", Kind.INT,
            (c, v) -> c.zmq().replayTimeoutMs((Integer) v), c -> c.zmq().replayTimeoutMs()),
        new Setting(ZMQ_HANDSHAKE_TIMEOUT_MS_PROP_NAME, "--zmq-handshake-timeout-ms", Kind.INT,
            (c, v) -> c.zmq().handshakeTimeoutMs((Integer) v), c -> c.zmq().handshakeTimeoutMs()),
        new Setting(DaemonConfiguration.ZMQ_IO_THREADS_PROP_NAME, "--zmq-io-threads", Kind.INT,
            (c, v) -> c.zmq().ioThreads((Integer) v), c -> c.zmq().ioThreads()),
        new Setting(DaemonConfiguration.ZMQ_INGEST_THREADS_PROP_NAME, "--zmq-ingest-threads", Kind.INT,
            (c, v) -> c.zmq().ingestThreads((Integer) v), c -> c.zmq().ingestThreads()),
        new Setting(REPLAY_GAP_POLICY_PROP_NAME, "--replay-gap-policy", Kind.STRING,
            (c, v) -> c.zmq().replayGapPolicy((String) v), c -> c.zmq().replayGapPolicy()),
        new Setting(CHECKPOINT_INTERVAL_MS_PROP_NAME, "--checkpoint-interval-ms", Kind.LONG,
            (c, v) -> c.zmq().checkpointIntervalMs((Long) v), c -> c.zmq().checkpointIntervalMs()),
        new Setting(POD_MAX_BLOCKS_PROP_NAME, "--pod-max-blocks", Kind.INT, (c, v) -> c.podMaxBlocks((Integer) v),
            DaemonContext::podMaxBlocks),
        new Setting(TIER_MAP_BLOCKS_PROP_NAME, "--tier-map-blocks", Kind.INT,
            (c, v) -> c.tierMapBlocks((Integer) v), DaemonContext::tierMapBlocks),
        new Setting(METRICS_PROP_NAME, "--metrics", Kind.NULLABLE_STRING, (c, v) -> c.serving().metrics((String) v),
            c -> c.serving().metrics()),
        new Setting(DaemonConfiguration.METRICS_ALLOW_REMOTE_PROP_NAME, "--metrics-allow-remote", Kind.BOOLEAN,
            (c, v) -> c.serving().metricsAllowRemote((Boolean) v), c -> c.serving().metricsAllowRemote()),
        new Setting(DaemonConfiguration.PEER_PROP_NAME, "--peer", Kind.NULLABLE_STRING,
            (c, v) -> c.snapshots().peer((String) v), c -> c.snapshots().peer()),
        new Setting(DaemonConfiguration.PEER_OPTIONAL_PROP_NAME, "--peer-optional", Kind.BOOLEAN,
            (c, v) -> c.snapshots().peerOptional((Boolean) v), c -> c.snapshots().peerOptional()),
        new Setting(DaemonConfiguration.PEER_TIMEOUT_MS_PROP_NAME, "--peer-timeout-ms", Kind.LONG,
            (c, v) -> c.snapshots().peerTimeoutMs((Long) v), c -> c.snapshots().peerTimeoutMs()),
        new Setting(DaemonConfiguration.SNAPSHOT_MAX_BYTES_PROP_NAME, "--snapshot-max-bytes", Kind.LONG,
            (c, v) -> c.snapshots().snapshotMaxBytes((Long) v), c -> c.snapshots().snapshotMaxBytes()),
        new Setting(HTTP_PROP_NAME, "--http", Kind.NULLABLE_STRING, (c, v) -> c.serving().http((String) v),
            c -> c.serving().http()),
        new Setting(HTTP_THREADS_PROP_NAME, "--http-threads", Kind.INT,
            (c, v) -> c.serving().httpThreads((Integer) v), c -> c.serving().httpThreads()),
        new Setting(DaemonConfiguration.HTTP_IDLE_PROP_NAME, "--http-idle", Kind.STRING,
            (c, v) -> c.serving().httpIdle((String) v), c -> c.serving().httpIdle()),
        new Setting(HTTP_MAX_BODY_BYTES_PROP_NAME, "--http-max-body-bytes", Kind.INT,
            (c, v) -> c.serving().httpMaxBodyBytes((Integer) v), c -> c.serving().httpMaxBodyBytes()),
        new Setting(DaemonConfiguration.HTTP_TOKEN_FILE_PROP_NAME, "--http-token-file", Kind.NULLABLE_STRING,
            (c, v) -> c.serving().httpTokenFile((String) v), c -> c.serving().httpTokenFile()),
        new Setting(DaemonConfiguration.HTTP_ADMIN_TOKEN_FILE_PROP_NAME, "--http-admin-token-file",
            Kind.NULLABLE_STRING, (c, v) -> c.serving().httpAdminTokenFile((String) v),
            c -> c.serving().httpAdminTokenFile()),
        new Setting(DaemonConfiguration.HTTP_TLS_CERT_FILE_PROP_NAME, "--http-tls-cert-file", Kind.NULLABLE_STRING,
            (c, v) -> c.serving().httpTlsCertFile((String) v), c -> c.serving().httpTlsCertFile()),
        new Setting(DaemonConfiguration.HTTP_TLS_KEY_FILE_PROP_NAME, "--http-tls-key-file", Kind.NULLABLE_STRING,
            (c, v) -> c.serving().httpTlsKeyFile((String) v), c -> c.serving().httpTlsKeyFile()),
        new Setting(DaemonConfiguration.HTTP_TLS_CLIENT_CA_FILE_PROP_NAME, "--http-tls-client-ca-file",
            Kind.NULLABLE_STRING, (c, v) -> c.serving().httpTlsClientCaFile((String) v),
            c -> c.serving().httpTlsClientCaFile()),
        new Setting(DaemonConfiguration.HTTP_ALLOW_REMOTE_PROP_NAME, "--http-allow-remote", Kind.BOOLEAN,
            (c, v) -> c.serving().httpAllowRemote((Boolean) v), c -> c.serving().httpAllowRemote()),
        new Setting(DaemonConfiguration.HTTP_MAX_CONNECTIONS_PROP_NAME, "--http-max-connections", Kind.INT,
            (c, v) -> c.serving().httpMaxConnections((Integer) v), c -> c.serving().httpMaxConnections()),
        new Setting(DaemonConfiguration.HTTP_REQUEST_READ_MS_PROP_NAME, "--http-request-read-ms", Kind.INT,
            (c, v) -> c.serving().httpRequestReadMs((Integer) v), c -> c.serving().httpRequestReadMs()),
        new Setting(DaemonConfiguration.HTTP_MAX_REGISTRATIONS_PROP_NAME, "--http-max-registrations", Kind.INT,
            (c, v) -> c.serving().httpMaxRegistrations((Integer) v), c -> c.serving().httpMaxRegistrations()),
        new Setting(DaemonConfiguration.HTTP_REGISTER_HOSTS_PROP_NAME, "--http-register-host", Kind.STRING_LIST,
            (c, v) -> {
                for (final Object pattern : (List<?>) v) {
                    c.serving().addHttpRegisterHost((String) pattern);
                }
            }, c -> new ArrayList<>(c.serving().httpRegisterHosts())),
        new Setting(DaemonConfiguration.HTTP_DUMP_MIN_INTERVAL_MS_PROP_NAME, "--http-dump-min-interval-ms", Kind.LONG,
            (c, v) -> c.serving().httpDumpMinIntervalMs((Long) v), c -> c.serving().httpDumpMinIntervalMs()),
        new Setting(ZMQ_BIND_PROP_NAME, "--zmq-bind", Kind.NULLABLE_STRING, (c, v) -> c.zmq().bind((String) v),
            c -> c.zmq().bind()),
        new Setting(DaemonConfiguration.ZMQ_TOPIC_PODS_PROP_NAME, "--zmq-topic-pod", Kind.STRING_LIST, (c, v) -> {
            for (final Object pattern : (List<?>) v) {
                c.zmq().addTopicPod((String) pattern);
            }
        }, c -> new ArrayList<>(c.zmq().topicPods())),
        new Setting(STATS_INTERVAL_MS_PROP_NAME, "--stats-interval-ms", Kind.LONG,
            (c, v) -> c.statsIntervalMs((Long) v), DaemonContext::statsIntervalMs),
        new Setting(IDLE_STRATEGY_PROP_NAME, "--idle-strategy", Kind.STRING,
            (c, v) -> c.agents().idleStrategy((String) v), c -> c.agents().idleStrategy()),
        new Setting(ZMQ_INGEST_CPU_PROP_NAME, "--zmq-ingest-cpu", Kind.CPU,
            (c, v) -> c.agents().zmqIngestCpu((Integer) v), c -> cpu(c.agents().zmqIngestCpu())),
        new Setting(ZMQ_INGEST_IDLE_PROP_NAME, "--zmq-ingest-idle", Kind.STRING,
            (c, v) -> c.agents().zmqIngestIdle((String) v), c -> c.agents().zmqIngestIdle()),
        new Setting(ZMQ_REPLAY_CPU_PROP_NAME, "--zmq-replay-cpu", Kind.CPU,
            (c, v) -> c.agents().zmqReplayCpu((Integer) v), c -> cpu(c.agents().zmqReplayCpu())),
        new Setting(ZMQ_REPLAY_IDLE_PROP_NAME, "--zmq-replay-idle", Kind.STRING,
            (c, v) -> c.agents().zmqReplayIdle((String) v), c -> c.agents().zmqReplayIdle()),
        new Setting(ZMQ_IO_CPUS_PROP_NAME, "--zmq-io-cpus", Kind.CPU_LIST,
            (c, v) -> c.agents().zmqIoCpus((int[]) v), c -> cpus(c.agents().zmqIoCpus())),
        new Setting(AERON_INGEST_CPU_PROP_NAME, "--aeron-ingest-cpu", Kind.CPU,
            (c, v) -> c.agents().aeronIngestCpu((Integer) v), c -> cpu(c.agents().aeronIngestCpu())),
        new Setting(AERON_INGEST_IDLE_PROP_NAME, "--aeron-ingest-idle", Kind.STRING,
            (c, v) -> c.agents().aeronIngestIdle((String) v), c -> c.agents().aeronIngestIdle()),
        new Setting(WRITER_CPUS_PROP_NAME, "--writer-cpus", Kind.CPU_LIST,
            (c, v) -> c.agents().writerCpus((int[]) v), c -> cpus(c.agents().writerCpus())),
        new Setting(WRITER_IDLE_PROP_NAME, "--writer-idle", Kind.STRING,
            (c, v) -> c.agents().writerIdle((String) v), c -> c.agents().writerIdle()),
        new Setting(MAINTENANCE_CPU_PROP_NAME, "--maintenance-cpu", Kind.CPU,
            (c, v) -> c.agents().maintenanceCpu((Integer) v), c -> cpu(c.agents().maintenanceCpu())),
        new Setting(MAINTENANCE_IDLE_PROP_NAME, "--maintenance-idle", Kind.STRING,
            (c, v) -> c.agents().maintenanceIdle((String) v), c -> c.agents().maintenanceIdle()),
        new Setting("discovery.selector", "--discover", Kind.NULLABLE_STRING,
            (c, v) -> c.discovery().selector((String) v), c -> c.discovery().selector()),
        new Setting("discovery.pool", "--discover-pool", Kind.NULLABLE_STRING,
            (c, v) -> c.discovery().pool((String) v), c -> c.discovery().pool()),
        new Setting("discovery.namespace", "--discover-namespace", Kind.NULLABLE_STRING,
            (c, v) -> c.discovery().namespace((String) v), c -> c.discovery().namespace()),
        new Setting("discovery.kvEventsPort", "--discover-kv-port", Kind.INT,
            (c, v) -> c.discovery().kvEventsPort((Integer) v), c -> c.discovery().kvEventsPort()),
        new Setting("discovery.kvReplayPort", "--discover-replay-port", Kind.INT,
            (c, v) -> c.discovery().kvReplayPort((Integer) v), c -> c.discovery().kvReplayPort()),
        new Setting("discovery.engine", "--discover-engine", Kind.STRING,
            (c, v) -> c.discovery().engine((String) v), c -> c.discovery().engine()),
        new Setting("discovery.model", "--discover-model", Kind.NULLABLE_STRING,
            (c, v) -> c.discovery().model((String) v), c -> c.discovery().model()),
        new Setting("discovery.modelLabel", "--discover-model-label", Kind.STRING,
            (c, v) -> c.discovery().modelLabel((String) v), c -> c.discovery().modelLabel()),
        new Setting("discovery.resyncMs", "--discover-resync-ms", Kind.LONG,
            (c, v) -> c.discovery().resyncMs((Long) v), c -> c.discovery().resyncMs()),
        new Setting("discovery.kubeconfig", "--kubeconfig", Kind.NULLABLE_STRING,
            (c, v) -> c.discovery().kubeconfig(v == null ? null : Path.of((String) v)),
            c -> c.discovery().kubeconfig() == null ? null : c.discovery().kubeconfig().toString()),
        new Setting(DaemonConfiguration.JETSTREAM_URL_PROP_NAME, "--jetstream", Kind.NULLABLE_STRING,
            (c, v) -> c.jetstream().url((String) v), c -> c.jetstream().url()),
        new Setting(DaemonConfiguration.JETSTREAM_ROLE_PROP_NAME, "--jetstream-role", Kind.STRING,
            (c, v) -> c.jetstream().role((String) v), c -> c.jetstream().role()),
        new Setting(DaemonConfiguration.JETSTREAM_STREAM_PROP_NAME, "--jetstream-stream", Kind.STRING,
            (c, v) -> c.jetstream().stream((String) v), c -> c.jetstream().stream()),
        new Setting(DaemonConfiguration.JETSTREAM_SUBJECT_PREFIX_PROP_NAME, "--jetstream-subject-prefix",
            Kind.STRING, (c, v) -> c.jetstream().subjectPrefix((String) v), c -> c.jetstream().subjectPrefix()),
        new Setting(DaemonConfiguration.JETSTREAM_BUCKET_PROP_NAME, "--jetstream-bucket", Kind.STRING,
            (c, v) -> c.jetstream().bucket((String) v), c -> c.jetstream().bucket()),
        new Setting(DaemonConfiguration.JETSTREAM_MAX_AGE_MS_PROP_NAME, "--jetstream-max-age-ms", Kind.LONG,
            (c, v) -> c.jetstream().maxAgeMs((Long) v), c -> c.jetstream().maxAgeMs()),
        new Setting(DaemonConfiguration.JETSTREAM_MAX_BYTES_PROP_NAME, "--jetstream-max-bytes", Kind.LONG,
            (c, v) -> c.jetstream().maxBytes((Long) v), c -> c.jetstream().maxBytes()),
        new Setting(DaemonConfiguration.JETSTREAM_DUPLICATE_WINDOW_MS_PROP_NAME, "--jetstream-duplicate-window-ms",
            Kind.LONG, (c, v) -> c.jetstream().duplicateWindowMs((Long) v), c -> c.jetstream().duplicateWindowMs()),
        new Setting(DaemonConfiguration.JETSTREAM_SNAPSHOT_INTERVAL_MS_PROP_NAME, "--jetstream-snapshot-interval-ms",
            Kind.LONG, (c, v) -> c.jetstream().snapshotIntervalMs((Long) v),
            c -> c.jetstream().snapshotIntervalMs()),
        new Setting(DaemonConfiguration.JETSTREAM_SNAPSHOT_EVENTS_PROP_NAME, "--jetstream-snapshot-events",
            Kind.LONG, (c, v) -> c.jetstream().snapshotEvents((Long) v), c -> c.jetstream().snapshotEvents()),
        new Setting(DaemonConfiguration.JETSTREAM_EXIT_ON_LOSS_PROP_NAME, "--jetstream-exit-on-loss", Kind.BOOLEAN,
            (c, v) -> c.jetstream().exitOnLoss((Boolean) v), c -> c.jetstream().exitOnLoss()),
        new Setting(DaemonConfiguration.JETSTREAM_LEASE_TTL_MS_PROP_NAME, "--jetstream-lease-ttl-ms", Kind.LONG,
            (c, v) -> c.jetstream().leaseTtlMs((Long) v), c -> c.jetstream().leaseTtlMs()),
        new Setting(DaemonConfiguration.JETSTREAM_LEASE_BUCKET_PROP_NAME, "--jetstream-lease-bucket", Kind.STRING,
            (c, v) -> c.jetstream().leaseBucket((String) v), c -> c.jetstream().leaseBucket()),
        new Setting(DaemonConfiguration.JETSTREAM_USER_PROP_NAME, "--jetstream-user", Kind.NULLABLE_STRING,
            (c, v) -> c.jetstream().user((String) v), c -> c.jetstream().user()),
        new Setting(DaemonConfiguration.JETSTREAM_PASSWORD_FILE_PROP_NAME, "--jetstream-password-file",
            Kind.NULLABLE_STRING, (c, v) -> c.jetstream().passwordFile((String) v),
            c -> c.jetstream().passwordFile()),
        new Setting(DaemonConfiguration.JETSTREAM_TOKEN_FILE_PROP_NAME, "--jetstream-token-file",
            Kind.NULLABLE_STRING, (c, v) -> c.jetstream().tokenFile((String) v), c -> c.jetstream().tokenFile()),
        new Setting(DaemonConfiguration.JETSTREAM_CREDS_FILE_PROP_NAME, "--jetstream-creds-file",
            Kind.NULLABLE_STRING, (c, v) -> c.jetstream().credsFile((String) v), c -> c.jetstream().credsFile()),
        new Setting(DaemonConfiguration.JETSTREAM_NKEY_FILE_PROP_NAME, "--jetstream-nkey-file",
            Kind.NULLABLE_STRING, (c, v) -> c.jetstream().nkeyFile((String) v), c -> c.jetstream().nkeyFile()),
        new Setting(DaemonConfiguration.JETSTREAM_TLS_CA_FILE_PROP_NAME, "--jetstream-tls-ca-file",
            Kind.NULLABLE_STRING, (c, v) -> c.jetstream().tlsCaFile((String) v), c -> c.jetstream().tlsCaFile()),
        new Setting(DaemonConfiguration.JETSTREAM_TLS_CERT_FILE_PROP_NAME, "--jetstream-tls-cert-file",
            Kind.NULLABLE_STRING, (c, v) -> c.jetstream().tlsCertFile((String) v), c -> c.jetstream().tlsCertFile()),
        new Setting(DaemonConfiguration.JETSTREAM_TLS_KEY_FILE_PROP_NAME, "--jetstream-tls-key-file",
            Kind.NULLABLE_STRING, (c, v) -> c.jetstream().tlsKeyFile((String) v), c -> c.jetstream().tlsKeyFile()),
        new Setting(ZMQ_KEY, "--zmq", Kind.ZMQ, (c, v) -> {
            for (final Object e : (List<?>) v) {
                c.zmq().addEndpoint((ZmqEndpoint) e);
            }
        }, DaemonSettings::zmqEntries),
        new Setting(AERON_CHANNELS_PROP_NAME, "--aeron", Kind.STRING_LIST, (c, v) -> {
            for (final Object channel : (List<?>) v) {
                c.aeron().addChannel((String) channel);
            }
        }, c -> List.copyOf(c.aeron().channels())),
        new Setting(AERON_STREAM_ID_PROP_NAME, "--aeron-stream-id", Kind.INT,
            (c, v) -> c.aeron().streamId((Integer) v), c -> c.aeron().streamId()),
        new Setting(AERON_DIR_PROP_NAME, "--aeron-dir", Kind.STRING, (c, v) -> c.aeron().dir((String) v),
            c -> c.aeron().dir()),
        new Setting(EMBEDDED_DRIVER_PROP_NAME, "--embedded-driver", Kind.BOOLEAN,
            (c, v) -> c.aeron().embeddedDriver((Boolean) v), c -> c.aeron().embeddedDriver()),
        new Setting(AERON_TERM_LENGTH_PROP_NAME, "--aeron-term-length", Kind.INT,
            (c, v) -> c.aeron().termLength((Integer) v), c -> c.aeron().termLength()),
        new Setting(DaemonConfiguration.AERON_ALLOW_REMOTE_PROP_NAME, "--aeron-allow-remote", Kind.BOOLEAN,
            (c, v) -> c.aeron().allowRemote((Boolean) v), c -> c.aeron().allowRemote()),
        new Setting(DaemonConfiguration.AERON_PODS_PROP_NAME, "--aeron-pod", Kind.STRING_LIST, (c, v) -> {
            for (final Object pattern : (List<?>) v) {
                c.aeron().addPod((String) pattern);
            }
        }, c -> new ArrayList<>(c.aeron().pods())));

    private static final Map<String, Setting> BY_KEY = byKey();

    private DaemonSettings() {
    }

    /**
     * @return every setting, in the order the YAML file is printed.
     */
    public static List<Setting> all() {
        return SETTINGS;
    }

    /**
     * @param key a YAML key, dotted under a mapping ({@code aeron.termLength}).
     * @return its setting, or null when there is none.
     */
    public static Setting setting(final String key) {
        return BY_KEY.get(key);
    }

    /**
     * @param key a YAML key, dotted under a mapping ({@code aeron.termLength}, {@code zmq.replay}).
     * @return the command-line option that sets the same thing, or null for an unknown key.
     */
    public static String optionOf(final String key) {
        final Setting setting = BY_KEY.get(key);
        if (setting != null) {
            return setting.option();
        }
        return key.startsWith(ZMQ_KEY + ".") ? ZMQ_ENTRY_OPTIONS.get(key.substring(ZMQ_KEY.length() + 1)) : null;
    }

    /**
     * @return every YAML key a config file may hold (dotted under a mapping, {@code zmq.*} for the keys of a
     *         ZeroMQ entry) with the option that sets the same thing.
     */
    public static Map<String, String> optionsByKey() {
        final Map<String, String> all = new LinkedHashMap<>();
        for (final Setting s : SETTINGS) {
            if (s.kind() == Kind.ZMQ) {
                ZMQ_ENTRY_OPTIONS.forEach((k, option) -> all.put(ZMQ_KEY + "." + k, option));
            } else {
                all.put(s.key(), s.option());
            }
        }
        return all;
    }

    private static Object cpu(final int cpu) {
        return cpu == AgentSettings.NO_CPU ? AgentSettings.NONE : cpu;
    }

    private static Object cpus(final int[] cpus) {
        // A list of its own: two empty lists from toList() are the same object, which YAML prints as an alias.
        return new ArrayList<>(Arrays.stream(cpus).boxed().toList());
    }

    private static Object zmqEntries(final DaemonContext c) {
        final List<Map<String, Object>> entries = new ArrayList<>();
        for (final ZmqEndpoint z : c.zmq().endpoints()) {
            final Map<String, Object> e = new LinkedHashMap<>();
            e.put("endpoint", z.endpoint());
            putIfSet(e, "pod", z.podId());
            putIfSet(e, "model", z.model());
            putIfSet(e, "replay", z.replayEndpoint());
            if (z.engine() != ZmqEndpoint.Engine.VLLM) {
                e.put("engine", z.engine().name().toLowerCase(java.util.Locale.ROOT));
            }
            entries.add(e);
        }
        return entries;
    }

    private static void putIfSet(final Map<String, Object> map, final String key, final String value) {
        if (value != null) {
            map.put(key, value);
        }
    }

    private static Map<String, Setting> byKey() {
        final Map<String, Setting> map = new LinkedHashMap<>();
        for (final Setting s : SETTINGS) {
            if (map.put(s.key(), s) != null) {
                throw new IllegalStateException("duplicate setting " + s.key());
            }
        }
        return map;
    }

    private static Map<String, String> orderedMap(final String... keyValues) {
        final Map<String, String> map = new LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            map.put(keyValues[i], keyValues[i + 1]);
        }
        return Collections.unmodifiableMap(map);
    }
}
