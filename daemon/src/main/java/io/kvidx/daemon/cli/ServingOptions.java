package io.kvidx.daemon.cli;

import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.ServingSettings;
import io.kvidx.daemon.config.SnapshotSettings;
import picocli.CommandLine.Option;

/**
 * The options of {@code kvidx daemon} that open it to the network (a picocli mixin): the Prometheus endpoint, the
 * indexer HTTP API, and the snapshots a replica catches up from ({@code --peer}). Unset options leave the context as
 * the config file made it.
 */
final class ServingOptions {
    @Option(names = "--metrics", paramLabel = "HOST:PORT", description = "Serve Prometheus metrics at "
        + "http://HOST:PORT/metrics, e.g. 127.0.0.1:9464 (default: off). A loopback address unless "
        + "--metrics-allow-remote: it exports pod ids and models, unauthenticated.")
    private String metrics;

    @Option(names = "--metrics-allow-remote", negatable = true, description = "Accept a --metrics address that is a "
        + "wildcard or not loopback (default " + DaemonConfiguration.METRICS_ALLOW_REMOTE_DEFAULT + ").")
    private Boolean metricsAllowRemote;

    @Option(names = "--peer", paramLabel = "URL", description = "Catch up from a running daemon at start: when "
        + "this cell's index is created new, load the snapshot at URL/dump?format=kvidx (its HTTP API), then replay "
        + "each ZeroMQ engine from the snapshot's sequences, as after a restart (default: start empty). A snapshot of "
        + "another --block-size is refused.")
    private String peer;

    @Option(names = "--peer-optional", negatable = true, description = "Start empty (logged) when the --peer "
        + "snapshot cannot be fetched or is corrupt, instead of failing the start (default "
        + DaemonConfiguration.PEER_OPTIONAL_DEFAULT + ").")
    private Boolean peerOptional;

    @Option(names = "--peer-timeout-ms", paramLabel = "MS", description = "Bound on connecting to the --peer and "
        + "on the whole snapshot download (default " + DaemonConfiguration.PEER_TIMEOUT_MS_DEFAULT + ").")
    private Long peerTimeoutMs;

    @Option(names = "--snapshot-max-bytes", paramLabel = "BYTES", description = "Longest snapshot this daemon takes "
        + "for a replica (/dump?format=kvidx) or loads from a --peer (default "
        + DaemonConfiguration.SNAPSHOT_MAX_BYTES_DEFAULT + ").")
    private Long snapshotMaxBytes;

    @Option(names = "--http", paramLabel = "HOST:PORT", description = "Serve the indexer HTTP API (Dynamo standalone "
        + "indexer / Mooncake compatible: register, unregister, workers, query, query_by_hash, dump, health, metrics) "
        + "at http://HOST:PORT/ (default: off). It registers engines: a loopback address unless --http-token-file "
        + "or --http-allow-remote.")
    private String http;

    @Option(names = "--http-token-file", paramLabel = "FILE", description = "Require 'Authorization: Bearer "
        + "<token>' on every HTTP API request but /health, the token read from FILE (at least 16 characters).")
    private String httpTokenFile;

    @Option(names = "--http-admin-token-file", paramLabel = "FILE", description = "A second token, from FILE: "
        + "/dump and /metrics then need it, and the --http-token-file token does not open them.")
    private String httpAdminTokenFile;

    @Option(names = "--http-tls-cert-file", paramLabel = "FILE", description = "Serve the HTTP API over TLS with "
        + "this certificate chain (PEM) and --http-tls-key-file.")
    private String httpTlsCertFile;

    @Option(names = "--http-tls-key-file", paramLabel = "FILE", description = "The HTTP API's TLS private key (PEM, "
        + "PKCS#8).")
    private String httpTlsKeyFile;

    @Option(names = "--http-tls-client-ca-file", paramLabel = "FILE", description = "Mutual TLS: a client must "
        + "present a certificate these CA certificates (PEM) signed, else the handshake fails.")
    private String httpTlsClientCaFile;

    @Option(names = "--http-allow-remote", negatable = true, description = "Accept an --http address that is a "
        + "wildcard or not loopback without --http-token-file (default "
        + DaemonConfiguration.HTTP_ALLOW_REMOTE_DEFAULT + "): something else must keep others out.")
    private Boolean httpAllowRemote;

    @Option(names = "--http-max-connections", paramLabel = "N", description = "HTTP connections open at once; one "
        + "more is closed at accept (default " + DaemonConfiguration.HTTP_MAX_CONNECTIONS_DEFAULT + ").")
    private Integer httpMaxConnections;

    @Option(names = "--http-request-read-ms", paramLabel = "MS", description = "Time a client may take to send one "
        + "whole request; its connection is closed after (default " + DaemonConfiguration.HTTP_REQUEST_READ_MS_DEFAULT
        + ").")
    private Integer httpRequestReadMs;

    @Option(names = "--http-max-registrations", paramLabel = "N", description = "Most engines API registrations may "
        + "hold at once, ranks counted (default " + DaemonConfiguration.HTTP_MAX_REGISTRATIONS_DEFAULT + "); one more "
        + "gets 429.")
    private Integer httpMaxRegistrations;

    @Option(names = "--http-register-host", paramLabel = "PATTERN", description = "CIDR block (10.0.0.0/8) or host "
        + "glob (*.vllm.svc.cluster.local) a registration's endpoints may name (repeatable; default: any host); "
        + "others get 403.")
    private java.util.List<String> httpRegisterHosts = new java.util.ArrayList<>();

    @Option(names = "--http-dump-min-interval-ms", paramLabel = "MS", description = "Serve one /dump snapshot to "
        + "every caller for MS after it was taken: the writers take at most one per interval (default "
        + DaemonConfiguration.HTTP_DUMP_MIN_INTERVAL_MS_DEFAULT + ").")
    private Long httpDumpMinIntervalMs;

    @Option(names = "--http-threads", paramLabel = "N", description = "HTTP event-loop threads (default "
        + DaemonConfiguration.HTTP_THREADS_DEFAULT + ").")
    private Integer httpThreads;

    @Option(names = "--http-idle", paramLabel = "block|busy-spin", description = "How the HTTP event loops wait "
        + "(default " + DaemonConfiguration.HTTP_IDLE_DEFAULT + "); busy-spin takes a core per loop and saves the "
        + "thread wake-up per request.")
    private String httpIdle;

    @Option(names = "--http-max-body-bytes", paramLabel = "BYTES", description = "Largest HTTP request body "
        + "(default " + DaemonConfiguration.HTTP_MAX_BODY_BYTES_DEFAULT + "); larger ones get 413.")
    private Integer httpMaxBodyBytes;

    /**
     * Sets the options given.
     *
     * @param context the daemon's context.
     */
    void applyTo(final DaemonContext context) {
        final ServingSettings settings = context.serving();
        final SnapshotSettings snapshots = context.snapshots();
        if (metrics != null) {
            settings.metrics(metrics);
        }
        if (metricsAllowRemote != null) {
            settings.metricsAllowRemote(metricsAllowRemote);
        }
        if (peer != null) {
            snapshots.peer(peer);
        }
        if (peerOptional != null) {
            snapshots.peerOptional(peerOptional);
        }
        if (peerTimeoutMs != null) {
            snapshots.peerTimeoutMs(peerTimeoutMs);
        }
        if (snapshotMaxBytes != null) {
            snapshots.snapshotMaxBytes(snapshotMaxBytes);
        }
        if (http != null) {
            settings.http(http);
        }
        if (httpThreads != null) {
            settings.httpThreads(httpThreads);
        }
        if (httpIdle != null) {
            settings.httpIdle(httpIdle);
        }
        if (httpMaxBodyBytes != null) {
            settings.httpMaxBodyBytes(httpMaxBodyBytes);
        }
        if (httpTokenFile != null) {
            settings.httpTokenFile(httpTokenFile);
        }
        if (httpAdminTokenFile != null) {
            settings.httpAdminTokenFile(httpAdminTokenFile);
        }
        if (httpTlsCertFile != null) {
            settings.httpTlsCertFile(httpTlsCertFile);
        }
        if (httpTlsKeyFile != null) {
            settings.httpTlsKeyFile(httpTlsKeyFile);
        }
        if (httpTlsClientCaFile != null) {
            settings.httpTlsClientCaFile(httpTlsClientCaFile);
        }
        if (httpAllowRemote != null) {
            settings.httpAllowRemote(httpAllowRemote);
        }
        if (httpMaxConnections != null) {
            settings.httpMaxConnections(httpMaxConnections);
        }
        if (httpRequestReadMs != null) {
            settings.httpRequestReadMs(httpRequestReadMs);
        }
        if (httpMaxRegistrations != null) {
            settings.httpMaxRegistrations(httpMaxRegistrations);
        }
        httpRegisterHosts.forEach(settings::addHttpRegisterHost);
        if (httpDumpMinIntervalMs != null) {
            settings.httpDumpMinIntervalMs(httpDumpMinIntervalMs);
        }
    }
}
