package io.kvidx.daemon.config;

import io.kvidx.client.index.PodIds;
import io.kvidx.daemon.config.DaemonSettings.Setting;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import org.snakeyaml.engine.v2.api.Dump;
import org.snakeyaml.engine.v2.api.DumpSettings;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.common.FlowStyle;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the daemon's YAML config file (snakeyaml-engine) into a {@link DaemonContext}, and prints a context's
 * effective configuration in the same format ({@link #print}). The keys are those of {@link DaemonSettings}, each
 * with a command-line option; unknown keys and values of the wrong kind are rejected with a one-line message
 * naming the file and the key, so that a typo does not silently fall back to a default. Example:
 * <pre>
 * dir: /dev/shm/kvidx
 * cell: default
 * group: kvidx          # of the cell directory and index file, routers in it read (default: primary group)
 * blockSize: 16
 * podTimeoutMs: 30000
 * writers: 2
 * writerCpus: [2, 3]    # one per writer; zmqIngestCpu, aeronIngestCpu, maintenanceCpu: one each
 * writerIdle: busy-spin
 * zmq:
 *   - endpoint: tcp://10.0.0.7:5557
 *     pod: pod-a
 *     model: Qwen/Qwen3-0.6B
 *     replay: tcp://10.0.0.7:5558
 *   - endpoint: tcp://10.0.0.8:5557     # pod and model from the topic kv@pod@model
 * </pre>
 * Lists of endpoints ({@code zmq}, {@code aeron.channels}) add to those given on the command line; every other
 * command-line option replaces the file's value. {@code ./kvidx daemon --print-config} prints every key.
 */
public final class DaemonConfigFile {
    private DaemonConfigFile() {
    }

    /**
     * @param file    the YAML file.
     * @param context filled in.
     * @return the context.
     * @throws IllegalArgumentException when the file cannot be read or holds a bad key or value.
     */
    public static DaemonContext load(final Path file, final DaemonContext context) {
        final String text;
        try {
            text = Files.readString(file);
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read config " + file + ": " + ex, ex);
        }
        return parse(text, context, file.toString());
    }

    /**
     * @param yaml    YAML text.
     * @param context filled in.
     * @param source  name for error messages.
     * @return the context.
     * @throws IllegalArgumentException naming the source and the key of a bad value.
     */
    public static DaemonContext parse(final String yaml, final DaemonContext context, final String source) {
        final Object root;
        try {
            root = new Load(LoadSettings.builder().setLabel(source).build()).loadFromString(yaml);
        } catch (final YamlEngineException ex) {
            throw new IllegalArgumentException(source + ": not valid YAML: " + oneLine(ex.getMessage()));
        }
        if (root == null) {
            return context;
        }
        if (!(root instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException(source + ": top level must be a mapping");
        }
        read(source, "", map, context);
        return context;
    }

    private static void read(final String source, final String prefix, final Map<?, ?> map,
        final DaemonContext context) {
        for (final Map.Entry<?, ?> e : map.entrySet()) {
            final String key = prefix + e.getKey();
            final Object v = e.getValue();
            final Setting setting = DaemonSettings.setting(key);
            if (setting == null) {
                if (isMappingKey(key)) {
                    if (!(v instanceof Map<?, ?> nested)) {
                        throw bad(source, key, "must be a mapping", v);
                    }
                    read(source, key + ".", nested, context);
                    continue;
                }
                throw new IllegalArgumentException(source + ": unknown key '" + key + "' (known: "
                    + String.join(", ", DaemonSettings.optionsByKey().keySet()) + ")");
            }
            setting.set().accept(context, convert(source, setting, v));
        }
    }

    private static boolean isMappingKey(final String key) {
        for (final Setting s : DaemonSettings.all()) {
            if (s.key().startsWith(key + ".")) {
                return true;
            }
        }
        return false;
    }

    private static Object convert(final String source, final Setting setting, final Object v) {
        final String key = setting.key();
        return switch (setting.kind()) {
            case STRING -> {
                if (v == null || v instanceof Map || v instanceof List) {
                    throw bad(source, key, "must be a single value", v);
                }
                yield String.valueOf(v);
            }
            case NULLABLE_STRING -> {
                if (v instanceof Map || v instanceof List) {
                    throw bad(source, key, "must be a single value or null", v);
                }
                yield v == null ? null : String.valueOf(v);
            }
            case INT -> {
                if (!(v instanceof Integer i)) {
                    throw bad(source, key, "must be an integer in [" + Integer.MIN_VALUE + ", " + Integer.MAX_VALUE
                        + "]", v);
                }
                yield i;
            }
            case LONG -> {
                if (!(v instanceof Integer) && !(v instanceof Long)) {
                    throw bad(source, key, "must be an integer in [" + Long.MIN_VALUE + ", " + Long.MAX_VALUE + "]",
                        v);
                }
                yield ((Number) v).longValue();
            }
            case BOOLEAN -> {
                if (!(v instanceof Boolean b)) {
                    throw bad(source, key, "must be true or false", v);
                }
                yield b;
            }
            case CPU -> cpu(source, key, v);
            case CPU_LIST -> {
                if (v == null || AgentSettings.NONE.equals(v)) {
                    yield new int[0];
                }
                final String accepted = "must be " + AgentSettings.NONE + " or a list of CPU numbers in "
                    + AgentSettings.CPU_RANGE;
                if (!(v instanceof List<?> list)) {
                    throw bad(source, key, accepted, v);
                }
                final int[] cpus = new int[list.size()];
                for (int i = 0; i < cpus.length; i++) {
                    if (!(list.get(i) instanceof Integer cpu)) {
                        throw bad(source, key, accepted, v);
                    }
                    cpus[i] = cpu;
                }
                yield cpus;
            }
            case STRING_LIST -> {
                if (!(v instanceof List<?> list)) {
                    throw bad(source, key, "must be a list", v);
                }
                final List<String> strings = new ArrayList<>();
                for (final Object o : list) {
                    if (o == null || o instanceof Map || o instanceof List) {
                        throw bad(source, key, "must be a list of single values", v);
                    }
                    strings.add(String.valueOf(o));
                }
                yield strings;
            }
            case ZMQ -> zmq(source, v);
        };
    }

    private static int cpu(final String source, final String key, final Object v) {
        if (v instanceof Integer cpu) {
            return cpu;
        }
        if (v == null || v instanceof String) {
            try {
                return AgentSettings.parseCpu(key, (String) v);
            } catch (final ConfigException ex) {
                throw new IllegalArgumentException(source + ": " + ex.getMessage(), ex);
            }
        }
        throw bad(source, key, "must be " + AgentSettings.NONE + " or a CPU number in " + AgentSettings.CPU_RANGE, v);
    }

    private static List<ZmqEndpoint> zmq(final String source, final Object v) {
        if (!(v instanceof List<?> list)) {
            throw new IllegalArgumentException(source + ": 'zmq' must be a list of endpoints");
        }
        final List<ZmqEndpoint> endpoints = new ArrayList<>();
        for (final Object item : list) {
            if (!(item instanceof Map<?, ?> m)) {
                throw new IllegalArgumentException(source + ": each 'zmq' entry must be a mapping");
            }
            for (final Map.Entry<?, ?> e : m.entrySet()) {
                if (!DaemonSettings.ZMQ_ENTRY_OPTIONS.containsKey(String.valueOf(e.getKey()))) {
                    throw new IllegalArgumentException(source + ": unknown zmq key '" + e.getKey() + "' (known: "
                        + String.join(", ", DaemonSettings.ZMQ_ENTRY_OPTIONS.keySet()) + ")");
                }
                if (e.getValue() instanceof Map || e.getValue() instanceof List) {
                    throw bad(source, "zmq." + e.getKey(), "must be a single value", e.getValue());
                }
            }
            if (str(m.get("endpoint")) == null || str(m.get("endpoint")).isBlank()) {
                throw new IllegalArgumentException(source + ": zmq.endpoint must be set in each 'zmq' entry");
            }
            final ZmqEndpoint.Engine engine;
            try {
                engine = str(m.get("engine")) == null ? ZmqEndpoint.Engine.VLLM
                    : ZmqEndpoint.Engine.parse(str(m.get("engine")));
            } catch (final IllegalArgumentException ex) {
                throw bad(source, "zmq.engine", "must be vllm or sglang", m.get("engine"));
            }
            final String invalidPod = str(m.get("pod")) == null ? null : PodIds.checkPodId(str(m.get("pod")));
            if (invalidPod != null) {
                throw new IllegalArgumentException(source + ": zmq.pod: " + invalidPod);
            }
            endpoints.add(new ZmqEndpoint(str(m.get("endpoint")), str(m.get("pod")), str(m.get("model")),
                str(m.get("replay")), engine));
        }
        return endpoints;
    }

    /**
     * Prints a concluded context as YAML that {@link #parse} reads back to the same configuration: every key of
     * {@link DaemonSettings}, in its order, emitted by snakeyaml-engine.
     *
     * @param context a concluded context.
     * @return YAML text.
     */
    public static String print(final DaemonContext context) {
        final Map<String, Object> root = new LinkedHashMap<>();
        for (final Setting s : DaemonSettings.all()) {
            final String[] path = s.key().split("\\.");
            Map<String, Object> map = root;
            for (int i = 0; i < path.length - 1; i++) {
                @SuppressWarnings("unchecked") // only this method puts values in these maps
                final Map<String, Object> nested = (Map<String, Object>) map.computeIfAbsent(path[i],
                    k -> new LinkedHashMap<String, Object>());
                map = nested;
            }
            map.put(path[path.length - 1], s.get().apply(context));
        }
        final DumpSettings settings = DumpSettings.builder().setDefaultFlowStyle(FlowStyle.BLOCK).setIndent(2)
            .setIndicatorIndent(2).setIndentWithIndicator(true).build();
        return new Dump(settings).dumpToString(root);
    }

    private static IllegalArgumentException bad(final String source, final String key, final String what,
        final Object v) {
        return new IllegalArgumentException(source + ": " + key + " " + what + ": " + oneLine(String.valueOf(v)));
    }

    private static String oneLine(final String text) {
        return text == null ? "" : text.replaceAll("\\s*\\R\\s*", " ").strip();
    }

    private static String str(final Object o) {
        return o == null ? null : String.valueOf(o);
    }
}
