package io.kvidx.daemon.config;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.ffm.SharedFiles;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.YieldingIdleStrategy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Everything the daemon needs to run: index geometry, writers, transports. Fluent setters; defaults from
 * {@link Configuration}; {@link #conclude()} validates once.
 *
 * <p><b>Note:</b> not thread safe; fill it in on one thread before starting the daemon.
 */
public final class DaemonContext {
    private Path dir;
    private String cell;
    private String group = Configuration.GROUP_DEFAULT;
    private SharedFiles sharedFiles;
    private int blockSize = Configuration.BLOCK_SIZE_DEFAULT;
    private long capacityBlocks = Configuration.CAPACITY_BLOCKS_DEFAULT;
    private int shardCount = Configuration.SHARD_COUNT_DEFAULT;
    private int maxPods = Configuration.MAX_PODS_DEFAULT;
    private int writers = Configuration.WRITERS_DEFAULT;
    private int writerQueueLength = Configuration.WRITER_QUEUE_LENGTH_DEFAULT;
    private long podTimeoutMs = Configuration.POD_TIMEOUT_MS_DEFAULT;
    private long heartbeatIntervalMs = Configuration.HEARTBEAT_INTERVAL_MS_DEFAULT;
    private int replayTimeoutMs = Configuration.REPLAY_TIMEOUT_MS_DEFAULT;
    private String idleStrategy = Configuration.IDLE_STRATEGY_DEFAULT;
    private boolean deleteOnClose;
    private final List<ZmqEndpoint> zmqEndpoints = new ArrayList<>();
    private final List<String> aeronChannels = new ArrayList<>();
    private int aeronStreamId = Configuration.AERON_STREAM_ID_DEFAULT;
    private String aeronDir;
    private boolean embeddedDriver = Configuration.EMBEDDED_DRIVER_DEFAULT;
    private int aeronTermLength = Configuration.AERON_TERM_LENGTH_DEFAULT;
    private int podMaxBlocks = Configuration.POD_MAX_BLOCKS_DEFAULT;
    private int tierMapBlocks = IndexWriterContext.Configuration.TIER_MAP_BLOCKS_DEFAULT;
    private String replayGapPolicy = Configuration.REPLAY_GAP_POLICY_DEFAULT;
    private long checkpointIntervalMs = Configuration.CHECKPOINT_INTERVAL_MS_DEFAULT;
    private String metrics = Configuration.METRICS_DEFAULT;
    private boolean concluded;

    /**
     * Validates and applies defaults.
     *
     * @return this.
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
        sharedFiles = SharedFiles.forGroup(group);
        if (writers < 1 || writers > 64) {
            throw new IllegalArgumentException("writers must be in [1, 64]: " + writers);
        }
        if (Integer.bitCount(writerQueueLength) != 1 || writerQueueLength < 1 << 12) {
            throw new IllegalArgumentException("writer queue length must be a power of two >= 4096: "
                + writerQueueLength);
        }
        if (podTimeoutMs < 0 || heartbeatIntervalMs < 1 || replayTimeoutMs < 1) {
            throw new IllegalArgumentException("timeouts must be positive (pod timeout 0 = never)");
        }
        idleStrategySupplier(idleStrategy);
        if (aeronDir == null) {
            aeronDir = Path.of("/dev/shm").toFile().isDirectory() ? "/dev/shm/kvidx-aeron-" + cell
                : System.getProperty("java.io.tmpdir") + "/kvidx-aeron-" + cell;
        }
        if (podMaxBlocks < 1 || podMaxBlocks > (1 << 28)) {
            throw new IllegalArgumentException(Configuration.POD_MAX_BLOCKS_PROP_NAME + " must be in [1, 2^28]: "
                + podMaxBlocks);
        }
        if (!"clear".equals(replayGapPolicy) && !"keep".equals(replayGapPolicy)) {
            throw new IllegalArgumentException(Configuration.REPLAY_GAP_POLICY_PROP_NAME
                + " must be clear or keep: " + replayGapPolicy);
        }
        if (checkpointIntervalMs < 1) {
            throw new IllegalArgumentException(Configuration.CHECKPOINT_INTERVAL_MS_PROP_NAME + " must be >= 1: "
                + checkpointIntervalMs);
        }
        if (Integer.bitCount(aeronTermLength) != 1 || aeronTermLength < 64 * 1024) {
            throw new IllegalArgumentException("Aeron term length must be a power of two >= 64 KiB: "
                + aeronTermLength);
        }
        concluded = true;
        return this;
    }

    /**
     * @return an index writer context for this daemon's geometry.
     */
    public IndexWriterContext indexContext() {
        return new IndexWriterContext().dir(dir).cell(cell).blockSize(blockSize).capacityBlocks(capacityBlocks)
            .shardCount(shardCount).maxPods(maxPods).deleteOnClose(deleteOnClose).files(sharedFiles)
            .tierMapBlocks(tierMapBlocks);
    }

    /**
     * @param name busy, yielding, backoff or sleeping.
     * @return a supplier of that idle strategy.
     */
    public static Supplier<IdleStrategy> idleStrategySupplier(final String name) {
        return switch (name) {
            case "busy" -> BusySpinIdleStrategy::new;
            case "yielding" -> YieldingIdleStrategy::new;
            case "backoff" -> () -> new BackoffIdleStrategy(10, 20, TimeUnit.MICROSECONDS.toNanos(1),
                TimeUnit.MILLISECONDS.toNanos(1));
            case "sleeping" -> () -> new SleepingMillisIdleStrategy(1);
            default -> throw new IllegalArgumentException("idle strategy must be busy, yielding, backoff or "
                + "sleeping: " + name);
        };
    }

    /**
     * @return supplier of the configured idle strategy.
     */
    public Supplier<IdleStrategy> idleStrategySupplier() {
        return idleStrategySupplier(idleStrategy);
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
     * @param shardCount index shards (power of two).
     * @return this.
     */
    public DaemonContext shardCount(final int shardCount) {
        this.shardCount = shardCount;
        return this;
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
     * @param name busy, yielding, backoff (default) or sleeping.
     * @return this.
     */
    public DaemonContext idleStrategy(final String name) {
        this.idleStrategy = name;
        return this;
    }

    /**
     * @return idle strategy name.
     */
    public String idleStrategy() {
        return idleStrategy;
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
     * @param endpoint a vLLM or SGLang publisher to subscribe to.
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
     * @param hostPort where to serve Prometheus metrics ({@code HOST:PORT}; port 0 picks a free one), or null for
     *                 no metrics endpoint.
     * @return this.
     */
    public DaemonContext metrics(final String hostPort) {
        if (hostPort != null) {
            io.kvidx.daemon.ops.DaemonMetrics.parseAddress(hostPort);
        }
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
     * Defaults. Property names are those of the YAML config file.
     */
    public static final class Configuration {
        /** Group key. */
        public static final String GROUP_PROP_NAME = "group";
        /** Default group: none, i.e. the daemon user's primary group. */
        public static final String GROUP_DEFAULT = null;
        /** Block size key. */
        public static final String BLOCK_SIZE_PROP_NAME = "blockSize";
        /** Default block size (vLLM's). */
        public static final int BLOCK_SIZE_DEFAULT = 16;
        /** Capacity key. */
        public static final String CAPACITY_BLOCKS_PROP_NAME = "capacityBlocks";
        /** Default capacity. */
        public static final long CAPACITY_BLOCKS_DEFAULT = 1L << 20;
        /** Shards key. */
        public static final String SHARD_COUNT_PROP_NAME = "shards";
        /** Default shards. */
        public static final int SHARD_COUNT_DEFAULT = 256;
        /** Max pods key. */
        public static final String MAX_PODS_PROP_NAME = "maxPods";
        /** Default max pods. */
        public static final int MAX_PODS_DEFAULT = 256;
        /** Writers key. */
        public static final String WRITERS_PROP_NAME = "writers";
        /** Default writers: one (the machine may have few cores). */
        public static final int WRITERS_DEFAULT = 1;
        /** Writer queue key. */
        public static final String WRITER_QUEUE_LENGTH_PROP_NAME = "writerQueueLength";
        /** Default writer queue: 8 MiB (largest batch 1 MiB). */
        public static final int WRITER_QUEUE_LENGTH_DEFAULT = 8 << 20;
        /** Pod timeout key. */
        public static final String POD_TIMEOUT_MS_PROP_NAME = "podTimeoutMs";
        /** Default pod timeout. */
        public static final long POD_TIMEOUT_MS_DEFAULT = 30_000;
        /** Heartbeat interval key. */
        public static final String HEARTBEAT_INTERVAL_MS_PROP_NAME = "heartbeatIntervalMs";
        /** Default heartbeat interval. */
        public static final long HEARTBEAT_INTERVAL_MS_DEFAULT = 500;
        /** Replay timeout key. */
        public static final String REPLAY_TIMEOUT_MS_PROP_NAME = "replayTimeoutMs";
        /** Default replay timeout. */
        public static final int REPLAY_TIMEOUT_MS_DEFAULT = 2_000;
        /** Idle strategy key. */
        public static final String IDLE_STRATEGY_PROP_NAME = "idleStrategy";
        /** Default idle strategy: backoff (spin, yield, then park up to 1 ms). */
        public static final String IDLE_STRATEGY_DEFAULT = "backoff";
        /** Default Aeron stream id of kvidx events. */
        public static final int AERON_STREAM_ID_DEFAULT = 7001;
        /** Run an embedded media driver by default. */
        public static final boolean EMBEDDED_DRIVER_DEFAULT = true;
        /** Default term buffer length: 1 MiB (Aeron's 64 MiB IPC default is far too large here). */
        public static final int AERON_TERM_LENGTH_DEFAULT = 1 << 20;
        /** Blocks per pod key. */
        public static final String POD_MAX_BLOCKS_PROP_NAME = "podMaxBlocks";
        /**
         * Default most blocks per pod: 131,072 (2M tokens at block size 16); each pod's map file starts at 128 KiB
         * and doubles as the pod fills, to at most 8 MiB of tmpfs.
         */
        public static final int POD_MAX_BLOCKS_DEFAULT = 1 << 17;
        /** Host tier map blocks per pod key (default: {@code IndexWriterContext.Configuration}). */
        public static final String TIER_MAP_BLOCKS_PROP_NAME = "tierMapBlocks";
        /** Replay gap policy key. */
        public static final String REPLAY_GAP_POLICY_PROP_NAME = "replayGapPolicy";
        /** Default replay gap policy: clear the pod, rebuild from the engine's buffer. */
        public static final String REPLAY_GAP_POLICY_DEFAULT = "clear";
        /** Checkpoint interval key. */
        public static final String CHECKPOINT_INTERVAL_MS_PROP_NAME = "checkpointIntervalMs";
        /** Default checkpoint interval. */
        public static final long CHECKPOINT_INTERVAL_MS_DEFAULT = 200;
        /** Metrics endpoint key. */
        public static final String METRICS_PROP_NAME = "metrics";
        /** Default: no metrics endpoint. */
        public static final String METRICS_DEFAULT = null;

        private Configuration() {
        }
    }
}
