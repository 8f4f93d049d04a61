package io.kvidx.epp;

import io.kvidx.router.RouterConfig;
import io.kvidx.routing.PodUrlTemplate;
import org.snakeyaml.engine.v2.api.Dump;
import org.snakeyaml.engine.v2.api.DumpSettings;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Everything {@code kvidx epp} is told. The document is the router's (docs/router.md: index, pods, pod-url-template,
 * policy, tokenizer, session-header, lora-adapters, block-size, max-body-bytes, profiles, workflow; the router's
 * proxy keys are accepted and unused) plus an {@code epp} mapping:
 *
 * <pre>
 * epp:
 *   listen: 127.0.0.1:9002        # the ext_proc gRPC server (GIE's port)
 *   metrics: 127.0.0.1:9090       # Prometheus /metrics and /health over HTTP ("off": none)
 *   allow-remote: false           # true to accept addresses other hosts reach (see docs/epp.md)
 *   tls-cert: /etc/epp/tls.crt    # both or neither; plaintext without them
 *   tls-key: /etc/epp/tls.key
 *   tls-client-ca: /etc/epp/ca.crt # mutual TLS: the gateway must present a certificate this CA signed
 *   stream-deadline-ms: 10000
 *   max-streams: 4096
 *   body-mode: full-duplex-streamed   # when Envoy sends no protocol_config
 * </pre>
 *
 * The routing document is made by the router's own {@link RouterConfig#routingDocument()} so that a policy, a
 * tokenizer and profiles mean exactly what they mean to {@code kvidx router}.
 *
 * <p><b>Note:</b> not thread safe while being built; read-only once validated.
 */
public final class EppConfig implements io.kvidx.router.DecisionOptions.Target {
    /** Default gRPC listen address (GIE's EPP port), loopback: other hosts only with {@code allow-remote}. */
    public static final String LISTEN_DEFAULT = "127.0.0.1:9002";
    /** Default metrics listen address (GIE's EPP metrics port), loopback. */
    public static final String METRICS_DEFAULT = "127.0.0.1:9090";

    String listen = LISTEN_DEFAULT;
    String metrics = METRICS_DEFAULT;
    /** Accept listen and metrics addresses other hosts reach (neither door authenticates its clients). */
    boolean allowRemote;
    Path tlsCert;
    /** A file holding the bearer token ext_proc streams and the metrics door need, or null. */
    Path tokenFile;
    Path tlsKey;
    /** CA certificates (PEM) a client certificate must chain to (mutual TLS), or null. */
    Path tlsClientCa;
    String dir = RouterConfig.DIR_DEFAULT;
    String cell = RouterConfig.CELL_DEFAULT;
    /** Pod id to the URL whose host:port is answered. */
    final Map<String, URI> pods = new LinkedHashMap<>();
    /** Pod id to its model, for listed pods that name one. */
    final Map<String, String> podModels = new LinkedHashMap<>();
    String urlTemplate;
    /** {@code pod-url-hosts}: the hosts {@link #urlTemplate}'s URLs may name (empty: {@link PodUrlTemplate}'s). */
    final List<String> urlHosts = new ArrayList<>();
    /** The template and its hosts, made by {@link #validate()}; null without a template. */
    PodUrlTemplate podUrls;
    String policy;
    Path tokenizer;
    String sessionHeader = RouterConfig.SESSION_HEADER_DEFAULT;
    final Map<String, String> loraAdapters = new LinkedHashMap<>();
    int blockSize = RouterConfig.BLOCK_SIZE_DEFAULT;
    int maxBodyBytes = EppLimits.MAX_BODY_BYTES_DEFAULT;
    int streamDeadlineMs = EppLimits.STREAM_DEADLINE_MS_DEFAULT;
    int maxStreams = EppLimits.MAX_STREAMS_DEFAULT;
    String bodyMode = "full-duplex-streamed";
    /** The profiles/workflow part of the document, or empty. */
    final Map<String, Object> routing = new LinkedHashMap<>();
    Path baseDir;
    private String routingDocument;

    /**
     * Reads a document.
     *
     * @param yaml    the document.
     * @param baseDir directory of the file, or null.
     * @return the configuration (not validated yet).
     */
    public static EppConfig fromYaml(final String yaml, final Path baseDir) {
        final Object doc;
        try {
            doc = new Load(LoadSettings.builder().setLabel("epp configuration").build()).loadFromString(yaml);
        } catch (final YamlEngineException ex) {
            throw new IllegalArgumentException("not valid YAML: " + ex.getMessage(), ex);
        }
        final EppConfig c = new EppConfig();
        c.baseDir = baseDir;
        if (doc == null) {
            return c;
        }
        if (!(doc instanceof Map<?, ?> root)) {
            throw new IllegalArgumentException("the epp configuration must be a mapping");
        }
        // The router's reading of its keys checks them (unknown keys, types) before this one takes what it needs.
        final Map<Object, Object> routerPart = new LinkedHashMap<>(root);
        routerPart.remove("epp");
        RouterConfig.fromYaml(new Dump(DumpSettings.builder().build()).dumpToString(routerPart), baseDir);
        for (final Map.Entry<?, ?> e : root.entrySet()) {
            final String key = String.valueOf(e.getKey());
            final Object v = e.getValue();
            switch (key) {
                case "epp" -> c.epp(map(key, v));
                case "index" -> {
                    final Map<?, ?> m = map(key, v);
                    c.dir = m.get("dir") != null ? String.valueOf(m.get("dir")) : c.dir;
                    c.cell = m.get("cell") != null ? String.valueOf(m.get("cell")) : c.cell;
                }
                case "pods" -> {
                    for (final Object p : (List<?>) v) {
                        final Map<?, ?> m = map("pods[]", p);
                        final String id = String.valueOf(m.get("id"));
                        c.pod(id, String.valueOf(m.get("url")));
                        if (m.get("model") != null) {
                            c.podModels.put(id, String.valueOf(m.get("model")));
                        }
                    }
                }
                case "pod-url-template" -> c.urlTemplate = String.valueOf(v);
                case "pod-url-hosts" -> {
                    if (!(v instanceof List<?> list)) {
                        throw new IllegalArgumentException("pod-url-hosts: expected a list of CIDR blocks and host"
                            + " globs");
                    }
                    list.forEach(h -> c.urlHosts.add(String.valueOf(h)));
                }
                case "policy" -> c.policy = String.valueOf(v);
                case "tokenizer" -> {
                    final Path t = Path.of(String.valueOf(v));
                    c.tokenizer = t.isAbsolute() || baseDir == null ? t : baseDir.resolve(t);
                }
                case "session-header" -> c.sessionHeader = String.valueOf(v);
                case "lora-adapters" -> map(key, v).forEach((a, b) -> c.loraAdapters.put(String.valueOf(a),
                    String.valueOf(b)));
                case "block-size" -> c.blockSize = ((Number) v).intValue();
                case "max-body-bytes" -> c.maxBodyBytes = ((Number) v).intValue();
                case "profiles", "workflow" -> c.routing.put(key, v);
                default -> {
                    // The router's proxy keys (listen, timeouts, attempts, health, ...): a picker proxies nothing.
                }
            }
        }
        return c;
    }

    private void epp(final Map<?, ?> m) {
        final Set<String> allowed = Set.of("listen", "metrics", "allow-remote", "tls-cert", "tls-key", "tls-client-ca",
            "token-file",
            "stream-deadline-ms", "max-streams", "body-mode");
        for (final Map.Entry<?, ?> e : m.entrySet()) {
            final String k = String.valueOf(e.getKey());
            final Object v = e.getValue();
            if (!allowed.contains(k)) {
                throw new IllegalArgumentException("epp: unknown key '" + k + "' (allowed: " + allowed + ")");
            }
            switch (k) {
                case "listen" -> listen = String.valueOf(v);
                case "metrics" -> metrics = String.valueOf(v);
                case "allow-remote" -> {
                    if (!(v instanceof Boolean b)) {
                        throw new IllegalArgumentException("epp.allow-remote must be true or false: " + v);
                    }
                    allowRemote = b;
                }
                case "tls-cert" -> tlsCert = resolve(String.valueOf(v));
                case "tls-key" -> tlsKey = resolve(String.valueOf(v));
                case "tls-client-ca" -> tlsClientCa = resolve(String.valueOf(v));
                case "token-file" -> tokenFile = resolve(String.valueOf(v));
                case "stream-deadline-ms" -> streamDeadlineMs = integer("epp." + k, v);
                case "max-streams" -> maxStreams = integer("epp." + k, v);
                default -> bodyMode = String.valueOf(v);
            }
        }
    }

    private Path resolve(final String p) {
        final Path path = Path.of(p);
        return path.isAbsolute() || baseDir == null ? path : baseDir.resolve(path);
    }

    /**
     * Adds a pod.
     *
     * @param id  pod id as the index knows it.
     * @param url its URL; its host and port are the endpoint answered.
     * @return this.
     */
    public EppConfig pod(final String id, final String url) {
        if (id == null || id.isBlank()) {
            throw new IllegalArgumentException("a pod needs an id");
        }
        if (pods.containsKey(id)) {
            throw new IllegalArgumentException("pod " + id + " is listed twice");
        }
        final URI u;
        try {
            u = URI.create(url);
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException("pod " + id + ": not a URL: '" + url + "'", ex);
        }
        if (u.getHost() == null || u.getPort() < 0) {
            throw new IllegalArgumentException("pod " + id + ": url must be http://HOST:PORT, got '" + url + "'");
        }
        pods.put(id, u);
        return this;
    }

    /**
     * Parses {@code ID=URL} as {@code kvidx router --pod} takes it.
     *
     * @param spec the option's value.
     * @return this.
     */
    @Override
    public EppConfig podSpec(final String spec) {
        final int eq = spec.indexOf('=');
        if (eq <= 0 || eq == spec.length() - 1) {
            throw new IllegalArgumentException("--pod expects ID=URL, got '" + spec + "'");
        }
        return pod(spec.substring(0, eq), spec.substring(eq + 1));
    }

    /**
     * Checks every setting and makes the routing document; call once built.
     *
     * @return this.
     */
    public EppConfig validate() {
        address("listen", listen);
        if (tlsClientCa == null) {
            // Mutual TLS authenticates the gateway on the ext_proc port, as a token does.
            local("listen", listen, "answers ext_proc (and so routes traffic) for anyone who reaches it");
        }
        if (!"off".equals(metrics)) {
            address("metrics", metrics);
            local("metrics", metrics, "exports pod ids and models, unauthenticated");
        }
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new IllegalArgumentException("tls-cert and tls-key go together");
        }
        if (tlsClientCa != null && tlsCert == null) {
            throw new IllegalArgumentException("tls-client-ca (mutual TLS) needs the picker's own tls-cert and "
                + "tls-key");
        }
        if (blockSize < 1 || blockSize > 4096) {
            throw new IllegalArgumentException("block-size must be 1..4096: " + blockSize);
        }
        podUrls = PodUrlTemplate.of(urlTemplate, urlHosts);
        if (policy != null && !routing.isEmpty()) {
            throw new IllegalArgumentException("--policy and a YAML with profiles: choose one");
        }
        limits();
        final Map<String, Object> doc = new LinkedHashMap<>(routing);
        if (policy != null) {
            doc.put("policy", policy);
        }
        if (tokenizer != null) {
            doc.put("tokenizer", tokenizer.toAbsolutePath().toString());
        }
        doc.put("session-header", sessionHeader);
        routingDocument = RouterConfig.fromYaml(new Dump(DumpSettings.builder().build()).dumpToString(doc), baseDir)
            .validate().routingDocument();
        return this;
    }

    @Override
    public EppConfig urlTemplate(final String template) {
        this.urlTemplate = template;
        return this;
    }

    @Override
    public EppConfig urlHosts(final List<String> hosts) {
        this.urlHosts.addAll(hosts);
        return this;
    }

    @Override
    public EppConfig indexDir(final String indexDir) {
        this.dir = indexDir;
        return this;
    }

    @Override
    public EppConfig indexCell(final String indexCell) {
        this.cell = indexCell;
        return this;
    }

    @Override
    public EppConfig policy(final String routingPolicy) {
        this.policy = routingPolicy;
        return this;
    }

    @Override
    public EppConfig tokenizer(final Path tokenizerPath) {
        this.tokenizer = tokenizerPath;
        return this;
    }

    /**
     * @return the stream bounds.
     */
    public EppLimits limits() {
        return new EppLimits(maxBodyBytes, streamDeadlineMs, maxStreams, EppLimits.bodyMode(bodyMode));
    }

    /**
     * @return the routing document (profiles and workflow), as the router makes it.
     */
    public String routingDocument() {
        return routingDocument;
    }

    /**
     * @return the gRPC listen address.
     */
    public InetSocketAddress listenAddress() {
        return address("listen", listen);
    }

    /**
     * @return the metrics listen address, or null for none.
     */
    public InetSocketAddress metricsAddress() {
        return "off".equals(metrics) ? null : address("metrics", metrics);
    }

    /** Refuses an address other hosts reach unless {@link #allowRemote} or a {@link #tokenFile}. */
    private void local(final String key, final String hostPort, final String why) {
        if (!allowRemote && tokenFile == null
            && !io.kvidx.serve.NetworkScope.isLoopback(io.kvidx.serve.NetworkScope.hostOf(hostPort))) {
            throw new IllegalArgumentException(key + " " + hostPort + " is not a loopback address and the picker "
                + why + ": give --token-file (epp.token-file) or set --allow-remote (epp.allow-remote) where a "
                + "NetworkPolicy admits only the gateway (docs/epp.md, \"Exposing the picker\")");
        }
    }

    static InetSocketAddress address(final String key, final String hostPort) {
        final int colon = hostPort.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException(key + " must be HOST:PORT, got '" + hostPort + "'");
        }
        try {
            final int port = Integer.parseInt(hostPort.substring(colon + 1));
            if (port < 0 || port > 65_535) {
                throw new NumberFormatException();
            }
            return new InetSocketAddress(hostPort.substring(0, colon).replace("[", "").replace("]", ""), port);
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException(key + " must be HOST:PORT with a port 0..65535, got '" + hostPort
                + "'", ex);
        }
    }

    private static Map<?, ?> map(final String key, final Object v) {
        if (!(v instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException(key + ": expected a mapping, got " + v);
        }
        return m;
    }

    private static int integer(final String key, final Object v) {
        if (!(v instanceof Integer i)) {
            throw new IllegalArgumentException(key + ": expected an integer, got " + v);
        }
        return i;
    }
}
