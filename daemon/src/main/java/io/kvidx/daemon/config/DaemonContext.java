package io.kvidx.daemon.config;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.ffm.SharedFiles;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Everything the daemon needs to run: index geometry, writers, transports, agent threads ({@link #agents()}).
 * Fluent setters; defaults from {@link DaemonConfiguration}; {@link #conclude()} validates once, throwing a
 * {@link ConfigException} that names the YAML key and the accepted range. {@link DaemonConfigFile} reads and prints
 * it as YAML; {@link DaemonSettings} lists every key with its command-line option.
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
    private int replayTimeoutMs = DaemonConfiguration.REPLAY_TIMEOUT_MS_DEFAULT;
    private int maxChainLength = DaemonConfiguration.MAX_CHAIN_LENGTH_DEFAULT;
    private long statsIntervalMs = DaemonConfiguration.STATS_INTERVAL_MS_DEFAULT;
    private boolean mlockIndex = DaemonConfiguration.MLOCK_INDEX_DEFAULT;
    private final AgentSettings agents = new AgentSettings();
    private boolean deleteOnClose;
    private final List<ZmqEndpoint> zmqEndpoints = new ArrayList<>();
    private final List<String> aeronChannels = new ArrayList<>();
    private int aeronStreamId = DaemonConfiguration.AERON_STREAM_ID_DEFAULT;
    private String aeronDir;
    private boolean embeddedDriver = DaemonConfiguration.EMBEDDED_DRIVER_DEFAULT;
    private int aeronTermLength = DaemonConfiguration.AERON_TERM_LENGTH_DEFAULT;
    private int podMaxBlocks = DaemonConfiguration.POD_MAX_BLOCKS_DEFAULT;
    private String replayGapPolicy = DaemonConfiguration.REPLAY_GAP_POLICY_DEFAULT;
    private long checkpointIntervalMs = DaemonConfiguration.CHECKPOINT_INTERVAL_MS_DEFAULT;
    private int tierMapBlocks = IndexWriterContext.Configuration.TIER_MAP_BLOCKS_DEFAULT;
    private String metrics = DaemonConfiguration.METRICS_DEFAULT;
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
        ConfigException.range(DaemonConfiguration.REPLAY_TIMEOUT_MS_PROP_NAME, replayTimeoutMs, 1, Integer.MAX_VALUE);
        ConfigException.range(DaemonConfiguration.POD_MAX_BLOCKS_PROP_NAME, podMaxBlocks, 1,
            DaemonConfiguration.POD_MAX_BLOCKS_MAX);
        if (!DaemonConfiguration.REPLAY_GAP_POLICIES.contains(replayGapPolicy)) {
            throw new ConfigException(DaemonConfiguration.REPLAY_GAP_POLICY_PROP_NAME, "must be one of "
                + String.join(" or ", DaemonConfiguration.REPLAY_GAP_POLICIES) + ": " + replayGapPolicy);
        }
        ConfigException.range(DaemonConfiguration.CHECKPOINT_INTERVAL_MS_PROP_NAME, checkpointIntervalMs, 1,
            Long.MAX_VALUE);
        ConfigException.range(DaemonConfiguration.STATS_INTERVAL_MS_PROP_NAME, statsIntervalMs, 0, Long.MAX_VALUE);
        ConfigException.powerOfTwo(DaemonConfiguration.AERON_TERM_LENGTH_PROP_NAME, aeronTermLength,
            DaemonConfiguration.AERON_TERM_LENGTH_MIN, DaemonConfiguration.AERON_TERM_LENGTH_MAX);
        if (metrics != null) {
            try {
                io.kvidx.daemon.ops.DaemonMetrics.parseAddress(metrics);
            } catch (final IllegalArgumentException ex) {
                throw new ConfigException(DaemonConfiguration.METRICS_PROP_NAME,
                    "must be HOST:PORT with a port in [0, 65535]: " + metrics);
            }
        }
        ConfigException.range(DaemonConfiguration.TIER_MAP_BLOCKS_PROP_NAME, tierMapBlocks, 1,
            io.kvidx.client.tiers.TierMapDescriptor.maxEntries());
        agents.conclude(writers);
        if (aeronDir == null) {
            aeronDir = Path.of("/dev/shm").toFile().isDirectory() ? "/dev/shm/kvidx-aeron-" + cell
                : System.getProperty("java.io.tmpdir") + "/kvidx-aeron-" + cell;
        }
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
            .files(sharedFiles).tierMapBlocks(tierMapBlocks);
    }

    /**
     * @return where each agent thread runs and how it idles.
     */
    public AgentSettings agents() {
        return agents;
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
     * @param ms wait for each replay reply.
     * @return this.
     */
    public DaemonContext replayTimeoutMs(final int ms) {
        this.replayTimeoutMs = ms;
        return this;
    }

    /**
     * @return replay timeout.
     */
    public int replayTimeoutMs() {
        return replayTimeoutMs;
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
     * @param endpoint a vLLM publisher to subscribe to.
     * @return this.
     */
    public DaemonContext addZmq(final ZmqEndpoint endpoint) {
        zmqEndpoints.add(endpoint);
        return this;
    }

    /**
     * Sets the replay endpoint of the ZeroMQ endpoint(s) of a pod.
     *
     * @param podId  pod id.
     * @param replay replay endpoint.
     * @return this.
     */
    public DaemonContext replay(final String podId, final String replay) {
        boolean found = false;
        for (int i = 0; i < zmqEndpoints.size(); i++) {
            if (podId.equals(zmqEndpoints.get(i).podId())) {
                zmqEndpoints.set(i, zmqEndpoints.get(i).withReplay(replay));
                found = true;
            }
        }
        if (!found) {
            throw new IllegalArgumentException("--replay " + podId + "=...: no --zmq endpoint for pod " + podId);
        }
        return this;
    }

    /**
     * @return the ZeroMQ endpoints.
     */
    public List<ZmqEndpoint> zmqEndpoints() {
        return zmqEndpoints;
    }

    /**
     * @param channel an Aeron channel to subscribe to for kvidx SBE events (aeron:ipc, aeron:udp?endpoint=...).
     * @return this.
     */
    public DaemonContext addAeronChannel(final String channel) {
        aeronChannels.add(channel);
        return this;
    }

    /**
     * @return Aeron channels; none means Aeron (and the embedded media driver) is not started.
     */
    public List<String> aeronChannels() {
        return aeronChannels;
    }

    /**
     * @param streamId Aeron stream id of the events.
     * @return this.
     */
    public DaemonContext aeronStreamId(final int streamId) {
        this.aeronStreamId = streamId;
        return this;
    }

    /**
     * @return Aeron stream id.
     */
    public int aeronStreamId() {
        return aeronStreamId;
    }

    /**
     * @param dir Aeron directory (the embedded driver's, or the external driver's to connect to).
     * @return this.
     */
    public DaemonContext aeronDir(final String dir) {
        this.aeronDir = dir;
        return this;
    }

    /**
     * @return Aeron directory.
     */
    public String aeronDir() {
        return aeronDir;
    }

    /**
     * @param embedded true (default) to run an embedded media driver, false to use an external one.
     * @return this.
     */
    public DaemonContext embeddedDriver(final boolean embedded) {
        this.embeddedDriver = embedded;
        return this;
    }

    /**
     * @return true when the daemon runs its own media driver.
     */
    public boolean embeddedDriver() {
        return embeddedDriver;
    }

    /**
     * @param bytes term buffer length of the embedded driver's IPC and UDP publications.
     * @return this.
     */
    public DaemonContext aeronTermLength(final int bytes) {
        this.aeronTermLength = bytes;
        return this;
    }

    /**
     * @return term buffer length.
     */
    public int aeronTermLength() {
        return aeronTermLength;
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
     * @param policy what to do when an engine's replay no longer reaches back to the first missing batch:
     *               {@code clear} (default) clears the pod and rebuilds it from what the engine still buffers (no
     *               block the engine dropped stays indexed); {@code keep} keeps its blocks and marks it suspect.
     * @return this.
     */
    public DaemonContext replayGapPolicy(final String policy) {
        this.replayGapPolicy = policy;
        return this;
    }

    /**
     * @return the replay gap policy, clear or keep.
     */
    public String replayGapPolicy() {
        return replayGapPolicy;
    }

    /**
     * @param ms how often each publisher's applied sequence is recorded in the state directory.
     * @return this.
     */
    public DaemonContext checkpointIntervalMs(final long ms) {
        this.checkpointIntervalMs = ms;
        return this;
    }

    /**
     * @return checkpoint interval.
     */
    public long checkpointIntervalMs() {
        return checkpointIntervalMs;
    }

    /**
     * Sets the event format (engine) of the ZeroMQ endpoint(s) of a pod, or of one endpoint given by its address (for
     * an endpoint whose pods come from the topic).
     *
     * @param podOrEndpoint pod id, or the endpoint's address.
     * @param engine        {@code vllm} or {@code sglang}.
     * @return this.
     */
    public DaemonContext engine(final String podOrEndpoint, final String engine) {
        final ZmqEndpoint.Engine format = ZmqEndpoint.Engine.parse(engine);
        boolean found = false;
        for (int i = 0; i < zmqEndpoints.size(); i++) {
            final ZmqEndpoint e = zmqEndpoints.get(i);
            if (podOrEndpoint.equals(e.podId()) || podOrEndpoint.equals(e.endpoint())) {
                zmqEndpoints.set(i, e.withEngine(format));
                found = true;
            }
        }
        if (!found) {
            throw new IllegalArgumentException("--engine " + podOrEndpoint + "=...: no --zmq endpoint for pod or at "
                + "address " + podOrEndpoint);
        }
        return this;
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
}
