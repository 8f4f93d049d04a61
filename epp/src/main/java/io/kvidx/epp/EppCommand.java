package io.kvidx.epp;

import io.kvidx.router.DecisionOptions;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code kvidx epp}: runs the Gateway API endpoint picker until stopped. Options override the YAML file's.
 */
@Command(name = "epp", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Gateway API Inference Extension endpoint picker: Envoy ext_proc v3 over gRPC (GIE's protocol);"
        + " picks the pod for each request with the host's kvidx index and the router's routing profiles and"
        + " answers x-gateway-destination-endpoint. gRPC health on the same port; /metrics and /health over HTTP.",
        "",
        "  kvidx epp --pod pod-a=http://10.0.0.1:8000 --pod pod-b=http://10.0.0.2:8000",
        "  kvidx epp --config epp.yaml --tls-cert tls.crt --tls-key tls.key"})
public final class EppCommand implements Callable<Integer> {
    @Option(names = "--config", description = "YAML: the router's document plus an epp mapping (docs/epp.md).")
    private Path config;

    @Mixin
    private DecisionOptions decision = new DecisionOptions();

    @Option(names = "--listen", description = "HOST:PORT of the gRPC server (default " + EppConfig.LISTEN_DEFAULT
        + ").")
    private String listen;

    @Option(names = "--metrics", description = "HOST:PORT of /metrics and /health, or off (default "
        + EppConfig.METRICS_DEFAULT + ").")
    private String metrics;

    @Option(names = "--allow-remote", description = "Accept --listen and --metrics addresses other hosts reach "
        + "(default: loopback only; neither door authenticates its clients, so admit only the gateway and "
        + "Prometheus with a NetworkPolicy, and serve TLS).")
    private Boolean allowRemote;

    @Option(names = "--tls-cert", description = "PEM certificate chain: serve TLS (plaintext without it).")
    private Path tlsCert;

    @Option(names = "--tls-key", description = "PEM private key of --tls-cert.")
    private Path tlsKey;

    @Option(names = "--tls-client-ca", description = "PEM CA certificates: mutual TLS, the gateway must present a "
        + "certificate they signed (needs --tls-cert).")
    private Path tlsClientCa;

    @Option(names = "--token-file", description = "File holding a bearer token: ext_proc streams need"
        + " 'authorization: Bearer <token>' metadata, the metrics door the header (all but /health).")
    private Path tokenFile;

    @Option(names = "--max-body-bytes", description = "Largest request body (default "
        + EppLimits.MAX_BODY_BYTES_DEFAULT + ").")
    private Integer maxBodyBytes;

    @Option(names = "--stream-deadline-ms", description = "From a stream's first message to its answer (default "
        + EppLimits.STREAM_DEADLINE_MS_DEFAULT + ").")
    private Integer streamDeadlineMs;

    @Option(names = "--max-streams", description = "Streams open at once (default " + EppLimits.MAX_STREAMS_DEFAULT
        + ").")
    private Integer maxStreams;

    @Option(names = "--body-mode", description = "Request body mode when Envoy sends no protocol_config: buffered,"
        + " streamed, full-duplex-streamed (default).")
    private String bodyMode;

    @Override
    public Integer call() throws Exception {
        final EppConfig c;
        try {
            c = build();
        } catch (final IllegalArgumentException ex) {
            System.err.println("kvidx epp: " + ex.getMessage());
            return 2;
        }
        final EppServer server;
        try {
            server = EppServer.start(c);
        } catch (final RuntimeException | java.io.IOException ex) {
            System.err.println("kvidx epp: " + ex.getMessage());
            return 1;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "kvidx-epp-shutdown"));
        System.out.printf("kvidx epp listening on %s:%d (%s), metrics on %s, %d pod(s) listed, index %s/%s%n",
            c.listenAddress().getHostString(), server.port(),
            c.tlsCert == null ? "plaintext" : c.tlsClientCa != null ? "mutual TLS" : "TLS",
            server.metricsPort() < 0 ? "none" : "port " + server.metricsPort(), c.pods.size(), c.dir, c.cell);
        System.out.flush();
        server.awaitClose();
        return 0;
    }

    EppConfig build() throws java.io.IOException {
        final EppConfig c = config == null ? new EppConfig()
            : EppConfig.fromYaml(Files.readString(config), config.toAbsolutePath().getParent());
        decision.applyTo(c);
        c.listen = listen != null ? listen : c.listen;
        c.metrics = metrics != null ? metrics : c.metrics;
        c.allowRemote = allowRemote != null ? allowRemote : c.allowRemote;
        c.tlsCert = tlsCert != null ? tlsCert : c.tlsCert;
        c.tlsKey = tlsKey != null ? tlsKey : c.tlsKey;
        c.tlsClientCa = tlsClientCa != null ? tlsClientCa : c.tlsClientCa;
        c.tokenFile = tokenFile != null ? tokenFile : c.tokenFile;
        c.maxBodyBytes = maxBodyBytes != null ? maxBodyBytes : c.maxBodyBytes;
        c.streamDeadlineMs = streamDeadlineMs != null ? streamDeadlineMs : c.streamDeadlineMs;
        c.maxStreams = maxStreams != null ? maxStreams : c.maxStreams;
        c.bodyMode = bodyMode != null ? bodyMode : c.bodyMode;
        return c.validate();
    }

    /**
     * @param args command line.
     */
    public static void main(final String[] args) {
        System.exit(new CommandLine(new EppCommand()).execute(args));
    }
}
