package io.kvidx.daemon.cli;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.daemon.config.ConfigException;
import io.kvidx.daemon.config.DaemonConfigFile;
import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.DaemonSettings;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.agrona.concurrent.ShutdownSignalBarrier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code kvidx daemon}: runs the daemon in the foreground until SIGINT or SIGTERM, then shuts down cleanly. Every
 * option sets the same thing as one YAML key of {@code --config} ({@link DaemonSettings}); an option given here
 * wins over the file. Defaults come from {@link DaemonConfiguration}. The options of the cell, its index and its
 * writers are declared here; the transports' ({@link TransportOptions}), the network doors' ({@link ServingOptions})
 * and the agent threads' ({@link AgentOptions}) in mixins.
 */
@Command(name = "daemon", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Run the index daemon: ingest engines' KV events into the shared-memory index until SIGINT/SIGTERM.")
public final class DaemonCommand implements Callable<Integer> {
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

    @Option(names = "--pod-max-blocks", paramLabel = "N", description = "Most blocks per pod the daemon tracks "
        + "(each pod's engine-hash map; default " + DaemonConfiguration.POD_MAX_BLOCKS_DEFAULT + "). A pod holding "
        + "more loses its least recently stored blocks.")
    private Integer podMaxBlocks;

    @Option(names = "--tier-map-blocks", paramLabel = "N", description = "Most blocks per pod whose storage tier "
        + "(GPU, CPU, disk; local or remote) the host tier map keeps for routers (default "
        + IndexWriterContext.Configuration.TIER_MAP_BLOCKS_DEFAULT + "). A pod holding more loses the tiers of its "
        + "least recently updated blocks, which then score as GPU.")
    private Integer tierMapBlocks;

    @Option(names = {"--stats-interval-ms", "--stats-ms"}, paramLabel = "MS", description = "Print counters every MS "
        + "ms; 0 = only at exit (default " + DaemonConfiguration.STATS_INTERVAL_MS_DEFAULT + ").")
    private Long statsMs;

    // After the cell's and the index's options: picocli adds a mixin's options where the mixin is declared (help
    // lists them in this order).
    @Mixin
    private TransportOptions transports;

    @Mixin
    private ServingOptions serving;

    @Mixin
    private AgentOptions agentOptions;

    @Mixin
    private DiscoveryOptions discovery;

    @Mixin
    private JetStreamOptions jetstream;

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
        transports.applyZmqSettingsTo(context);
        if (podMaxBlocks != null) {
            context.podMaxBlocks(podMaxBlocks);
        }
        if (statsMs != null) {
            context.statsIntervalMs(statsMs);
        }
        if (tierMapBlocks != null) {
            context.tierMapBlocks(tierMapBlocks);
        }
        serving.applyTo(context);
        agentOptions.applyTo(context);
        transports.applyEndpointsTo(context);
        discovery.applyTo(context);
        jetstream.applyTo(context);
    }
}
