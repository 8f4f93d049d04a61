package io.kvidx.daemon.cli;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.daemon.config.AgentSettings;
import io.kvidx.daemon.config.ConfigException;
import io.kvidx.daemon.config.DaemonConfigFile;
import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.DaemonSettings;
import io.kvidx.daemon.config.IdleStrategies;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.agrona.concurrent.ShutdownSignalBarrier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import static io.kvidx.daemon.config.AgentSettings.NONE;
import static io.kvidx.daemon.config.AgentSettings.parseCpu;

/**
 * {@code kvidx daemon}: runs the daemon in the foreground until SIGINT or SIGTERM, then shuts down cleanly. Every
 * option sets the same thing as one YAML key of {@code --config} ({@link DaemonSettings}); an option given here
 * wins over the file. Defaults come from {@link DaemonConfiguration}.
 */
@Command(name = "daemon", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Run the index daemon: ingest engines' KV events into the shared-memory index until SIGINT/SIGTERM.")
public final class DaemonCommand implements Callable<Integer> {
    private static final String IDLE = "IDLE";
    private static final String IDLE_HELP = " Idle strategies: " + IdleStrategies.ACCEPTED + ".";
    private static final String CPU = "CPU|none";

    @Spec
    private CommandSpec spec;

    @Option(names = "--config", paramLabel = "FILE", description = "YAML config file; options given here win (lists "
        + "of endpoints add up). Keys: see --print-config.")
    private Path config;

    @Option(names = "--print-config", description = "Print the effective configuration (defaults, then --config, "
        + "then these options) as YAML and exit; it reads back with --config.")
    private boolean printConfig;

    @Option(names = "--dir", paramLabel = "D", description = "Index directory (default "
        + IndexConfiguration.DIR_DEFAULT + ", or the " + IndexConfiguration.DIR_PROP_NAME + " system property).")
    private Path dir;

    @Option(names = "--cell", description = "Cell name (default " + IndexConfiguration.CELL_DEFAULT + ", or the "
        + IndexConfiguration.CELL_PROP_NAME + " system property).")
    private String cell;

    @Option(names = "--group", paramLabel = "NAME", description = "Group of the cell directory (0750) and index file "
        + "(0640); routers in it can read the index (default: the daemon user's primary group).")
    private String group;

    @Option(names = "--block-size", paramLabel = "B", description = "Router block size in tokens, 1.."
        + DaemonConfiguration.BLOCK_SIZE_MAX + " (default " + DaemonConfiguration.BLOCK_SIZE_DEFAULT
        + "); engines must use the same.")
    private Integer blockSize;

    @Option(names = "--key-scheme", paramLabel = "kvidx|xxh3-chain", description = "How the cell keys blocks "
        + "(default " + DaemonConfiguration.KEY_SCHEME_DEFAULT + "); xxh3-chain is Mooncake's standard chained "
        + "XXH3-64, for routers that hash prompts themselves (POST /query_by_hash).")
    private String keyScheme;

    @Option(names = {"--capacity-blocks", "--capacity"}, paramLabel = "BLOCKS", description = "Blocks held before "
        + "evicting (default " + DaemonConfiguration.CAPACITY_BLOCKS_DEFAULT + ").")
    private Long capacity;

    @Option(names = "--shards", paramLabel = "N", description = "Index shards, a power of two (default "
        + DaemonConfiguration.SHARD_COUNT_DEFAULT + ").")
    private Integer shards;

    @Option(names = "--max-pods", paramLabel = "P", description = "Pod slots of the cell, 1.."
        + DaemonConfiguration.MAX_PODS_DEFAULT + " (default " + DaemonConfiguration.MAX_PODS_DEFAULT + "). A cell "
        + "of at most 64 pods stores plain 64-bit pod bitmaps: a smaller, faster index.")
    private Integer maxPods;

    @Option(names = "--max-chain-length", paramLabel = "BLOCKS", description = "Longest chain a query of the index "
        + "accepts (default " + DaemonConfiguration.MAX_CHAIN_LENGTH_DEFAULT + ").")
    private Integer maxChainLength;

    @Option(names = "--mlock-index", negatable = true, description = "Lock the index file's pages into RAM (mlock; "
        + "needs LimitMEMLOCK/RLIMIT_MEMLOCK covering the file); a failure is logged with its errno and the daemon "
        + "runs on (default " + DaemonConfiguration.MLOCK_INDEX_DEFAULT + ").")
    private Boolean mlockIndex;

    @Option(names = "--writers", paramLabel = "N", description = "Writer threads, 1.." + DaemonConfiguration.WRITERS_MAX
        + " (default " + DaemonConfiguration.WRITERS_DEFAULT + ").")
    private Integer writers;

    @Option(names = "--writer-queue-length", paramLabel = "BYTES", description = "Bytes per writer queue, a power of "
        + "two; the largest batch is an eighth of it (default " + DaemonConfiguration.WRITER_QUEUE_LENGTH_DEFAULT
        + ").")
    private Integer writerQueueLength;

    @Option(names = "--pod-timeout-ms", paramLabel = "MS", description = "Silence after which a pod is taken down; "
        + "0 = never (default " + DaemonConfiguration.POD_TIMEOUT_MS_DEFAULT + ").")
    private Long podTimeoutMs;

    @Option(names = "--heartbeat-interval-ms", paramLabel = "MS", description = "Index heartbeat and transport "
        + "liveness interval (default " + DaemonConfiguration.HEARTBEAT_INTERVAL_MS_DEFAULT + ").")
    private Long heartbeatIntervalMs;

    @Option(names = "--replay-timeout-ms", paramLabel = "MS", description = "Wait for each replay reply (default "
        + DaemonConfiguration.REPLAY_TIMEOUT_MS_DEFAULT + ").")
    private Integer replayTimeoutMs;

    @Option(names = "--zmq-handshake-timeout-ms", paramLabel = "MS", description = "Drop and redo a ZeroMQ "
        + "connection whose handshake has not finished by then (default "
        + DaemonConfiguration.ZMQ_HANDSHAKE_TIMEOUT_MS_DEFAULT + ").")
    private Integer zmqHandshakeTimeoutMs;

    @Option(names = "--zmq-io-threads", paramLabel = "N", description = "ZeroMQ I/O threads reading the engines' "
        + "streams (default " + DaemonConfiguration.ZMQ_IO_THREADS_DEFAULT + "; more for many busy engines).")
    private Integer zmqIoThreads;

    @Option(names = "--zmq-ingest-threads", paramLabel = "N", description = "ZeroMQ ingest threads sharing the "
        + "engines by endpoint (default " + DaemonConfiguration.ZMQ_INGEST_THREADS_DEFAULT + ").")
    private Integer zmqIngestThreads;

    @Option(names = "--replay-gap-policy", paramLabel = "clear|keep", description = "When an engine no longer "
        + "buffers the batches a restart or gap missed: clear the pod and rebuild it from the replay, or "
        + "keep its blocks and mark it suspect (default " + DaemonConfiguration.REPLAY_GAP_POLICY_DEFAULT + ").")
    private String replayGapPolicy;

    @Option(names = {"--checkpoint-interval-ms", "--checkpoint-ms"}, paramLabel = "MS", description = "How often each "
        + "publisher's applied sequence is recorded for a restart (default "
        + DaemonConfiguration.CHECKPOINT_INTERVAL_MS_DEFAULT + ").")
    private Long checkpointMs;

    @Option(names = "--pod-max-blocks", paramLabel = "N", description = "Most blocks per pod the daemon tracks "
        + "(each pod's engine-hash map; default " + DaemonConfiguration.POD_MAX_BLOCKS_DEFAULT + "). A pod holding "
        + "more loses its least recently stored blocks.")
    private Integer podMaxBlocks;

    @Option(names = "--tier-map-blocks", paramLabel = "N", description = "Most blocks per pod whose storage tier "
        + "(GPU, CPU, disk; local or remote) the host tier map keeps for routers (default "
        + IndexWriterContext.Configuration.TIER_MAP_BLOCKS_DEFAULT + "). A pod holding more loses the tiers of its "
        + "least recently updated blocks, which then score as GPU.")
    private Integer tierMapBlocks;

    @Option(names = "--metrics", paramLabel = "HOST:PORT", description = "Serve Prometheus metrics at "
        + "http://HOST:PORT/metrics, e.g. 127.0.0.1:9464 (default: off). A loopback address unless "
        + "--metrics-allow-remote: it exports pod ids and models, unauthenticated.")
    private String metrics;

    @Option(names = "--metrics-allow-remote", negatable = true, description = "Accept a --metrics address that is a "
        + "wildcard or not loopback (default " + DaemonConfiguration.METRICS_ALLOW_REMOTE_DEFAULT + ").")
    private Boolean metricsAllowRemote;

    @Option(names = "--peer", paramLabel = "URL", description = "Catch up from a running daemon at start: when "
        + "this cell's index is created new, load the snapshot at URL/dump?format=kvidx (its HTTP API), then replay "
        + "each ZeroMQ engine from the snapshot's sequences, as after a restart (default: start empty). A snapshot of "
        + "another --block-size is refused.")
    private String peer;

    @Option(names = "--peer-optional", negatable = true, description = "Start empty (logged) when the --peer "
        + "snapshot cannot be fetched or is corrupt, instead of failing the start (default "
        + DaemonConfiguration.PEER_OPTIONAL_DEFAULT + ").")
    private Boolean peerOptional;

    @Option(names = "--peer-timeout-ms", paramLabel = "MS", description = "Bound on connecting to the --peer and "
        + "on the whole snapshot download (default " + DaemonConfiguration.PEER_TIMEOUT_MS_DEFAULT + ").")
    private Long peerTimeoutMs;

    @Option(names = "--snapshot-max-bytes", paramLabel = "BYTES", description = "Longest snapshot this daemon takes "
        + "for a replica (/dump?format=kvidx) or loads from a --peer (default "
        + DaemonConfiguration.SNAPSHOT_MAX_BYTES_DEFAULT + ").")
    private Long snapshotMaxBytes;

    @Option(names = "--http", paramLabel = "HOST:PORT", description = "Serve the indexer HTTP API (Dynamo standalone "
        + "indexer / Mooncake compatible: register, unregister, workers, query, query_by_hash, dump, health, metrics) "
        + "at http://HOST:PORT/ (default: off). Unauthenticated, and it registers engines: bind loopback "
        + "(127.0.0.1) or put an authenticating proxy in front.")
    private String http;

    @Option(names = "--http-threads", paramLabel = "N", description = "HTTP event-loop threads (default "
        + DaemonConfiguration.HTTP_THREADS_DEFAULT + ").")
    private Integer httpThreads;

    @Option(names = "--http-idle", paramLabel = "block|busy-spin", description = "How the HTTP event loops wait "
        + "(default " + DaemonConfiguration.HTTP_IDLE_DEFAULT + "); busy-spin takes a core per loop and saves the "
        + "thread wake-up per request.")
    private String httpIdle;

    @Option(names = "--http-max-body-bytes", paramLabel = "BYTES", description = "Largest HTTP request body "
        + "(default " + DaemonConfiguration.HTTP_MAX_BODY_BYTES_DEFAULT + "); larger ones get 413.")
    private Integer httpMaxBodyBytes;

    @Option(names = "--zmq-bind", paramLabel = "ENDPOINT", description = "Bind one ZeroMQ SUB socket that engines "
        + "connect to (e.g. tcp://127.0.0.1:5557; llm-d's centralized mode); pods are named by each message's topic "
        + "kv@POD@MODEL, and each topic's sequence is tracked on its own. Anyone who reaches it can write the index: "
        + "bind a private interface and set --zmq-topic-pod.")
    private String zmqBind;

    @Option(names = "--zmq-topic-pod", paramLabel = "PATTERN", description = "Pod id or glob (* and ?) accepted "
        + "from a topic kv@POD@MODEL (the --zmq-bind socket's, and --zmq endpoints with pod '*'); repeatable. Once "
        + "any is given, messages naming other pods are dropped and counted (default: every pod).")
    private List<String> zmqTopicPods = new ArrayList<>();

    @Option(names = {"--stats-interval-ms", "--stats-ms"}, paramLabel = "MS", description = "Print counters every MS "
        + "ms; 0 = only at exit (default " + DaemonConfiguration.STATS_INTERVAL_MS_DEFAULT + ").")
    private Long statsMs;

    @Option(names = {"--idle-strategy", "--idle"}, paramLabel = IDLE, description = "Idle strategy of the ingest and "
        + "writer agents that name none of their own (default " + DaemonConfiguration.IDLE_STRATEGY_DEFAULT + ")."
        + IDLE_HELP)
    private String idle;

    @Option(names = "--zmq-ingest-cpu", paramLabel = CPU, description = "CPU the ZeroMQ ingest thread pins itself to "
        + "(default " + NONE + ").")
    private String zmqIngestCpu;

    @Option(names = "--zmq-ingest-idle", paramLabel = IDLE, description = "Idle strategy of the ZeroMQ ingest agent "
        + "(default: --idle-strategy).")
    private String zmqIngestIdle;

    @Option(names = "--zmq-replay-cpu", paramLabel = CPU, description = "CPU the ZeroMQ replay threads (one per "
        + "ingest thread) pin themselves to (default " + NONE + ").")
    private String zmqReplayCpu;

    @Option(names = "--zmq-replay-idle", paramLabel = IDLE, description = "Idle strategy of the ZeroMQ replay agents "
        + "(default " + DaemonConfiguration.ZMQ_REPLAY_IDLE_DEFAULT + ").")
    private String zmqReplayIdle;

    @Option(names = "--aeron-ingest-cpu", paramLabel = CPU, description = "CPU the Aeron ingest thread pins itself "
        + "to (default " + NONE + ").")
    private String aeronIngestCpu;

    @Option(names = "--aeron-ingest-idle", paramLabel = IDLE, description = "Idle strategy of the Aeron ingest agent "
        + "and the embedded media driver (default: --idle-strategy).")
    private String aeronIngestIdle;

    @Option(names = "--writer-cpus", paramLabel = "CPU,...|none", split = ",", description = "CPUs of the writer "
        + "threads, one per writer in writer order (default " + NONE + ").")
    private List<String> writerCpus;

    @Option(names = "--writer-idle", paramLabel = IDLE, description = "Idle strategy of the writer agents (default: "
        + "--idle-strategy).")
    private String writerIdle;

    @Option(names = "--maintenance-cpu", paramLabel = CPU, description = "CPU the maintenance thread (index "
        + "heartbeat, sweeps) pins itself to (default " + NONE + ").")
    private String maintenanceCpu;

    @Option(names = "--maintenance-idle", paramLabel = IDLE, description = "Idle strategy of the maintenance agent "
        + "(default " + DaemonConfiguration.MAINTENANCE_IDLE_DEFAULT + ").")
    private String maintenanceIdle;

    @Option(names = "--zmq", paramLabel = "POD[@MODEL]=ENDPOINT",
        description = "vLLM or SGLang ZeroMQ publisher; POD '*' takes pod and model from the topic "
            + "kv@<pod>@<model>.")
    private List<String> zmq = new ArrayList<>();

    @Option(names = "--engine", paramLabel = "POD|ENDPOINT=ENGINE", description = "Event format of a pod's --zmq "
        + "endpoint(s), or of the --zmq endpoint at ENDPOINT: vllm (default) or sglang.")
    private List<String> engine = new ArrayList<>();

    @Option(names = "--replay", paramLabel = "POD=ENDPOINT", description = "Replay (ROUTER) endpoint of a pod.")
    private List<String> replay = new ArrayList<>();

    @Option(names = "--aeron", paramLabel = "CHANNEL",
        description = "Aeron channel for kvidx SBE events (aeron:ipc, aeron:udp?endpoint=127.0.0.1:PORT); starts "
            + "Aeron. UDP must bind loopback unless --aeron-allow-remote.")
    private List<String> aeron = new ArrayList<>();

    @Option(names = "--aeron-allow-remote", negatable = true, description = "Accept --aeron UDP channels on a "
        + "wildcard or non-loopback address: anyone who reaches them can write the index, so set --aeron-pod too "
        + "(default " + DaemonConfiguration.AERON_ALLOW_REMOTE_DEFAULT + ").")
    private Boolean aeronAllowRemote;

    @Option(names = "--aeron-pod", paramLabel = "PATTERN", description = "Pod id or glob (* and ?) whose Aeron "
        + "messages are accepted; repeatable. Once any is given, messages of other pods are dropped and counted "
        + "(default: every pod).")
    private List<String> aeronPods = new ArrayList<>();

    @Option(names = "--aeron-stream-id", paramLabel = "ID", description = "Aeron stream id of the events (default "
        + DaemonConfiguration.AERON_STREAM_ID_DEFAULT + ").")
    private Integer aeronStreamId;

    @Option(names = "--aeron-dir", paramLabel = "D", description = "Aeron directory (default "
        + "/dev/shm/kvidx-aeron-<cell>).")
    private String aeronDir;

    @Option(names = "--embedded-driver", negatable = true, description = "Run an embedded Aeron media driver; "
        + "--no-embedded-driver uses an external one in --aeron-dir (default "
        + DaemonConfiguration.EMBEDDED_DRIVER_DEFAULT + ").")
    private Boolean embeddedDriver;

    @Option(names = "--aeron-term-length", paramLabel = "BYTES", description = "Term buffer length of the embedded "
        + "driver's publications, a power of two (default " + DaemonConfiguration.AERON_TERM_LENGTH_DEFAULT + ").")
    private Integer aeronTermLength;

    @Override
    public Integer call() {
        final DaemonContext context = configure();
        if (printConfig) {
            System.out.print(DaemonConfigFile.print(context));
            System.out.flush();
            return 0;
        }
        if (config != null) {
            // The subscriptions follow the file while the daemon runs (the rest of it needs a restart).
            context.configReload(new DaemonContext.ConfigReload(config, () -> configure().zmq().endpoints()));
        }
        final long statsMs = context.statsIntervalMs();
        // Closing the barrier (last) lets the JVM's shutdown hook finish once the daemon has stopped.
        try (ShutdownSignalBarrier barrier = new ShutdownSignalBarrier();
            KvidxDaemon daemon = KvidxDaemon.start(context)) {
            System.out.println("kvidx daemon: index " + context.indexContext().indexFile() + ", block size "
                + context.blockSize() + ", " + context.zmq().endpoints().size() + " ZeroMQ endpoint(s), "
                + context.aeron().channels().size() + " Aeron channel(s)"
                + (context.aeron().channels().isEmpty() ? "" : " in " + context.aeron().dir())
                + (daemon.httpPort() < 0 ? "" : ", HTTP API on port " + daemon.httpPort()) + "; Ctrl-C to stop");
            System.out.flush();
            daemon.onFatal(message -> barrier.signal());
            if (statsMs > 0) {
                final Thread stats = Thread.ofPlatform().daemon().name("kvidx-stats").start(() -> {
                    try {
                        while (true) {
                            Thread.sleep(statsMs);
                            System.out.print(daemon.counters().describe());
                            System.out.flush();
                        }
                    } catch (final InterruptedException ex) {
                        Thread.currentThread().interrupt();
                    }
                });
                barrier.await();
                stats.interrupt();
            } else {
                barrier.await();
            }
            final String fatal = daemon.fatalError();
            if (fatal != null) {
                System.err.println("kvidx daemon: stopping after a fatal error: " + fatal);
            } else {
                System.out.println("kvidx daemon: stopping");
            }
            System.out.print(daemon.counters().describe());
            System.out.flush();
            if (fatal != null) {
                return 1;
            }
        }
        return 0;
    }

    /**
     * Defaults, then the config file, then the options given here; concluded. A bad value fails with a one-line
     * message naming the option when it was given here, else the file and its key.
     */
    private DaemonContext configure() {
        final DaemonContext context = new DaemonContext();
        if (config != null) {
            DaemonConfigFile.load(config, context);
        }
        try {
            apply(context);
            return context.conclude();
        } catch (final ConfigException ex) {
            final String option = DaemonSettings.optionOf(ex.key());
            if (option != null && spec.commandLine().getParseResult().hasMatchedOption(option)) {
                throw new IllegalArgumentException(option + " " + ex.problem(), ex);
            }
            throw new IllegalArgumentException((config == null ? "" : config + ": ") + ex.getMessage(), ex);
        }
    }

    private void apply(final DaemonContext context) {
        if (dir != null) {
            context.dir(dir);
        }
        if (cell != null) {
            context.cell(cell);
        }
        if (group != null) {
            context.group(group);
        }
        if (blockSize != null) {
            context.blockSize(blockSize);
        }
        if (keyScheme != null) {
            context.keyScheme(keyScheme);
        }
        if (capacity != null) {
            context.capacityBlocks(capacity);
        }
        if (shards != null) {
            context.shardCount(shards);
        }
        if (maxPods != null) {
            context.maxPods(maxPods);
        }
        if (maxChainLength != null) {
            context.maxChainLength(maxChainLength);
        }
        if (mlockIndex != null) {
            context.mlockIndex(mlockIndex);
        }
        if (writers != null) {
            context.writers(writers);
        }
        if (writerQueueLength != null) {
            context.writerQueueLength(writerQueueLength);
        }
        if (podTimeoutMs != null) {
            context.podTimeoutMs(podTimeoutMs);
        }
        if (heartbeatIntervalMs != null) {
            context.heartbeatIntervalMs(heartbeatIntervalMs);
        }
        if (replayTimeoutMs != null) {
            context.zmq().replayTimeoutMs(replayTimeoutMs);
        }
        if (zmqIoThreads != null) {
            context.zmq().ioThreads(zmqIoThreads);
        }
        if (zmqIngestThreads != null) {
            context.zmq().ingestThreads(zmqIngestThreads);
        }
        if (zmqHandshakeTimeoutMs != null) {
            context.zmq().handshakeTimeoutMs(zmqHandshakeTimeoutMs);
        }
        if (replayGapPolicy != null) {
            context.zmq().replayGapPolicy(replayGapPolicy);
        }
        if (checkpointMs != null) {
            context.zmq().checkpointIntervalMs(checkpointMs);
        }
        if (podMaxBlocks != null) {
            context.podMaxBlocks(podMaxBlocks);
        }
        if (statsMs != null) {
            context.statsIntervalMs(statsMs);
        }
        if (tierMapBlocks != null) {
            context.tierMapBlocks(tierMapBlocks);
        }
        if (metrics != null) {
            context.metrics(metrics);
        }
        if (peer != null) {
            context.peer(peer);
        }
        if (peerOptional != null) {
            context.peerOptional(peerOptional);
        }
        if (peerTimeoutMs != null) {
            context.peerTimeoutMs(peerTimeoutMs);
        }
        if (snapshotMaxBytes != null) {
            context.snapshotMaxBytes(snapshotMaxBytes);
        }
        if (http != null) {
            context.http(http);
        }
        if (zmqBind != null) {
            context.zmqBind(zmqBind);
        }
        zmqTopicPods.forEach(context.zmq()::addTopicPod);
        if (metricsAllowRemote != null) {
            context.metricsAllowRemote(metricsAllowRemote);
        }
        if (httpThreads != null) {
            context.httpThreads(httpThreads);
        }
        if (httpIdle != null) {
            context.httpIdle(httpIdle);
        }
        if (httpMaxBodyBytes != null) {
            context.httpMaxBodyBytes(httpMaxBodyBytes);
        }
        applyAgents(context);
        for (final String z : zmq) {
            context.zmq().addEndpoint(parseZmq(z));
        }
        for (final String r : replay) {
            final int eq = r.indexOf('=');
            if (eq <= 0 || eq == r.length() - 1) {
                throw new IllegalArgumentException("--replay must be POD=ENDPOINT: " + r);
            }
            context.zmq().replay(r.substring(0, eq), r.substring(eq + 1));
        }
        for (final String e : engine) {
            final int eq = e.lastIndexOf('=');
            if (eq <= 0 || eq == e.length() - 1) {
                throw new IllegalArgumentException("--engine must be POD=ENGINE or ENDPOINT=ENGINE: " + e);
            }
            context.zmq().engine(e.substring(0, eq), e.substring(eq + 1));
        }
        aeron.forEach(context.aeron()::addChannel);
        if (aeronStreamId != null) {
            context.aeron().streamId(aeronStreamId);
        }
        if (aeronDir != null) {
            context.aeron().dir(aeronDir);
        }
        if (embeddedDriver != null) {
            context.aeron().embeddedDriver(embeddedDriver);
        }
        if (aeronTermLength != null) {
            context.aeron().termLength(aeronTermLength);
        }
        if (aeronAllowRemote != null) {
            context.aeron().allowRemote(aeronAllowRemote);
        }
        aeronPods.forEach(context.aeron()::addPod);
    }

    private void applyAgents(final DaemonContext context) {
        if (idle != null) {
            context.agents().idleStrategy(idle);
        }
        if (zmqIngestCpu != null) {
            context.agents().zmqIngestCpu(parseCpu(DaemonConfiguration.ZMQ_INGEST_CPU_PROP_NAME, zmqIngestCpu));
        }
        if (zmqIngestIdle != null) {
            context.agents().zmqIngestIdle(zmqIngestIdle);
        }
        if (zmqReplayCpu != null) {
            context.agents().zmqReplayCpu(parseCpu(DaemonConfiguration.ZMQ_REPLAY_CPU_PROP_NAME, zmqReplayCpu));
        }
        if (zmqReplayIdle != null) {
            context.agents().zmqReplayIdle(zmqReplayIdle);
        }
        if (aeronIngestCpu != null) {
            context.agents().aeronIngestCpu(parseCpu(DaemonConfiguration.AERON_INGEST_CPU_PROP_NAME,
                aeronIngestCpu));
        }
        if (aeronIngestIdle != null) {
            context.agents().aeronIngestIdle(aeronIngestIdle);
        }
        if (writerCpus != null) {
            final boolean none = writerCpus.size() == 1 && NONE.equals(writerCpus.get(0));
            context.agents().writerCpus(none ? new int[0] : writerCpus.stream()
                .mapToInt(c -> cpuOfList(DaemonConfiguration.WRITER_CPUS_PROP_NAME, c)).toArray());
        }
        if (writerIdle != null) {
            context.agents().writerIdle(writerIdle);
        }
        if (maintenanceCpu != null) {
            context.agents().maintenanceCpu(parseCpu(DaemonConfiguration.MAINTENANCE_CPU_PROP_NAME,
                maintenanceCpu));
        }
        if (maintenanceIdle != null) {
            context.agents().maintenanceIdle(maintenanceIdle);
        }
    }

    private static int cpuOfList(final String key, final String text) {
        int cpu;
        try {
            cpu = parseCpu(key, text);
        } catch (final ConfigException ex) {
            cpu = -1;
        }
        if (cpu < 0) {
            throw new ConfigException(key, "must be " + NONE + " or a list of CPU numbers in "
                + AgentSettings.CPU_RANGE + ": " + text);
        }
        return cpu;
    }

    static ZmqEndpoint parseZmq(final String spec) {
        final int eq = spec.indexOf('=');
        if (eq <= 0 || eq == spec.length() - 1) {
            throw new IllegalArgumentException("--zmq must be POD[@MODEL]=ENDPOINT: " + spec);
        }
        final String left = spec.substring(0, eq);
        final String endpoint = spec.substring(eq + 1);
        final int at = left.indexOf('@');
        final String pod = at < 0 ? left : left.substring(0, at);
        final String model = at < 0 ? null : left.substring(at + 1);
        return new ZmqEndpoint(endpoint, "*".equals(pod) ? null : pod, model == null || model.isEmpty() ? null : model,
            null);
    }
}
