package io.kvidx.router;

import org.snakeyaml.engine.v2.api.Dump;
import org.snakeyaml.engine.v2.api.DumpSettings;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads the router's YAML document into a {@link RouterConfig} (its keys and their shapes; the bounds are
 * {@link RouterConfig#validate()}'s): every key named in a refusal, relative paths resolved against the file's
 * directory, the profiles and workflow kept as the routing document.
 *
 * <p><b>Note:</b> stateless; called by {@link RouterConfig#fromYaml}.
 */
final class RouterYaml {
    private RouterYaml() {
    }

    /**
     * Reads a router document.
     *
     * @param yaml    the document.
     * @param baseDir directory of the file (relative paths), or null.
     * @return the configuration (not validated yet).
     * @throws IllegalArgumentException naming the key when the document is invalid.
     */
    static RouterConfig read(final String yaml, final Path baseDir) {
        final Object doc;
        try {
            doc = new Load(LoadSettings.builder().setLabel("router configuration").build()).loadFromString(yaml);
        } catch (final YamlEngineException ex) {
            throw new IllegalArgumentException("not valid YAML: " + ex.getMessage(), ex);
        }
        final RouterConfig c = new RouterConfig();
        c.baseDir = baseDir;
        if (doc == null) {
            return c;
        }
        if (!(doc instanceof Map<?, ?> root)) {
            throw new IllegalArgumentException("the router configuration must be a mapping");
        }
        final Map<String, Object> routing = new LinkedHashMap<>();
        for (final Map.Entry<?, ?> e : root.entrySet()) {
            final String key = String.valueOf(e.getKey());
            final Object v = e.getValue();
            switch (key) {
                case "listen" -> c.listen = str(key, v);
                case "index" -> {
                    final Map<?, ?> m = map(key, v, Set.of("dir", "cell"));
                    if (m.get("dir") != null) {
                        c.dir = str("index.dir", m.get("dir"));
                    }
                    if (m.get("cell") != null) {
                        c.cell = str("index.cell", m.get("cell"));
                    }
                }
                case "pods" -> {
                    if (!(v instanceof List<?> list)) {
                        throw new IllegalArgumentException("pods: expected a list of {id, url, model, role}");
                    }
                    for (final Object p : list) {
                        final Map<?, ?> m = map("pods[]", p, Set.of("id", "url", "model", "role"));
                        c.pod(str("pods[].id", m.get("id")), str("pods[].url", m.get("url")),
                            m.get("model") == null ? null : str("pods[].model", m.get("model")),
                            m.get("role") == null ? null : str("pods[].role", m.get("role")));
                    }
                }
                case "pod-url-template" -> c.urlTemplate = str(key, v);
                case "pod-url-hosts" -> {
                    if (!(v instanceof List<?> list)) {
                        throw new IllegalArgumentException("pod-url-hosts: expected a list of CIDR blocks and host"
                            + " globs");
                    }
                    for (final Object h : list) {
                        c.urlHosts.add(str("pod-url-hosts[]", h));
                    }
                }
                case "policy" -> c.policy = str(key, v);
                case "tokenizer" -> c.tokenizer = resolve(baseDir, str(key, v));
                case "timeouts" -> {
                    final Map<?, ?> m = map(key, v, Set.of("connect-ms", "first-byte-ms", "request-ms"));
                    c.connectMs = integer("timeouts.connect-ms", m.get("connect-ms"), c.connectMs);
                    c.firstByteMs = integer("timeouts.first-byte-ms", m.get("first-byte-ms"), c.firstByteMs);
                    c.requestMs = integer("timeouts.request-ms", m.get("request-ms"), c.requestMs);
                }
                case "attempts" -> c.attempts = integer(key, v, c.attempts);
                case "session-header" -> c.sessionHeader = str(key, v);
                case "lora-adapters" -> {
                    for (final Map.Entry<?, ?> a : map(key, v, null).entrySet()) {
                        c.loraAdapters.put(String.valueOf(a.getKey()), str("lora-adapters." + a.getKey(),
                            a.getValue()));
                    }
                }
                case "health" -> {
                    final Map<?, ?> m = map(key, v, Set.of("interval-ms", "path"));
                    c.healthIntervalMs = integer("health.interval-ms", m.get("interval-ms"), c.healthIntervalMs);
                    if (m.get("path") != null) {
                        c.healthPath = str("health.path", m.get("path"));
                    }
                }
                case "scrape" -> c.scrapeIntervalMs = integer("scrape.interval-ms",
                    map(key, v, Set.of("interval-ms")).get("interval-ms"), 0);
                case "response-headers" -> c.responseHeaders = bool(key, v);
                case "cache-hint" -> c.cacheHint = v == null ? null : str(key, v);
                case "max-body-bytes" -> c.maxBodyBytes = integer(key, v, c.maxBodyBytes);
                case "threads" -> c.threads = integer(key, v, c.threads);
                case "allow-remote" -> c.allowRemote = bool(key, v);
                case "admin-token-file" -> c.adminTokenFile = resolve(baseDir, str(key, v));
                case "tls-cert" -> c.tlsCert = resolve(baseDir, str(key, v));
                case "tls-key" -> c.tlsKey = resolve(baseDir, str(key, v));
                case "tls-client-ca" -> c.tlsClientCa = resolve(baseDir, str(key, v));
                case "block-size" -> c.blockSize = integer(key, v, c.blockSize);
                case "warm-up-decisions" -> c.warmUpDecisions = integer(key, v, c.warmUpDecisions);
                case "warm-up-ms" -> c.warmUpMs = integer(key, v, c.warmUpMs);
                case "profiles", "workflow" -> routing.put(key, v);
                default -> throw new IllegalArgumentException("unknown key '" + key + "' (listen, index, pods,"
                    + " pod-url-template, pod-url-hosts, policy, tokenizer, timeouts, attempts, session-header,"
                    + " lora-adapters, health, scrape, response-headers, cache-hint, max-body-bytes, threads,"
                    + " block-size, warm-up-decisions, warm-up-ms, allow-remote, admin-token-file, tls-cert, tls-key,"
                    + " tls-client-ca, profiles, workflow)");
            }
        }
        if (!routing.isEmpty()) {
            c.routingYaml = new Dump(DumpSettings.builder().build()).dumpToString(routing);
        }
        return c;
    }

    private static Path resolve(final Path baseDir, final String p) {
        final Path path = Path.of(p);
        return path.isAbsolute() || baseDir == null ? path : baseDir.resolve(path);
    }

    private static String str(final String key, final Object v) {
        if (!(v instanceof String) && !(v instanceof Number)) {
            throw new IllegalArgumentException(key + ": expected a string, got " + (v == null ? "nothing" : v));
        }
        return String.valueOf(v);
    }

    private static boolean bool(final String key, final Object v) {
        if (!(v instanceof Boolean b)) {
            throw new IllegalArgumentException(key + ": expected true or false, got " + v);
        }
        return b;
    }

    private static int integer(final String key, final Object v, final int absent) {
        if (v == null) {
            return absent;
        }
        if (!(v instanceof Integer) && !(v instanceof Long)) {
            throw new IllegalArgumentException(key + ": expected an integer, got " + v);
        }
        final long l = ((Number) v).longValue();
        if (l < Integer.MIN_VALUE || l > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(key + ": out of range: " + v);
        }
        return (int) l;
    }

    private static Map<?, ?> map(final String key, final Object v, final Set<String> allowed) {
        if (!(v instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException(key + ": expected a mapping, got " + v);
        }
        if (allowed != null) {
            for (final Object k : m.keySet()) {
                if (!allowed.contains(String.valueOf(k))) {
                    throw new IllegalArgumentException(key + ": unknown key '" + k + "' (allowed: " + allowed + ")");
                }
            }
        }
        return m;
    }
}
