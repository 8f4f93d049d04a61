package io.kvidx.router;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code kvidx router}: runs the OpenAI-compatible router until stopped (SIGTERM or SIGINT close it cleanly). Options
 * given on the command line override the YAML file's.
 */
@Command(name = "router", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Cache-aware, OpenAI-compatible router in front of vLLM and SGLang pods: serves POST "
        + "/v1/completions and /v1/chat/completions (streaming or not), GET /v1/models, /health and /metrics; routes "
        + "each request with the host's kvidx index (read-only) and the routing profile, and proxies it.",
        "",
        "  kvidx router --listen 127.0.0.1:8080 --pod pod-a=http://10.0.0.1:8000 --pod pod-b=http://10.0.0.2:8000",
        "  kvidx router --config router.yaml"})
public final class RouterCommand implements Callable<Integer> {
    @Option(names = "--config", description = "Router YAML (listen, index, pods, profiles, ...; docs/router.md).")
    private Path config;

    @Mixin
    private DecisionOptions decision = new DecisionOptions();

    @Option(names = "--listen", description = "HOST:PORT to serve on (default " + RouterConfig.LISTEN_DEFAULT + ").")
    private String listen;

    @Option(names = "--threads", description = "Event-loop threads (default " + RouterConfig.THREADS_DEFAULT + ").")
    private Integer threads;

    @Option(names = "--warm-up-decisions", description = "Synthetic decisions made before /health reports ready"
        + " (default " + RouterConfig.WARM_UP_DECISIONS_DEFAULT + "; 0: none).")
    private Integer warmUpDecisions;

    @Option(names = "--warm-up-ms", description = "Most milliseconds the warm-up takes (default "
        + RouterConfig.WARM_UP_MS_DEFAULT + ").")
    private Integer warmUpMs;

    @Option(names = "--attempts", description = "Calls per stage before giving up (default "
        + RouterConfig.ATTEMPTS_DEFAULT + ").")
    private Integer attempts;

    @Option(names = "--connect-ms", description = "Connect timeout to a pod (default "
        + RouterConfig.CONNECT_MS_DEFAULT + ").")
    private Integer connectMs;

    @Option(names = "--first-byte-ms", description = "Time to a pod's response headers (default "
        + RouterConfig.FIRST_BYTE_MS_DEFAULT + ").")
    private Integer firstByteMs;

    @Option(names = "--request-ms", description = "Time a whole request may take (default "
        + RouterConfig.REQUEST_MS_DEFAULT + ").")
    private Integer requestMs;

    @Option(names = "--session-header", description = "Header carrying the session id (default "
        + RouterConfig.SESSION_HEADER_DEFAULT + ").")
    private String sessionHeader;

    @Option(names = "--lora-adapter", description = "NAME=BASE_MODEL: requests whose model is NAME use that adapter"
        + " of BASE_MODEL (repeatable).")
    private List<String> loraAdapters = new ArrayList<>();

    @Option(names = "--health-interval-ms", description = "Pod health checks (0: off; default "
        + RouterConfig.HEALTH_INTERVAL_MS_DEFAULT + ").")
    private Integer healthIntervalMs;

    @Option(names = "--scrape-interval-ms", description = "Read each engine's /metrics for its load (0: off, the"
        + " default).")
    private Integer scrapeIntervalMs;

    @Option(names = "--response-headers", description = "Add x-kvidx-pod and x-kvidx-predicted-tokens to answers.")
    private Boolean responseHeaders;

    @Option(names = "--allow-remote", description = "Accept a --listen address other hosts reach (default: loopback"
        + " only; the router authenticates no client, so admit only your gateway with a NetworkPolicy or firewall).")
    private Boolean allowRemote;

    @Option(names = "--admin-token-file", paramLabel = "FILE", description = "GET /metrics needs 'Authorization: "
        + "Bearer <token>', the token read from FILE (at least 16 characters); the proxied traffic does not (the "
        + "clients' own Authorization goes to the engines).")
    private Path adminTokenFile;

    @Option(names = "--tls-cert", paramLabel = "FILE", description = "PEM certificate chain: serve HTTPS (with "
        + "--tls-key).")
    private Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE", description = "PEM private key of --tls-cert (PKCS#8).")
    private Path tlsKey;

    @Option(names = "--tls-client-ca", paramLabel = "FILE", description = "PEM CA certificates: mutual TLS, every "
        + "client must present a certificate they signed (needs --tls-cert); lets --listen take another host's "
        + "address without --allow-remote.")
    private Path tlsClientCa;

    @Option(names = "--cache-hint", description = "Send the chosen pod where it holds the prompt's cached prefix"
        + " (GPU, CPU, disk; from the host tier map) in this request header, e.g. x-kvidx-cache-hint (off by"
        + " default).")
    private String cacheHint;

    @Option(names = "--max-body-bytes", description = "Largest request body (default "
        + RouterConfig.MAX_BODY_BYTES_DEFAULT + ").")
    private Integer maxBodyBytes;

    @Option(names = "--block-size", description = "Tokens per block when the index is not mapped at start (default "
        + RouterConfig.BLOCK_SIZE_DEFAULT + "; else the index's).")
    private Integer blockSize;

    @Override
    public Integer call() throws Exception {
        final RouterConfig c;
        try {
            c = build();
        } catch (final IllegalArgumentException ex) {
            System.err.println("kvidx router: " + ex.getMessage());
            return 2;
        }
        final RouterServer server;
        try {
            server = RouterServer.start(c);
        } catch (final RuntimeException ex) {
            System.err.println("kvidx router: " + ex.getMessage());
            return 1;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "kvidx-router-shutdown"));
        System.out.printf("kvidx router listening on %s:%d (%s, %d pod(s) listed, index %s/%s, block size %d)%n",
            c.listenAddress().getHostString(), server.port(),
            c.routingYaml != null ? "profiles from " + config : "policy " + c.policy, c.pods.size(), c.dir, c.cell,
            server.blockSize());
        System.out.flush();
        server.awaitClose();
        return 0;
    }

    RouterConfig build() throws java.io.IOException {
        final RouterConfig c = config == null ? new RouterConfig()
            : RouterConfig.fromYaml(Files.readString(config), config.toAbsolutePath().getParent());
        if (listen != null) {
            c.listen = listen;
        }
        decision.applyTo(c);
        c.threads = threads != null ? threads : c.threads;
        c.attempts = attempts != null ? attempts : c.attempts;
        c.warmUpDecisions = warmUpDecisions != null ? warmUpDecisions : c.warmUpDecisions;
        c.warmUpMs = warmUpMs != null ? warmUpMs : c.warmUpMs;
        c.connectMs = connectMs != null ? connectMs : c.connectMs;
        c.firstByteMs = firstByteMs != null ? firstByteMs : c.firstByteMs;
        c.requestMs = requestMs != null ? requestMs : c.requestMs;
        c.sessionHeader = sessionHeader != null ? sessionHeader : c.sessionHeader;
        c.healthIntervalMs = healthIntervalMs != null ? healthIntervalMs : c.healthIntervalMs;
        c.scrapeIntervalMs = scrapeIntervalMs != null ? scrapeIntervalMs : c.scrapeIntervalMs;
        c.responseHeaders = responseHeaders != null ? responseHeaders : c.responseHeaders;
        c.allowRemote = allowRemote != null ? allowRemote : c.allowRemote;
        c.adminTokenFile = adminTokenFile != null ? adminTokenFile : c.adminTokenFile;
        c.tlsCert = tlsCert != null ? tlsCert : c.tlsCert;
        c.tlsKey = tlsKey != null ? tlsKey : c.tlsKey;
        c.tlsClientCa = tlsClientCa != null ? tlsClientCa : c.tlsClientCa;
        c.cacheHint = cacheHint != null ? cacheHint : c.cacheHint;
        c.maxBodyBytes = maxBodyBytes != null ? maxBodyBytes : c.maxBodyBytes;
        c.blockSize = blockSize != null ? blockSize : c.blockSize;
        for (final String a : loraAdapters) {
            final int eq = a.indexOf('=');
            if (eq <= 0 || eq == a.length() - 1) {
                throw new IllegalArgumentException("--lora-adapter expects NAME=BASE_MODEL, got '" + a + "'");
            }
            c.loraAdapters.put(a.substring(0, eq), a.substring(eq + 1));
        }
        return c.validate();
    }

    /**
     * @param args command line.
     */
    public static void main(final String[] args) {
        System.exit(new CommandLine(new RouterCommand()).execute(args));
    }
}
