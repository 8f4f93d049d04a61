package io.kvidx.daemon.config;

import io.kvidx.daemon.metrics.DaemonMetrics;

/**
 * The daemon's doors onto the network: its Prometheus endpoint ({@code metrics}, loopback unless
 * {@code metricsAllowRemote}) and its indexer HTTP API ({@code http}: loopback unless it requires a bearer token,
 * {@code httpTokenFile}, or {@code httpAllowRemote}; its event-loop threads, how they wait, the largest request body,
 * the connection bound and the request read deadline). Both are off by default. Defaults from {@link DaemonConfiguration}.
 *
 * <p><b>Note:</b> part of a {@link DaemonContext}: not thread safe; filled in on one thread, read after
 * {@link #conclude()}.
 */
public final class ServingSettings {
    private String metrics = DaemonConfiguration.METRICS_DEFAULT;
    private boolean metricsAllowRemote = DaemonConfiguration.METRICS_ALLOW_REMOTE_DEFAULT;
    private String http = DaemonConfiguration.HTTP_DEFAULT;
    private int httpThreads = DaemonConfiguration.HTTP_THREADS_DEFAULT;
    private String httpIdle = DaemonConfiguration.HTTP_IDLE_DEFAULT;
    private int httpMaxBodyBytes = DaemonConfiguration.HTTP_MAX_BODY_BYTES_DEFAULT;
    private String httpTokenFile;
    private String httpAdminTokenFile;
    private String httpTlsCertFile;
    private String httpTlsKeyFile;
    private String httpTlsClientCaFile;
    private boolean httpAllowRemote = DaemonConfiguration.HTTP_ALLOW_REMOTE_DEFAULT;
    private int httpMaxConnections = DaemonConfiguration.HTTP_MAX_CONNECTIONS_DEFAULT;
    private int httpRequestReadMs = DaemonConfiguration.HTTP_REQUEST_READ_MS_DEFAULT;
    private int httpMaxRegistrations = DaemonConfiguration.HTTP_MAX_REGISTRATIONS_DEFAULT;
    private final java.util.List<String> httpRegisterHosts = new java.util.ArrayList<>();
    private long httpDumpMinIntervalMs = DaemonConfiguration.HTTP_DUMP_MIN_INTERVAL_MS_DEFAULT;

    /**
     * Checks the metrics address (and that it is loopback unless allowed otherwise), the HTTP API's address, how its
     * event loops wait, its threads and its largest body, in that order.
     *
     * @throws ConfigException naming the key of the first value out of range.
     */
    void conclude() {
        if (metrics != null) {
            try {
                DaemonMetrics.parseAddress(metrics);
            } catch (final IllegalArgumentException ex) {
                throw new ConfigException(DaemonConfiguration.METRICS_PROP_NAME,
                    "must be HOST:PORT with a port in [0, 65535]: " + metrics);
            }
            if (!metricsAllowRemote && !NetworkScope.isLoopback(NetworkScope.hostOf(metrics))) {
                throw new ConfigException(DaemonConfiguration.METRICS_PROP_NAME, "must be on a loopback address "
                    + "(127.0.0.1:PORT, [::1]:PORT, localhost:PORT) unless "
                    + DaemonConfiguration.METRICS_ALLOW_REMOTE_PROP_NAME + " (--metrics-allow-remote) is set: it "
                    + "exports pod ids and models to anyone who reaches it: " + metrics);
            }
        }
        if (http != null) {
            try {
                DaemonMetrics.parseAddress(http);
            } catch (final IllegalArgumentException ex) {
                throw new ConfigException(DaemonConfiguration.HTTP_PROP_NAME,
                    "must be HOST:PORT with a port in [0, 65535]: " + http);
            }
            if (httpTokenFile == null && httpTlsClientCaFile == null && !httpAllowRemote
                && !NetworkScope.isLoopback(NetworkScope.hostOf(http))) {
                throw new ConfigException(DaemonConfiguration.HTTP_PROP_NAME, "must be on a loopback address "
                    + "(127.0.0.1:PORT, [::1]:PORT, localhost:PORT) unless "
                    + DaemonConfiguration.HTTP_TOKEN_FILE_PROP_NAME + " (--http-token-file) requires a bearer token, "
                    + DaemonConfiguration.HTTP_TLS_CLIENT_CA_FILE_PROP_NAME + " (--http-tls-client-ca-file) requires "
                    + "a client certificate or "
                    + DaemonConfiguration.HTTP_ALLOW_REMOTE_PROP_NAME + " (--http-allow-remote) is set: it registers "
                    + "engines and dumps the index for anyone who reaches it: " + http);
            }
        }
        if ((httpTlsCertFile == null) != (httpTlsKeyFile == null)) {
            throw new ConfigException(httpTlsCertFile == null ? DaemonConfiguration.HTTP_TLS_CERT_FILE_PROP_NAME
                : DaemonConfiguration.HTTP_TLS_KEY_FILE_PROP_NAME, "the HTTP API's TLS needs both "
                + DaemonConfiguration.HTTP_TLS_CERT_FILE_PROP_NAME + " and "
                + DaemonConfiguration.HTTP_TLS_KEY_FILE_PROP_NAME);
        }
        if (httpTlsClientCaFile != null && httpTlsCertFile == null) {
            throw new ConfigException(DaemonConfiguration.HTTP_TLS_CLIENT_CA_FILE_PROP_NAME, "mutual TLS needs the "
                + "server's own certificate: set " + DaemonConfiguration.HTTP_TLS_CERT_FILE_PROP_NAME + " and "
                + DaemonConfiguration.HTTP_TLS_KEY_FILE_PROP_NAME);
        }
        if (httpAdminTokenFile != null && httpTokenFile == null) {
            throw new ConfigException(DaemonConfiguration.HTTP_ADMIN_TOKEN_FILE_PROP_NAME, "needs "
                + DaemonConfiguration.HTTP_TOKEN_FILE_PROP_NAME + " (--http-token-file): the admin token guards /dump "
                + "and /metrics of an API that requires a token");
        }
        ConfigException.range(DaemonConfiguration.HTTP_MAX_CONNECTIONS_PROP_NAME, httpMaxConnections, 1,
            DaemonConfiguration.HTTP_MAX_CONNECTIONS_MAX);
        ConfigException.range(DaemonConfiguration.HTTP_REQUEST_READ_MS_PROP_NAME, httpRequestReadMs,
            DaemonConfiguration.HTTP_REQUEST_READ_MS_MIN, DaemonConfiguration.HTTP_REQUEST_READ_MS_MAX);
        ConfigException.range(DaemonConfiguration.HTTP_MAX_REGISTRATIONS_PROP_NAME, httpMaxRegistrations, 1,
            DaemonConfiguration.HTTP_MAX_REGISTRATIONS_MAX);
        if (httpDumpMinIntervalMs < 0 || httpDumpMinIntervalMs > DaemonConfiguration.HTTP_DUMP_MIN_INTERVAL_MS_MAX) {
            throw new ConfigException(DaemonConfiguration.HTTP_DUMP_MIN_INTERVAL_MS_PROP_NAME, "must be in [0, "
                + DaemonConfiguration.HTTP_DUMP_MIN_INTERVAL_MS_MAX + "]: " + httpDumpMinIntervalMs);
        }
        try {
            new io.kvidx.client.net.HostPatterns(httpRegisterHosts);
        } catch (final IllegalArgumentException ex) {
            throw new ConfigException(DaemonConfiguration.HTTP_REGISTER_HOSTS_PROP_NAME, ex.getMessage());
        }
        if (!DaemonConfiguration.HTTP_IDLE_BLOCK.equals(httpIdle)
            && !DaemonConfiguration.HTTP_IDLE_BUSY_SPIN.equals(httpIdle)) {
            throw new ConfigException(DaemonConfiguration.HTTP_IDLE_PROP_NAME, "must be "
                + DaemonConfiguration.HTTP_IDLE_BLOCK + " or " + DaemonConfiguration.HTTP_IDLE_BUSY_SPIN + ": "
                + httpIdle);
        }
        ConfigException.range(DaemonConfiguration.HTTP_THREADS_PROP_NAME, httpThreads, 1,
            DaemonConfiguration.HTTP_THREADS_MAX);
        ConfigException.range(DaemonConfiguration.HTTP_MAX_BODY_BYTES_PROP_NAME, httpMaxBodyBytes,
            DaemonConfiguration.HTTP_MAX_BODY_BYTES_MIN, DaemonConfiguration.HTTP_MAX_BODY_BYTES_MAX);
    }

    /**
     * @param hostPort where to serve Prometheus metrics ({@code HOST:PORT}; port 0 picks a free one), or null for
     *                 no metrics endpoint.
     * @return this.
     */
    public ServingSettings metrics(final String hostPort) {
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
     * @param allow true to accept a metrics endpoint on a wildcard or non-loopback address (it exports pod ids and
     *              models, unauthenticated); false (default) refuses one at conclude.
     * @return this.
     */
    public ServingSettings metricsAllowRemote(final boolean allow) {
        this.metricsAllowRemote = allow;
        return this;
    }

    /**
     * @return whether the metrics endpoint may be reachable from other hosts.
     */
    public boolean metricsAllowRemote() {
        return metricsAllowRemote;
    }

    /**
     * @param hostPort where to serve the indexer HTTP API ({@code HOST:PORT}; port 0 picks a free one), or null for
     *                 none (the default).
     * @return this.
     */
    public ServingSettings http(final String hostPort) {
        this.http = hostPort;
        return this;
    }

    /**
     * @return where to serve the indexer HTTP API, or null for none.
     */
    public String http() {
        return http;
    }

    /**
     * @param threads HTTP event-loop threads.
     * @return this.
     */
    public ServingSettings httpThreads(final int threads) {
        this.httpThreads = threads;
        return this;
    }

    /**
     * @return HTTP event-loop threads.
     */
    public int httpThreads() {
        return httpThreads;
    }

    /**
     * @param idle how the HTTP event loops wait: {@code block} (default) or {@code busy-spin} (each loop takes a
     *             core; a request skips the thread wake-up, tens of microseconds on a VM).
     * @return this.
     */
    public ServingSettings httpIdle(final String idle) {
        this.httpIdle = idle;
        return this;
    }

    /**
     * @return how the HTTP event loops wait.
     */
    public String httpIdle() {
        return httpIdle;
    }

    /**
     * @param bytes largest HTTP request body; a larger one is answered 413 without being read further.
     * @return this.
     */
    public ServingSettings httpMaxBodyBytes(final int bytes) {
        this.httpMaxBodyBytes = bytes;
        return this;
    }

    /**
     * @return largest HTTP request body, in bytes.
     */
    public int httpMaxBodyBytes() {
        return httpMaxBodyBytes;
    }

    /**
     * @param file a file holding the bearer token every HTTP API request but {@code /health} must carry (a mounted
     *             Secret), or null for none.
     * @return this.
     */
    public ServingSettings httpTokenFile(final String file) {
        this.httpTokenFile = file;
        return this;
    }

    /**
     * @return the HTTP API's token file, or null.
     */
    public String httpTokenFile() {
        return httpTokenFile;
    }

    /**
     * @param file a file holding the token {@code /dump} and {@code /metrics} need (the {@link #httpTokenFile} token
     *             then does not open them), or null: the one token opens all.
     * @return this.
     */
    public ServingSettings httpAdminTokenFile(final String file) {
        this.httpAdminTokenFile = file;
        return this;
    }

    /**
     * @return the admin token's file, or null.
     */
    public String httpAdminTokenFile() {
        return httpAdminTokenFile;
    }

    /**
     * @param file the HTTP API's TLS certificate chain (PEM), or null for plain HTTP.
     * @return this.
     */
    public ServingSettings httpTlsCertFile(final String file) {
        this.httpTlsCertFile = file;
        return this;
    }

    /**
     * @return the HTTP API's TLS certificate chain file, or null.
     */
    public String httpTlsCertFile() {
        return httpTlsCertFile;
    }

    /**
     * @param file the HTTP API's TLS private key (PEM, PKCS#8), or null.
     * @return this.
     */
    public ServingSettings httpTlsKeyFile(final String file) {
        this.httpTlsKeyFile = file;
        return this;
    }

    /**
     * @return the HTTP API's TLS private key file, or null.
     */
    public String httpTlsKeyFile() {
        return httpTlsKeyFile;
    }

    /**
     * @param file CA certificates (PEM) client certificates must chain to (mutual TLS), or null for none.
     * @return this.
     */
    public ServingSettings httpTlsClientCaFile(final String file) {
        this.httpTlsClientCaFile = file;
        return this;
    }

    /**
     * @return the mutual TLS client CA file, or null.
     */
    public String httpTlsClientCaFile() {
        return httpTlsClientCaFile;
    }

    /**
     * @param allow true to accept an {@code http} address other hosts reach without a token (a NetworkPolicy or a
     *              proxy in front must then keep others out).
     * @return this.
     */
    public ServingSettings httpAllowRemote(final boolean allow) {
        this.httpAllowRemote = allow;
        return this;
    }

    /**
     * @return whether the HTTP API may be reachable from other hosts without a token.
     */
    public boolean httpAllowRemote() {
        return httpAllowRemote;
    }

    /**
     * @param connections connections the HTTP API keeps open at once (one more is closed at accept).
     * @return this.
     */
    public ServingSettings httpMaxConnections(final int connections) {
        this.httpMaxConnections = connections;
        return this;
    }

    /**
     * @return the HTTP API's connection bound.
     */
    public int httpMaxConnections() {
        return httpMaxConnections;
    }

    /**
     * @param ms time a client may take to send one whole request (its connection is closed after).
     * @return this.
     */
    public ServingSettings httpRequestReadMs(final int ms) {
        this.httpRequestReadMs = ms;
        return this;
    }

    /**
     * @return the HTTP API's request read deadline, ms.
     */
    public int httpRequestReadMs() {
        return httpRequestReadMs;
    }

    /**
     * @param max the most engines API registrations may hold at once (ranks count); one more gets 429.
     * @return this.
     */
    public ServingSettings httpMaxRegistrations(final int max) {
        this.httpMaxRegistrations = max;
        return this;
    }

    /**
     * @return the registration bound.
     */
    public int httpMaxRegistrations() {
        return httpMaxRegistrations;
    }

    /**
     * @param pattern a CIDR block or host glob a registration's endpoints may name (the list adds up; empty: any).
     * @return this.
     */
    public ServingSettings addHttpRegisterHost(final String pattern) {
        httpRegisterHosts.add(pattern);
        return this;
    }

    /**
     * @return the hosts registrations may name (empty: any).
     */
    public java.util.List<String> httpRegisterHosts() {
        return java.util.List.copyOf(httpRegisterHosts);
    }

    /**
     * @param ms how long a {@code /dump} snapshot is served to every caller after it was taken (0: a new one for each
     *           caller not sharing one in flight).
     * @return this.
     */
    public ServingSettings httpDumpMinIntervalMs(final long ms) {
        this.httpDumpMinIntervalMs = ms;
        return this;
    }

    /**
     * @return the {@code /dump} snapshot's reuse interval, ms.
     */
    public long httpDumpMinIntervalMs() {
        return httpDumpMinIntervalMs;
    }
}
