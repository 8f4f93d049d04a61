package io.kvidx.daemon.config;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.ffm.SharedFiles;

import java.nio.file.Path;
import java.util.List;

/**
 * Everything the daemon needs to run: the cell and its index geometry, writers, operations (counters printing,
 * mlock), and the parts it owns: the ZeroMQ transport ({@link #zmq()}), the Aeron transport ({@link #aeron()}), the
 * agent threads ({@link #agents()}), the metrics endpoint and HTTP API ({@link #serving()}) and snapshots
 * ({@link #snapshots()}). Fluent setters; defaults from {@link DaemonConfiguration}; {@link #conclude()} validates
 * once, its own values first (the serving and snapshot settings among them), then the ZeroMQ, agent and Aeron
 * settings, throwing a {@link ConfigException} that names the YAML key and the accepted range.
 * {@link DaemonConfigFile} reads and prints it as YAML; {@link DaemonSettings} lists every key with its
 * command-line option.
 *
 * <p><b>Note:</b> not thread safe; fill it in on one thread before starting the daemon.
 */
public final class DaemonContext {
    private Path dir;
    private String cell;
    private String group = DaemonConfiguration.GROUP_DEFAULT;
    private SharedFiles sharedFiles;
    private int blockSize = DaemonConfiguration.BLOCK_SIZE_DEFAULT;
    private long capacityBlocks = DaemonConfiguration.CAPACITY_BLOCKS_DEFAULT;
    private int shardCount = DaemonConfiguration.SHARD_COUNT_DEFAULT;
    private int maxPods = DaemonConfiguration.MAX_PODS_DEFAULT;
    private int writers = DaemonConfiguration.WRITERS_DEFAULT;
    private int writerQueueLength = DaemonConfiguration.WRITER_QUEUE_LENGTH_DEFAULT;
    private long podTimeoutMs = DaemonConfiguration.POD_TIMEOUT_MS_DEFAULT;
    private long heartbeatIntervalMs = DaemonConfiguration.HEARTBEAT_INTERVAL_MS_DEFAULT;
    private int maxChainLength = DaemonConfiguration.MAX_CHAIN_LENGTH_DEFAULT;
    private long statsIntervalMs = DaemonConfiguration.STATS_INTERVAL_MS_DEFAULT;
    private boolean mlockIndex = DaemonConfiguration.MLOCK_INDEX_DEFAULT;
    private final AgentSettings agents = new AgentSettings();
    private final ZmqSettings zmq = new ZmqSettings();
    private final AeronSettings aeron = new AeronSettings();
    private final ServingSettings serving = new ServingSettings();
    private final SnapshotSettings snapshots = new SnapshotSettings();
    private final DiscoverySettings discovery = new DiscoverySettings();
    private final JetStreamSettings jetstream = new JetStreamSettings();
    private boolean deleteOnClose;
    private int podMaxBlocks = DaemonConfiguration.POD_MAX_BLOCKS_DEFAULT;
    private int tierMapBlocks = IndexWriterContext.Configuration.TIER_MAP_BLOCKS_DEFAULT;
    private ConfigReload configReload;
    private String keyScheme = DaemonConfiguration.KEY_SCHEME_DEFAULT;
    private boolean concluded;

    /**
     * Validates and applies defaults.
     *
     * @return this.
     * @throws ConfigException naming the key of the first value out of range.
     */
    public DaemonContext conclude() {
        if (concluded) {
            return this;
        }
        if (dir == null) {
            dir = IndexConfiguration.dir();
        }
        if (cell == null) {
            cell = IndexConfiguration.cell();
        }
        try {
            IndexConfiguration.indexFile(dir, cell);
        } catch (final IllegalArgumentException ex) {
            throw new ConfigException(DaemonConfiguration.CELL_PROP_NAME, "must be a plain non-empty name: " + cell);
        }
        try {
            sharedFiles = SharedFiles.forGroup(group);
        } catch (final IllegalArgumentException ex) {
            throw new ConfigException(DaemonConfiguration.GROUP_PROP_NAME, "must name an existing group: unknown "
                + "group '" + group + "'");
        }
        checkGeometry();
        ConfigException.range(DaemonConfiguration.WRITERS_PROP_NAME, writers, 1, DaemonConfiguration.WRITERS_MAX);
        ConfigException.powerOfTwo(DaemonConfiguration.WRITER_QUEUE_LENGTH_PROP_NAME, writerQueueLength,
            DaemonConfiguration.WRITER_QUEUE_LENGTH_MIN, DaemonConfiguration.WRITER_QUEUE_LENGTH_MAX);
        ConfigException.range(DaemonConfiguration.POD_TIMEOUT_MS_PROP_NAME, podTimeoutMs, 0, Long.MAX_VALUE);
        ConfigException.range(DaemonConfiguration.HEARTBEAT_INTERVAL_MS_PROP_NAME, heartbeatIntervalMs, 1,
            DaemonConfiguration.HEARTBEAT_INTERVAL_MS_MAX);
        ConfigException.range(DaemonConfiguration.POD_MAX_BLOCKS_PROP_NAME, podMaxBlocks, 1,
            DaemonConfiguration.POD_MAX_BLOCKS_MAX);
        ConfigException.range(DaemonConfiguration.STATS_INTERVAL_MS_PROP_NAME, statsIntervalMs, 0, Long.MAX_VALUE);
        serving.conclude();
        discovery.conclude();
        try {
            IndexDescriptor.keySchemeOf(keyScheme);
        } catch (final IllegalArgumentException ex) {
            throw new ConfigException(DaemonConfiguration.KEY_SCHEME_PROP_NAME, "must be kvidx or xxh3-chain: "
                + keyScheme);
        }
        snapshots.conclude();
        jetstream.conclude();
        ConfigException.range(DaemonConfiguration.TIER_MAP_BLOCKS_PROP_NAME, tierMapBlocks, 1,
            io.kvidx.client.tiers.TierMapDescriptor.maxEntries());
        zmq.conclude();
        agents.conclude(writers);
        aeron.conclude(cell);
        concluded = true;
        return this;
    }

    private void checkGeometry() {
        ConfigException.range(DaemonConfiguration.BLOCK_SIZE_PROP_NAME, blockSize, 1,
            DaemonConfiguration.BLOCK_SIZE_MAX);
        ConfigException.powerOfTwo(DaemonConfiguration.SHARD_COUNT_PROP_NAME, shardCount, IndexDescriptor.MIN_SHARDS,
            IndexDescriptor.MAX_SHARDS);
        ConfigException.range(DaemonConfiguration.CAPACITY_BLOCKS_PROP_NAME, capacityBlocks, 1,
            IndexWriterContext.maxCapacityBlocks(shardCount, IndexWriterContext.Configuration.MAX_LOAD_FACTOR_DEFAULT));
        ConfigException.range(DaemonConfiguration.MAX_PODS_PROP_NAME, maxPods, 1, IndexDescriptor.MAX_PODS);
        ConfigException.range(DaemonConfiguration.MAX_CHAIN_LENGTH_PROP_NAME, maxChainLength, 1,
            IndexDescriptor.MAX_CHAIN_LIMIT);
    }

    /**
     * @return an index writer context for this daemon's geometry.
     */
    public IndexWriterContext indexContext() {
        return new IndexWriterContext().dir(dir).cell(cell).blockSize(blockSize).capacityBlocks(capacityBlocks)
            .shardCount(shardCount).maxPods(maxPods).maxChainLength(maxChainLength).deleteOnClose(deleteOnClose)
            .files(sharedFiles).tierMapBlocks(tierMapBlocks).keyScheme(IndexDescriptor.keySchemeOf(keyScheme));
    }

    /**
     * @return where each agent thread runs and how it idles.
     */
    public AgentSettings agents() {
        return agents;
    }

    /**
     * @return the ZeroMQ endpoints and how lost batches are recovered.
     */
    public ZmqSettings zmq() {
        return zmq;
    }

    /**
     * @return the Aeron channels, stream and media driver.
     */
    public AeronSettings aeron() {
        return aeron;
    }

    /**
     * @return the metrics endpoint and the indexer HTTP API.
     */
    public ServingSettings serving() {
        return serving;
    }

    /**
     * @return KV events through NATS JetStream (off unless given a URL, ADR 0024).
     */
    public JetStreamSettings jetstream() {
        return jetstream;
    }

    /**
     * @return pod discovery from the Kubernetes API server (off unless given a context).
     */
    public DiscoverySettings discovery() {
        return discovery;
    }

    /**
     * @return the peer to catch up from at start and the snapshots' limits.
     */
    public SnapshotSettings snapshots() {
        return snapshots;
    }

    /**
     * @param dir index directory.
     * @return this.
     */
    public DaemonContext dir(final Path dir) {
        this.dir = dir;
        return this;
    }

    /**
     * @return index directory.
     */
    public Path dir() {
        return dir;
    }

    /**
     * @param cell cell name.
     * @return this.
     */
    public DaemonContext cell(final String cell) {
        this.cell = cell;
        return this;
    }

    /**
     * @return cell name.
     */
    public String cell() {
        return cell;
    }

    /**
     * @param group group of the cell directory and index file, so that routers in it can read the index; null for
     *              the daemon user's primary group.
     * @return this.
     */
    public DaemonContext group(final String group) {
        this.group = group;
        return this;
    }

    /**
     * @return group of the cell directory and index file; null for the daemon user's primary group.
     */
    public String group() {
        return group;
    }

    /**
     * @return modes and group of the cell's files (after conclude).
     */
    public SharedFiles sharedFiles() {
        return sharedFiles;
    }

    /**
     * @param blockSize router block size; engines must use the same.
     * @return this.
     */
    public DaemonContext blockSize(final int blockSize) {
        this.blockSize = blockSize;
        return this;
    }

    /**
     * @return router block size.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * @param capacityBlocks blocks the index holds before evicting.
     * @return this.
     */
    public DaemonContext capacityBlocks(final long capacityBlocks) {
        this.capacityBlocks = capacityBlocks;
        return this;
    }

    /**
     * @return blocks the index holds before evicting.
     */
    public long capacityBlocks() {
        return capacityBlocks;
    }

    /**
     * @param shardCount index shards (power of two).
     * @return this.
     */
    public DaemonContext shardCount(final int shardCount) {
        this.shardCount = shardCount;
        return this;
    }

    /**
     * @return index shards.
     */
    public int shardCount() {
        return shardCount;
    }

    /**
     * @param maxPods pod slots in the index (1..256).
     * @return this.
     */
    public DaemonContext maxPods(final int maxPods) {
        this.maxPods = maxPods;
        return this;
    }

    /**
     * @return pod slots in the index.
     */
    public int maxPods() {
        return maxPods;
    }

    /**
     * @param maxChainLength longest chain (in blocks) a query of the index accepts.
     * @return this.
     */
    public DaemonContext maxChainLength(final int maxChainLength) {
        this.maxChainLength = maxChainLength;
        return this;
    }

    /**
     * @return longest chain a query accepts.
     */
    public int maxChainLength() {
        return maxChainLength;
    }

    /**
     * @param writers writer agents (threads).
     * @return this.
     */
    public DaemonContext writers(final int writers) {
        this.writers = writers;
        return this;
    }

    /**
     * @return writer agents.
     */
    public int writers() {
        return writers;
    }

    /**
     * @param bytes bytes per writer queue (power of two); the largest batch is an eighth of it.
     * @return this.
     */
    public DaemonContext writerQueueLength(final int bytes) {
        this.writerQueueLength = bytes;
        return this;
    }

    /**
     * @return bytes per writer queue.
     */
    public int writerQueueLength() {
        return writerQueueLength;
    }

    /**
     * @param ms silence (no event, no heartbeat) after which a pod is taken down; 0 = never.
     * @return this.
     */
    public DaemonContext podTimeoutMs(final long ms) {
        this.podTimeoutMs = ms;
        return this;
    }

    /**
     * @return pod timeout.
     */
    public long podTimeoutMs() {
        return podTimeoutMs;
    }

    /**
     * @param ms heartbeat interval (index heartbeat and transport liveness).
     * @return this.
     */
    public DaemonContext heartbeatIntervalMs(final long ms) {
        this.heartbeatIntervalMs = ms;
        return this;
    }

    /**
     * @return heartbeat interval.
     */
    public long heartbeatIntervalMs() {
        return heartbeatIntervalMs;
    }

    /**
     * Sets {@link AgentSettings#idleStrategy(String)}: the idle strategy of the ingest and writer agents that name
     * none of their own.
     *
     * @param name an {@link IdleStrategies} name.
     * @return this.
     */
    public DaemonContext idleStrategy(final String name) {
        agents.idleStrategy(name);
        return this;
    }

    /**
     * @param ms how often the command line prints the counters (0: only at exit).
     * @return this.
     */
    public DaemonContext statsIntervalMs(final long ms) {
        this.statsIntervalMs = ms;
        return this;
    }

    /**
     * @return how often the command line prints the counters (0: only at exit).
     */
    public long statsIntervalMs() {
        return statsIntervalMs;
    }

    /**
     * @param mlock lock the index file's pages into RAM ({@code mlock}); a failure is logged and the daemon runs on.
     * @return this.
     */
    public DaemonContext mlockIndex(final boolean mlock) {
        this.mlockIndex = mlock;
        return this;
    }

    /**
     * @return whether the index file's pages are locked into RAM.
     */
    public boolean mlockIndex() {
        return mlockIndex;
    }

    /**
     * @param deleteOnClose delete the index file on close.
     * @return this.
     */
    public DaemonContext deleteOnClose(final boolean deleteOnClose) {
        this.deleteOnClose = deleteOnClose;
        return this;
    }

    /**
     * @param blocks most blocks each pod's engine-hash map holds (its file is sized for it); a pod holding more
     *               loses its least recently stored blocks from the map and the index, counted.
     * @return this.
     */
    public DaemonContext podMaxBlocks(final int blocks) {
        this.podMaxBlocks = blocks;
        return this;
    }

    /**
     * @return most blocks per pod.
     */
    public int podMaxBlocks() {
        return podMaxBlocks;
    }

    /**
     * @param blocks most blocks per pod whose tiers (media, locality) the host tier map beside the index holds;
     *               one more evicts the least recently updated (counted), which then scores as GPU.
     * @return this.
     */
    public DaemonContext tierMapBlocks(final int blocks) {
        this.tierMapBlocks = blocks;
        return this;
    }

    /**
     * @return most blocks per pod in the host tier map.
     */
    public int tierMapBlocks() {
        return tierMapBlocks;
    }

    /**
     * @param scheme how the cell keys blocks: {@code kvidx} (default: kvidx's router keys, docs/keys.md) or
     *               {@code xxh3-chain} (Mooncake's standard chained XXH3-64, for routers that hash prompts
     *               themselves; blocks with multimodal items are not keyed).
     * @return this.
     */
    public DaemonContext keyScheme(final String scheme) {
        this.keyScheme = scheme;
        return this;
    }

    /**
     * @return the key scheme's name.
     */
    public String keyScheme() {
        return keyScheme;
    }

    /**
     * Where the configured subscriptions come from when the configuration file changes.
     *
     * @param file      the YAML file to watch.
     * @param endpoints reads the file again (with the command line's {@code --zmq} flags) and returns the
     *                  configured subscriptions; throws naming the problem when the file is invalid.
     */
    public record ConfigReload(Path file, java.util.function.Supplier<List<ZmqEndpoint>> endpoints) {
    }

    /**
     * @param reload how to re-read the configured subscriptions when the file changes, or null for never.
     * @return this.
     */
    public DaemonContext configReload(final ConfigReload reload) {
        this.configReload = reload;
        return this;
    }

    /**
     * @return how to re-read the configured subscriptions, or null.
     */
    public ConfigReload configReload() {
        return configReload;
    }
}
