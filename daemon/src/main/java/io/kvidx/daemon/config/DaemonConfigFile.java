package io.kvidx.daemon.config;

import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static io.kvidx.daemon.config.DaemonContext.Configuration.BLOCK_SIZE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.CHECKPOINT_INTERVAL_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.METRICS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.POD_MAX_BLOCKS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.TIER_MAP_BLOCKS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.REPLAY_GAP_POLICY_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.CAPACITY_BLOCKS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.GROUP_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.HEARTBEAT_INTERVAL_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.IDLE_STRATEGY_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.MAX_PODS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.POD_TIMEOUT_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.REPLAY_TIMEOUT_MS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.SHARD_COUNT_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.WRITERS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonContext.Configuration.WRITER_QUEUE_LENGTH_PROP_NAME;

/**
 * Reads the daemon's YAML config file (snakeyaml-engine) into a {@link DaemonContext}. Unknown keys are rejected
 * so that a typo does not silently fall back to a default. Example:
 * <pre>
 * dir: /dev/shm/kvidx
 * cell: default
 * group: kvidx          # of the cell directory and index file, routers in it read (default: primary group)
 * blockSize: 16
 * podTimeoutMs: 30000
 * zmq:
 *   - endpoint: tcp://10.0.0.7:5557
 *     pod: pod-a
 *     model: Qwen/Qwen3-0.6B
 *     replay: tcp://10.0.0.7:5558
 *   - endpoint: tcp://10.0.0.8:5557     # pod and model from the topic kv@pod@model
 *     engine: sglang                    # vllm (default) or sglang
 * </pre>
 */
public final class DaemonConfigFile {
    private static final Set<String> KEYS = Set.of("dir", "cell", GROUP_PROP_NAME, BLOCK_SIZE_PROP_NAME,
        CAPACITY_BLOCKS_PROP_NAME, SHARD_COUNT_PROP_NAME, MAX_PODS_PROP_NAME, WRITERS_PROP_NAME,
        WRITER_QUEUE_LENGTH_PROP_NAME, POD_TIMEOUT_MS_PROP_NAME, HEARTBEAT_INTERVAL_MS_PROP_NAME,
        REPLAY_TIMEOUT_MS_PROP_NAME, IDLE_STRATEGY_PROP_NAME, POD_MAX_BLOCKS_PROP_NAME, REPLAY_GAP_POLICY_PROP_NAME,
        CHECKPOINT_INTERVAL_MS_PROP_NAME, TIER_MAP_BLOCKS_PROP_NAME, "zmq", "aeron");
    private static final Set<String> AERON_KEYS = Set.of("channels", "streamId", "dir", "embeddedDriver",
        "termLength");
    private static final Set<String> ZMQ_KEYS = Set.of("endpoint", "pod", "model", "replay", "engine");

    private DaemonConfigFile() {
    }

    /**
     * @param file    the YAML file.
     * @param context filled in.
     * @return the context.
     */
    public static DaemonContext load(final Path file, final DaemonContext context) {
        final String text;
        try {
            text = Files.readString(file);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot read config " + file, ex);
        }
        return parse(text, context, file.toString());
    }

    /**
     * @param yaml    YAML text.
     * @param context filled in.
     * @param source  name for error messages.
     * @return the context.
     */
    public static DaemonContext parse(final String yaml, final DaemonContext context, final String source) {
        final Object root = new Load(LoadSettings.builder().setLabel(source).build()).loadFromString(yaml);
        if (root == null) {
            return context;
        }
        if (!(root instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException(source + ": top level must be a mapping");
        }
        for (final Map.Entry<?, ?> e : map.entrySet()) {
            final String key = String.valueOf(e.getKey());
            final Object v = e.getValue();
            if (!KEYS.contains(key)) {
                throw new IllegalArgumentException(source + ": unknown key '" + key + "' (known: " + KEYS + ")");
            }
            switch (key) {
                case "dir" -> context.dir(Path.of(String.valueOf(v)));
                case "cell" -> context.cell(String.valueOf(v));
                case GROUP_PROP_NAME -> context.group(String.valueOf(v));
                case BLOCK_SIZE_PROP_NAME -> context.blockSize(toInt(source, key, v));
                case CAPACITY_BLOCKS_PROP_NAME -> context.capacityBlocks(toLong(source, key, v));
                case SHARD_COUNT_PROP_NAME -> context.shardCount(toInt(source, key, v));
                case MAX_PODS_PROP_NAME -> context.maxPods(toInt(source, key, v));
                case WRITERS_PROP_NAME -> context.writers(toInt(source, key, v));
                case WRITER_QUEUE_LENGTH_PROP_NAME -> context.writerQueueLength(toInt(source, key, v));
                case POD_TIMEOUT_MS_PROP_NAME -> context.podTimeoutMs(toLong(source, key, v));
                case HEARTBEAT_INTERVAL_MS_PROP_NAME -> context.heartbeatIntervalMs(toLong(source, key, v));
                case REPLAY_TIMEOUT_MS_PROP_NAME -> context.replayTimeoutMs(toInt(source, key, v));
                case IDLE_STRATEGY_PROP_NAME -> context.idleStrategy(String.valueOf(v));
                case POD_MAX_BLOCKS_PROP_NAME -> context.podMaxBlocks(toInt(source, key, v));
                case TIER_MAP_BLOCKS_PROP_NAME -> context.tierMapBlocks(toInt(source, key, v));
                case REPLAY_GAP_POLICY_PROP_NAME -> context.replayGapPolicy(String.valueOf(v));
                case CHECKPOINT_INTERVAL_MS_PROP_NAME -> context.checkpointIntervalMs(toLong(source, key, v));
                case METRICS_PROP_NAME -> context.metrics(String.valueOf(v));
                case "aeron" -> aeron(source, v, context);
                default -> zmq(source, v, context);
            }
        }
        return context;
    }

    private static void zmq(final String source, final Object v, final DaemonContext context) {
        if (!(v instanceof List<?> list)) {
            throw new IllegalArgumentException(source + ": 'zmq' must be a list of endpoints");
        }
        for (final Object item : list) {
            if (!(item instanceof Map<?, ?> m)) {
                throw new IllegalArgumentException(source + ": each 'zmq' entry must be a mapping");
            }
            for (final Object k : m.keySet()) {
                if (!ZMQ_KEYS.contains(String.valueOf(k))) {
                    throw new IllegalArgumentException(source + ": unknown zmq key '" + k + "' (known: " + ZMQ_KEYS
                        + ")");
                }
            }
            final String engine = str(m.get("engine"));
            context.addZmq(new ZmqEndpoint(str(m.get("endpoint")), str(m.get("pod")), str(m.get("model")),
                str(m.get("replay")), engine == null ? ZmqEndpoint.Engine.VLLM : ZmqEndpoint.Engine.parse(engine)));
        }
    }

    private static void aeron(final String source, final Object v, final DaemonContext context) {
        if (!(v instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException(source + ": 'aeron' must be a mapping");
        }
        for (final Map.Entry<?, ?> e : m.entrySet()) {
            final String key = String.valueOf(e.getKey());
            final Object value = e.getValue();
            if (!AERON_KEYS.contains(key)) {
                throw new IllegalArgumentException(source + ": unknown aeron key '" + key + "' (known: " + AERON_KEYS
                    + ")");
            }
            switch (key) {
                case "channels" -> {
                    if (!(value instanceof List<?> list)) {
                        throw new IllegalArgumentException(source + ": 'aeron.channels' must be a list");
                    }
                    list.forEach(c -> context.addAeronChannel(String.valueOf(c)));
                }
                case "streamId" -> context.aeronStreamId(toInt(source, key, value));
                case "dir" -> context.aeronDir(String.valueOf(value));
                case "embeddedDriver" -> context.embeddedDriver(Boolean.parseBoolean(String.valueOf(value)));
                default -> context.aeronTermLength(toInt(source, key, value));
            }
        }
    }

    private static String str(final Object o) {
        return o == null ? null : String.valueOf(o);
    }

    private static int toInt(final String source, final String key, final Object v) {
        final long l = toLong(source, key, v);
        if (l < Integer.MIN_VALUE || l > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(source + ": '" + key + "' out of range: " + v);
        }
        return (int) l;
    }

    private static long toLong(final String source, final String key, final Object v) {
        if (v instanceof Number n) {
            return n.longValue();
        }
        throw new IllegalArgumentException(source + ": '" + key + "' must be an integer: " + v);
    }
}
