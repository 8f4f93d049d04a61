package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.net.HostPatterns;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.ServingSettings;
import io.kvidx.daemon.membership.Membership;
import io.kvidx.daemon.metrics.DaemonMetrics;
import io.kvidx.daemon.ops.PodStatsFile;
import io.kvidx.daemon.serve.FleetApi;
import io.kvidx.daemon.serve.IndexHttpServer;
import io.kvidx.discovery.DiscoveryStatus;
import io.kvidx.serve.ServerTls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Starts a daemon's indexer HTTP API ({@code --http}) from its serving settings: the guards (connections, read
 * deadline, bearer and admin tokens, TLS), the registration limits, and the {@link FleetApi} through which the API
 * reaches the rest of the daemon. The daemon's start-up thread only.
 */
final class HttpApiStart {
    private static final Logger LOG = LoggerFactory.getLogger(HttpApiStart.class);

    /** What of the running daemon the API reads, each when asked (they change while it runs). */
    record Daemon(Membership membership, Supplier<CompletableFuture<byte[]>> snapshot, DaemonMetrics metrics,
        Supplier<DiscoveryStatus> discovery, Supplier<String> jetstreamProblem) {
    }

    private HttpApiStart() {
    }

    /**
     * @param context the daemon's configuration (with {@code http} set).
     * @param daemon  the running daemon's parts.
     * @return the running API.
     * @throws IllegalStateException    when the address cannot be bound.
     * @throws IllegalArgumentException when a token or TLS file cannot be used (naming it).
     */
    static IndexHttpServer start(final DaemonContext context, final Daemon daemon) {
        final ServingSettings s = context.serving();
        final InetSocketAddress address = DaemonMetrics.parseAddress(s.http());
        final IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(context.dir())
            .cell(context.cell()).attachTimeoutMs(0));
        final Path cellDir = context.indexContext().indexFile().getParent();
        final long healthMaxAgeMs = Math.max(1_000, 3 * context.heartbeatIntervalMs());
        final HostPatterns registerHosts = new HostPatterns(s.httpRegisterHosts());
        daemon.membership().maxRegistrations(s.httpMaxRegistrations());
        final ServerTls tls = s.httpTlsCertFile() == null ? null : ServerTls.of(Path.of(s.httpTlsCertFile()),
            Path.of(s.httpTlsKeyFile()), s.httpTlsClientCaFile() == null ? null : Path.of(s.httpTlsClientCaFile()),
            "--http-tls");
        final IndexHttpServer http = IndexHttpServer.start(address, s.httpThreads(),
            DaemonConfiguration.HTTP_IDLE_BUSY_SPIN.equals(s.httpIdle()), s.httpMaxBodyBytes(),
            new IndexHttpServer.Guards(s.httpMaxConnections(), s.httpRequestReadMs(),
                s.httpTokenFile() == null ? null : Path.of(s.httpTokenFile()),
                s.httpAdminTokenFile() == null ? null : Path.of(s.httpAdminTokenFile()), tls),
            reader, cellDir.resolve(TierMapDescriptor.FILE_NAME), PodStatsFile.open(cellDir), new FleetApi() {
                @Override
                public Membership membership() {
                    return daemon.membership();
                }

                @Override
                public CompletableFuture<byte[]> snapshot() {
                    return daemon.snapshot().get();
                }

                @Override
                public void scrapeMetrics(final OutputStream out) throws IOException {
                    daemon.metrics().scrape(out);
                }

                @Override
                public long healthMaxHeartbeatAgeMs() {
                    return healthMaxAgeMs;
                }

                @Override
                public DiscoveryStatus discovery() {
                    return daemon.discovery().get();
                }

                @Override
                public HostPatterns registerHosts() {
                    return registerHosts;
                }

                @Override
                public long dumpMinIntervalMs() {
                    return s.httpDumpMinIntervalMs();
                }

                @Override
                public String jetstreamProblem() {
                    return daemon.jetstreamProblem().get();
                }
            });
        if (daemon.metrics() != null) {
            daemon.metrics().httpGuards(http);
        }
        LOG.info("indexer HTTP API at {}://{}:{}/{}{}", tls == null ? "http" : "https", address.getHostString(),
            http.port(), s.httpTokenFile() != null ? " (bearer token required)" : "",
            tls != null && tls.mutual() ? " (client certificate required)" : "");
        return http;
    }
}
