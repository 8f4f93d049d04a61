package io.kvidx.router;

import io.kvidx.routing.PodRole;
import io.kvidx.routing.PodUrlTemplate;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Everything {@code kvidx router} is told: where it listens, the index it reads, its pods and their URLs, bounds and
 * timeouts, and the routing document (profiles and workflow, as {@link io.kvidx.routing.yaml.YamlRouting}
 * reads them). The one place for the router's defaults. Built from the YAML file ({@link #fromYaml}) and/or the
 * command line, then frozen by {@link #validate()}.
 *
 * <pre>
 * listen: 127.0.0.1:8080
 * index: {dir: /dev/shm/kvidx, cell: default}
 * pods:
 *   - {id: pod-a, url: http://10.0.0.1:8000, model: Qwen/Qwen3-0.6B, role: both}
 * pod-url-template: http://{pod}:8000      # pods the index knows and the list does not name
 * pod-url-hosts: [10.0.0.0/8]               # hosts the template may reach (default: private blocks, its own domain)
 * policy: cache-aware                       # when the file has no profiles: cache-aware | approximate |
 *                                           #   round-robin | least-load
 * tokenizer: /models/qwen3                  # text and chat requests (the default profiles' tokenize stage)
 * timeouts: {connect-ms: 1000, first-byte-ms: 60000, request-ms: 600000}
 * attempts: 3
 * session-header: x-session-id
 * lora-adapters: {my-adapter: Qwen/Qwen3-0.6B}
 * health: {interval-ms: 2000, path: /health}
 * admin-token-file: /run/secrets/metrics   # GET /metrics needs 'Authorization: Bearer <its token>'; traffic does not
 * tls-cert: /etc/router/tls.crt             # HTTPS (with tls-key); tls-client-ca: mutual TLS for every client
 * scrape: {interval-ms: 0}                  # engines' /metrics (0: off)
 * response-headers: false                   # x-kvidx-pod, x-kvidx-predicted-tokens on every answer
 * cache-hint: x-kvidx-cache-hint            # the chosen pod's cached prefix per tier, to the pod (off by default)
 * max-body-bytes: 8388608
 * threads: 2
 * block-size: 16                           # when the index is not mapped at start (else the index's)
 * warm-up-decisions: 5000                  # synthetic decisions before /health says ready (0: none)
 * warm-up-ms: 10000                        # the warm-up's time bound
 * profiles: {...}                           # optional: as docs/routing.md
 * workflow: {...}
 * </pre>
 *
 * <p><b>Note:</b> not thread safe while being built; read-only once validated.
 */
public final class RouterConfig implements DecisionOptions.Target {
    /** Default listen address. */
    public static final String LISTEN_DEFAULT = "127.0.0.1:8080";
    /** Default index directory (the daemon's). */
    public static final String DIR_DEFAULT = "/dev/shm/kvidx";
    /** Default cell (the daemon's). */
    public static final String CELL_DEFAULT = "default";
    /** Default connect timeout to a pod. */
    public static final int CONNECT_MS_DEFAULT = 1_000;
    /** Default time from sending a request to a pod to its response headers (prefill included). */
    public static final int FIRST_BYTE_MS_DEFAULT = 60_000;
    /** Default time a whole request may take, streaming included. */
    public static final int REQUEST_MS_DEFAULT = 600_000;
    /** Default attempts per stage (the first plus retries before anything was sent to the client). */
    public static final int ATTEMPTS_DEFAULT = 3;
    /** Default body limit. */
    public static final int MAX_BODY_BYTES_DEFAULT = 8 << 20;
    /** Default largest prefill answer the router holds to pass to the decode pod. */
    public static final int MAX_PREFILL_ANSWER_BYTES = 1 << 20;
    /** Default synthetic decisions the router makes before it reports ready ({@link WarmUp}; 0: none). */
    public static final int WARM_UP_DECISIONS_DEFAULT = 5_000;
    /** Default bound of the warm-up's time. */
    public static final int WARM_UP_MS_DEFAULT = 10_000;
    /** Default health check interval. */
    public static final int HEALTH_INTERVAL_MS_DEFAULT = 2_000;
    /** Default health check path. */
    public static final String HEALTH_PATH_DEFAULT = "/health";
    /** Default event-loop threads. */
    public static final int THREADS_DEFAULT = 2;
    /** Default routing policy when the document has no profiles. */
    public static final String POLICY_DEFAULT = "cache-aware";
    /** Default tokens per block, when the index is not mapped at start (else the index's). */
    public static final int BLOCK_SIZE_DEFAULT = 16;
    /** Default session header. */
    public static final String SESSION_HEADER_DEFAULT = "x-session-id";

    /** The policies {@link #policy} names. */
    public static final List<String> POLICIES = List.of("cache-aware", "approximate", "round-robin", "least-load");

    /** A pod named in the configuration. */
    public record Pod(String id, URI url, String model, PodRole role) {
    }

    String listen = LISTEN_DEFAULT;
    String dir = DIR_DEFAULT;
    String cell = CELL_DEFAULT;
    final List<Pod> pods = new ArrayList<>();
    String urlTemplate;
    /** {@code pod-url-hosts}: the hosts {@link #urlTemplate}'s URLs may name (empty: {@link PodUrlTemplate}'s). */
    final List<String> urlHosts = new ArrayList<>();
    /** The template and its hosts, made by {@link #validate()}; null without a template. */
    PodUrlTemplate podUrls;
    String policy = POLICY_DEFAULT;
    Path tokenizer;
    int connectMs = CONNECT_MS_DEFAULT;
    int firstByteMs = FIRST_BYTE_MS_DEFAULT;
    int requestMs = REQUEST_MS_DEFAULT;
    int attempts = ATTEMPTS_DEFAULT;
    String sessionHeader = SESSION_HEADER_DEFAULT;
    final Map<String, String> loraAdapters = new LinkedHashMap<>();
    int healthIntervalMs = HEALTH_INTERVAL_MS_DEFAULT;
    String healthPath = HEALTH_PATH_DEFAULT;
    int scrapeIntervalMs;
    boolean responseHeaders;
    /** Accept a {@link #listen} address other hosts reach (the router authenticates no client). */
    boolean allowRemote;
    /** A file holding the bearer token {@code /metrics} needs, or null: it is open. */
    Path adminTokenFile;
    /** The router's TLS certificate chain and key (PEM), or null for plain HTTP. */
    Path tlsCert;
    Path tlsKey;
    /** CA certificates (PEM) a client certificate must chain to (mutual TLS), or null. */
    Path tlsClientCa;
    /** The door's TLS, made by {@link #validate()} from the three files above; null for plain HTTP. */
    io.kvidx.serve.ServerTls tls;
    /** The token of {@link #adminTokenFile}, read by {@link #validate()}. */
    String adminToken;
    /** The cache hint header sent to the chosen pods ({@link io.kvidx.routing.exec.CacheHint}), or null for none. */
    String cacheHint;
    int maxBodyBytes = MAX_BODY_BYTES_DEFAULT;
    int threads = THREADS_DEFAULT;
    int blockSize = BLOCK_SIZE_DEFAULT;
    int warmUpDecisions = WARM_UP_DECISIONS_DEFAULT;
    int warmUpMs = WARM_UP_MS_DEFAULT;
    /** The profiles/workflow part of the document as YAML, or null: the {@link #policy}'s profile. */
    String routingYaml;
    /** Directory relative paths in the document resolve against. */
    Path baseDir;

    /**
     * Reads a router document.
     *
     * @param yaml    the document.
     * @param baseDir directory of the file (relative paths), or null.
     * @return the configuration (not validated yet).
     * @throws IllegalArgumentException naming the key when the document is invalid.
     */
    public static RouterConfig fromYaml(final String yaml, final Path baseDir) {
        return RouterYaml.read(yaml, baseDir);
    }

    /**
     * Adds a pod.
     *
     * @param id    pod id (as the index knows it: the engine's publisher id).
     * @param url   base URL of its OpenAI server.
     * @param model its model, or null for any.
     * @param role  {@code both}, {@code prefill} or {@code decode}, or null for both.
     * @return this.
     */
    public RouterConfig pod(final String id, final String url, final String model, final String role) {
        final URI uri = url(id, url);
        final PodRole r;
        try {
            r = role == null ? PodRole.BOTH : PodRole.valueOf(role.trim().toUpperCase(Locale.ROOT));
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException("pod " + id + ": role must be both, prefill or decode, not '" + role
                + "'", ex);
        }
        for (final Pod p : pods) {
            if (p.id().equals(id)) {
                throw new IllegalArgumentException("pod " + id + " is listed twice");
            }
        }
        pods.add(new Pod(id, uri, model, r));
        return this;
    }

    /**
     * Parses {@code ID=URL} as the command line gives a pod.
     *
     * @param spec the option's value.
     * @return this.
     */
    @Override
    public RouterConfig podSpec(final String spec) {
        final int eq = spec.indexOf('=');
        if (eq <= 0 || eq == spec.length() - 1) {
            throw new IllegalArgumentException("--pod expects ID=URL, got '" + spec + "'");
        }
        return pod(spec.substring(0, eq), spec.substring(eq + 1), null, null);
    }

    @Override
    public RouterConfig urlTemplate(final String template) {
        this.urlTemplate = template;
        return this;
    }

    @Override
    public RouterConfig urlHosts(final List<String> hosts) {
        this.urlHosts.addAll(hosts);
        return this;
    }

    @Override
    public RouterConfig indexDir(final String indexDir) {
        this.dir = indexDir;
        return this;
    }

    @Override
    public RouterConfig indexCell(final String indexCell) {
        this.cell = indexCell;
        return this;
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException when the YAML has profiles.
     */
    @Override
    public RouterConfig policy(final String routingPolicy) {
        if (routingYaml != null) {
            throw new IllegalArgumentException("--policy and a YAML with profiles: choose one");
        }
        this.policy = routingPolicy;
        return this;
    }

    @Override
    public RouterConfig tokenizer(final Path tokenizerPath) {
        this.tokenizer = tokenizerPath;
        return this;
    }

    /**
     * Checks every bound; call once built.
     *
     * @return this.
     * @throws IllegalArgumentException naming the setting that is wrong.
     */
    public RouterConfig validate() {
        listenAddress();
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new IllegalArgumentException("tls-cert and tls-key go together");
        }
        if (tlsClientCa != null && tlsCert == null) {
            throw new IllegalArgumentException("tls-client-ca (mutual TLS) needs the router's own tls-cert and "
                + "tls-key");
        }
        tls = tlsCert == null ? null : io.kvidx.serve.ServerTls.of(tlsCert, tlsKey, tlsClientCa, "tls");
        if (!allowRemote && tlsClientCa == null
            && !io.kvidx.serve.NetworkScope.isLoopback(io.kvidx.serve.NetworkScope.hostOf(listen))) {
            throw new IllegalArgumentException("listen " + listen + " is not a loopback address and the router "
                + "authenticates no client (it forwards each client's own Authorization to the engines): set "
                + "--tls-client-ca (mutual TLS) or --allow-remote (allow-remote: true) where a NetworkPolicy or a "
                + "firewall admits only your gateway (docs/router.md, \"Exposing the router\")");
        }
        positive("timeouts.connect-ms", connectMs);
        positive("timeouts.first-byte-ms", firstByteMs);
        positive("timeouts.request-ms", requestMs);
        if (warmUpDecisions < 0 || warmUpDecisions > 10_000_000) {
            throw new IllegalArgumentException("warm-up-decisions must be 0..10000000: " + warmUpDecisions);
        }
        positive("warm-up-ms", warmUpMs);
        if (attempts < 1 || attempts > 16) {
            throw new IllegalArgumentException("attempts must be 1..16: " + attempts);
        }
        if (maxBodyBytes < 1024 || maxBodyBytes > (256 << 20)) {
            throw new IllegalArgumentException("max-body-bytes must be 1 KiB..256 MiB: " + maxBodyBytes);
        }
        if (threads < 1 || threads > 256) {
            throw new IllegalArgumentException("threads must be 1..256: " + threads);
        }
        if (blockSize < 1 || blockSize > 4096) {
            throw new IllegalArgumentException("block-size must be 1..4096: " + blockSize);
        }
        if (healthIntervalMs < 0 || scrapeIntervalMs < 0) {
            throw new IllegalArgumentException("health.interval-ms and scrape.interval-ms must be >= 0");
        }
        if (routingYaml == null && !POLICIES.contains(policy)) {
            throw new IllegalArgumentException("policy must be one of " + POLICIES + ": '" + policy + "'");
        }
        podUrls = PodUrlTemplate.of(urlTemplate, urlHosts);
        adminToken = adminTokenFile == null ? null : io.kvidx.serve.BearerAuth.readToken(adminTokenFile);
        if (sessionHeader == null || sessionHeader.isBlank()) {
            throw new IllegalArgumentException("session-header must name a header");
        }
        if (cacheHint != null && (cacheHint.isEmpty() || !cacheHint.chars().allMatch(ch -> ch > 32 && ch < 127
            && ch != ':'))) {
            throw new IllegalArgumentException("cache-hint must name a header: '" + cacheHint + "'");
        }
        return this;
    }

    /**
     * @return the listen address.
     */
    public InetSocketAddress listenAddress() {
        final int colon = listen.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("listen must be HOST:PORT, got '" + listen + "'");
        }
        final String host = listen.substring(0, colon).replace("[", "").replace("]", "");
        try {
            final int port = Integer.parseInt(listen.substring(colon + 1));
            if (port < 0 || port > 65_535) {
                throw new NumberFormatException();
            }
            return InetSocketAddress.createUnresolved(host, port);
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException("listen must be HOST:PORT with a port 0..65535, got '" + listen + "'",
                ex);
        }
    }

    /**
     * The routing document: the file's profiles and workflow, or the {@link #policy}'s profile.
     *
     * @return YAML for {@link io.kvidx.routing.yaml.YamlRouting}.
     */
    public String routingDocument() {
        if (routingYaml != null) {
            return routingYaml;
        }
        final String tokenize = tokenizer == null ? ""
            : "      - {type: tokenize, tokenizer: \"" + escape(tokenizer.toAbsolutePath().toString())
            + "\", add-special-tokens: true}\n";
        final String keys = tokenize + "      - router-keys\n"
            + "      - {type: session-key, header: \"" + escape(sessionHeader) + "\"}\n";
        final String session = "      - {type: session-affinity, weight: 1}\n";
        return switch (policy) {
            case "cache-aware" -> "profiles:\n  cache-aware:\n    prepare:\n" + keys
                + "      - prefix-query\n"
                + "    filter: [alive]\n"
                + "    score:\n"
                + "      - {type: cache-affinity, weight: 2}\n"
                + "      - {type: least-load, weight: 1, metric: requests}\n"
                + session
                + "    pick: max-score\n"
                + "    fallback: power-of-two\n"
                + "workflow: {type: single, profile: cache-aware}\n";
            case "approximate" -> "profiles:\n  approximate:\n    prepare:\n" + keys
                + "      - {type: prefix-query, mode: approximate}\n"
                + "    score:\n"
                + "      - {type: cache-affinity, weight: 2}\n"
                + "      - {type: least-load, weight: 1, metric: requests}\n"
                + session
                + "    pick: max-score\n"
                + "    fallback: power-of-two\n"
                + "workflow: {type: single, profile: approximate}\n";
            case "round-robin" -> "profiles:\n  round-robin:\n"
                + "    score: [{type: round-robin, weight: 1}]\n"
                + "    pick: max-score\n"
                + "workflow: {type: single, profile: round-robin}\n";
            case "least-load" -> "profiles:\n  least-load:\n"
                + "    score: [{type: least-load, weight: 1, metric: requests}]\n"
                + "    pick: max-score\n"
                + "    fallback: power-of-two\n"
                + "workflow: {type: single, profile: least-load}\n";
            default -> throw new IllegalArgumentException("unknown policy '" + policy + "'");
        };
    }

    private static String escape(final String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }

    private static URI url(final String id, final String url) {
        if (id == null || id.isBlank()) {
            throw new IllegalArgumentException("a pod needs an id");
        }
        try {
            final URI u = URI.create(url);
            if (!"http".equals(u.getScheme()) || u.getHost() == null) {
                throw new IllegalArgumentException("pod " + id + ": url must be http://HOST[:PORT][/base], got '"
                    + url + "'");
            }
            return u;
        } catch (final IllegalArgumentException ex) {
            if (ex.getMessage() != null && ex.getMessage().startsWith("pod ")) {
                throw ex;
            }
            throw new IllegalArgumentException("pod " + id + ": not a URL: '" + url + "'", ex);
        }
    }

    private static void positive(final String key, final int v) {
        if (v <= 0) {
            throw new IllegalArgumentException(key + " must be > 0: " + v);
        }
    }
}
