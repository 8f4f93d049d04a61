package io.kvidx.daemon.config;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.ffm.SharedFiles;

import java.nio.file.Path;
import java.util.List;

/**
 * Everything the daemon needs to run: the cell and its index geometry, writers, operations (metrics, counters
 * printing, mlock), and the parts it owns: the ZeroMQ transport ({@link #zmq()}), the Aeron transport
 * ({@link #aeron()}) and the agent threads ({@link #agents()}). Fluent setters; defaults from
 * {@link DaemonConfiguration}; {@link #conclude()} validates once, its own values first, then the ZeroMQ, agent and
 * Aeron settings, throwing a {@link ConfigException} that names the YAML key and the accepted range.
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
    private boolean deleteOnClose;
    private int podMaxBlocks = DaemonConfiguration.POD_MAX_BLOCKS_DEFAULT;
    private int tierMapBlocks = IndexWriterContext.Configuration.TIER_MAP_BLOCKS_DEFAULT;
    private String metrics = DaemonConfiguration.METRICS_DEFAULT;
    private boolean metricsAllowRemote = DaemonConfiguration.METRICS_ALLOW_REMOTE_DEFAULT;
    private String peer = DaemonConfiguration.PEER_DEFAULT;
    private boolean peerOptional = DaemonConfiguration.PEER_OPTIONAL_DEFAULT;
    private long peerTimeoutMs = DaemonConfiguration.PEER_TIMEOUT_MS_DEFAULT;
    private long snapshotMaxBytes = DaemonConfiguration.SNAPSHOT_MAX_BYTES_DEFAULT;
    private long snapshotTimeoutMs = DaemonConfiguration.SNAPSHOT_TIMEOUT_MS_DEFAULT;
    private String http = DaemonConfiguration.HTTP_DEFAULT;
    private int httpThreads = DaemonConfiguration.HTTP_THREADS_DEFAULT;
    private String httpIdle = DaemonConfiguration.HTTP_IDLE_DEFAULT;
    private int httpMaxBodyBytes = DaemonConfiguration.HTTP_MAX_BODY_BYTES_DEFAULT;
    private ConfigReload configReload;
    private String keyScheme = DaemonConfiguration.KEY_SCHEME_DEFAULT;
    private String zmqBind = DaemonConfiguration.ZMQ_BIND_DEFAULT;
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
        if (metrics != null) {
            try {
                io.kvidx.daemon.metrics.DaemonMetrics.parseAddress(metrics);
            } catch (final IllegalArgumentException ex) {
                throw new ConfigException(DaemonConfiguration.METRICS_PROP_NAME,
                    "must be HOST:PORT with a port in [0, 65535]: " + metrics);
            }
            if (!metricsAllowRemote && !NetworkScope.isLoopback(NetworkScope.hostOf(metrics))) {
                throw new ConfigException(DaemonConfiguration.METRICS_PROP_NAME, "must be on a loopback address "
                    + "(127.0.0.1:PORT, [::1]:PORT, localhost:PORT) unless "
                    + DaemonConfiguration.METRICS_ALLOW_REMOTE_PROP_NAME + " (--metrics-allow-remote) is set: it "
                    + "exports pod ids and models to anyone who reaches it: " + metrics);
            }
        }
        if (http != null) {
            try {
                io.kvidx.daemon.metrics.DaemonMetrics.parseAddress(http);
            } catch (final IllegalArgumentException ex) {
                throw new ConfigException(DaemonConfiguration.HTTP_PROP_NAME,
                    "must be HOST:PORT with a port in [0, 65535]: " + http);
            }
        }
        try {
            IndexDescriptor.keySchemeOf(keyScheme);
        } catch (final IllegalArgumentException ex) {
            throw new ConfigException(DaemonConfiguration.KEY_SCHEME_PROP_NAME, "must be kvidx or xxh3-chain: "
                + keyScheme);
        }
        if (zmqBind != null && !zmqBind.startsWith("tcp://") && !zmqBind.startsWith("ipc://")) {
            throw new ConfigException(DaemonConfiguration.ZMQ_BIND_PROP_NAME,
                "must be a ZeroMQ endpoint such as tcp://127.0.0.1:5557: " + zmqBind);
        }
        if (!DaemonConfiguration.HTTP_IDLE_BLOCK.equals(httpIdle)
            && !DaemonConfiguration.HTTP_IDLE_BUSY_SPIN.equals(httpIdle)) {
            throw new ConfigException(DaemonConfiguration.HTTP_IDLE_PROP_NAME, "must be "
                + DaemonConfiguration.HTTP_IDLE_BLOCK + " or " + DaemonConfiguration.HTTP_IDLE_BUSY_SPIN + ": "
                + httpIdle);
        }
        ConfigException.range(DaemonConfiguration.HTTP_THREADS_PROP_NAME, httpThreads, 1,
            DaemonConfiguration.HTTP_THREADS_MAX);
        ConfigException.range(DaemonConfiguration.HTTP_MAX_BODY_BYTES_PROP_NAME, httpMaxBodyBytes,
            DaemonConfiguration.HTTP_MAX_BODY_BYTES_MIN, DaemonConfiguration.HTTP_MAX_BODY_BYTES_MAX);
        if (peer != null) {
            try {
                io.kvidx.daemon.snapshot.PeerClient.dumpUri(peer);
            } catch (final IllegalArgumentException ex) {
                throw new ConfigException(DaemonConfiguration.PEER_PROP_NAME,
                    "must be the URL of a daemon's HTTP API, http://HOST:PORT: " + peer);
            }
        }
        ConfigException.range(DaemonConfiguration.PEER_TIMEOUT_MS_PROP_NAME, peerTimeoutMs, 1,
            DaemonConfiguration.PEER_TIMEOUT_MS_MAX);
        ConfigException.range(DaemonConfiguration.SNAPSHOT_MAX_BYTES_PROP_NAME, snapshotMaxBytes,
            DaemonConfiguration.SNAPSHOT_MAX_BYTES_MIN, DaemonConfiguration.SNAPSHOT_MAX_BYTES_MAX);
        if (snapshotTimeoutMs < 1) {
            throw new IllegalArgumentException("snapshot timeout must be >= 1 ms: " + snapshotTimeoutMs);
        }
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
     * @param url base URL of a running daemon's HTTP API ({@code http://HOST:PORT}) whose snapshot this daemon loads
     *            at start when its index is created new, so that it continues from the peer's state and replays each
     *            ZeroMQ engine from there; null (the default) to start empty. Ignored when the index is re-attached.
     * @return this.
     */
    public DaemonContext peer(final String url) {
        this.peer = url;
        return this;
    }

    /**
     * @return the peer to catch up from at start, or null for none.
     */
    public String peer() {
        return peer;
    }

    /**
     * @param optional true: start empty (logged) when the peer's snapshot cannot be fetched or is corrupt; false
     *                 (the default): fail the start. A snapshot of another block size or key scheme always fails it.
     * @return this.
     */
    public DaemonContext peerOptional(final boolean optional) {
        this.peerOptional = optional;
        return this;
    }

    /**
     * @return whether the daemon starts empty when the peer's snapshot cannot be fetched.
     */
    public boolean peerOptional() {
        return peerOptional;
    }

    /**
     * @param ms bound on connecting to the peer and on the whole snapshot download.
     * @return this.
     */
    public DaemonContext peerTimeoutMs(final long ms) {
        this.peerTimeoutMs = ms;
        return this;
    }

    /**
     * @return bound on connecting to the peer and on the whole snapshot download.
     */
    public long peerTimeoutMs() {
        return peerTimeoutMs;
    }

    /**
     * @param bytes longest snapshot this daemon takes for a replica or loads from a peer; a longer one is refused.
     * @return this.
     */
    public DaemonContext snapshotMaxBytes(final long bytes) {
        this.snapshotMaxBytes = bytes;
        return this;
    }

    /**
     * @return longest snapshot taken or loaded.
     */
    public long snapshotMaxBytes() {
        return snapshotMaxBytes;
    }

    /**
     * @param ms how long the writers have to answer a snapshot request before it fails.
     * @return this.
     */
    public DaemonContext snapshotTimeoutMs(final long ms) {
        this.snapshotTimeoutMs = ms;
        return this;
    }

    /**
     * @return how long the writers have to answer a snapshot request.
     */
    public long snapshotTimeoutMs() {
        return snapshotTimeoutMs;
    }

    /**
     * @param hostPort where to serve Prometheus metrics ({@code HOST:PORT}; port 0 picks a free one), or null for
     *                 no metrics endpoint.
     * @return this.
     */
    public DaemonContext metrics(final String hostPort) {
        this.metrics = hostPort;
        return this;
    }

    /**
     * @return where to serve Prometheus metrics, or null for none.
     */
    public String metrics() {
        return metrics;
    }

    /**
     * @param allow true to accept a metrics endpoint on a wildcard or non-loopback address (it exports pod ids and
     *              models, unauthenticated); false (default) refuses one at conclude.
     * @return this.
     */
    public DaemonContext metricsAllowRemote(final boolean allow) {
        this.metricsAllowRemote = allow;
        return this;
    }

    /**
     * @return whether the metrics endpoint may be reachable from other hosts.
     */
    public boolean metricsAllowRemote() {
        return metricsAllowRemote;
    }

    /**
     * @param hostPort where to serve the indexer HTTP API ({@code HOST:PORT}; port 0 picks a free one), or null for
     *                 none (the default).
     * @return this.
     */
    public DaemonContext http(final String hostPort) {
        this.http = hostPort;
        return this;
    }

    /**
     * @return where to serve the indexer HTTP API, or null for none.
     */
    public String http() {
        return http;
    }

    /**
     * @param threads HTTP event-loop threads.
     * @return this.
     */
    public DaemonContext httpThreads(final int threads) {
        this.httpThreads = threads;
        return this;
    }

    /**
     * @return HTTP event-loop threads.
     */
    public int httpThreads() {
        return httpThreads;
    }

    /**
     * @param idle how the HTTP event loops wait: {@code block} (default) or {@code busy-spin} (each loop takes a
     *             core; a request skips the thread wake-up, tens of microseconds on a VM).
     * @return this.
     */
    public DaemonContext httpIdle(final String idle) {
        this.httpIdle = idle;
        return this;
    }

    /**
     * @return how the HTTP event loops wait.
     */
    public String httpIdle() {
        return httpIdle;
    }

    /**
     * @param bytes largest HTTP request body; a larger one is answered 413 without being read further.
     * @return this.
     */
    public DaemonContext httpMaxBodyBytes(final int bytes) {
        this.httpMaxBodyBytes = bytes;
        return this;
    }

    /**
     * @return largest HTTP request body, in bytes.
     */
    public int httpMaxBodyBytes() {
        return httpMaxBodyBytes;
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
     * @param endpoint a ZeroMQ endpoint to bind one SUB socket to, which engines connect to (llm-d's centralized
     *                 mode; pods named by the topic), or null for none.
     * @return this.
     */
    public DaemonContext zmqBind(final String endpoint) {
        this.zmqBind = endpoint;
        return this;
    }

    /**
     * @return the bound SUB socket's endpoint, or null for none.
     */
    public String zmqBind() {
        return zmqBind;
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
