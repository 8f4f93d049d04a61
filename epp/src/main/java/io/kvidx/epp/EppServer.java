package io.kvidx.epp;

import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.ServerInterceptors;
import io.grpc.TlsServerCredentials;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodTopology;
import io.kvidx.routing.Profile;
import io.kvidx.routing.Router;
import io.kvidx.routing.yaml.YamlRouting;
import io.kvidx.serve.BearerAuth;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpPipeline;
import io.kvidx.serve.NettyServer;
import io.kvidx.serve.ServeContext;
import io.kvidx.tokenize.TokenizePreparer;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code kvidx epp}: the Gateway API endpoint picker over the router's decision layer. Assembles the index
 * (read-only, {@link IndexReaderPodIndex}: decisions fall back while it is absent), the pods ({@link EndpointBook}),
 * the routing document (the router's, {@link YamlRouting}), the {@link Picker}, the ext_proc gRPC server
 * ({@link PickerService}, gRPC's health service, TLS when given a certificate) and the HTTP door for
 * {@code /metrics} and {@code /health} on the serving layer ({@link NettyServer}, {@link HttpPipeline}).
 *
 * <p>Threads: gRPC's event loops (grpc-netty-shaded; calls run there, a direct executor: token-id picks take
 * microseconds and never wait), the deciding threads (text and chat through the tokenizer, and every pick of a
 * workflow with a plugin that may wait; a bounded queue), one timer (stream deadlines), one HTTP event loop, one housekeeping thread (pods and health every {@link #REFRESH_MS} ms).
 *
 * <p><b>Note:</b> started and closed by one thread.
 */
public final class EppServer implements AutoCloseable {
    /** How often the pods follow the index and the health statuses are set. */
    public static final long REFRESH_MS = 250;
    /** Requests waiting for a tokenizing thread before new text requests are refused (503). */
    public static final int TOKENIZE_QUEUE = 1024;
        /** The health service names GIE's EPP answers besides the overall one. */
    static final String[] HEALTH_SERVICES = {"liveness", "readiness",
        "envoy.service.ext_proc.v3.ExternalProcessor"};

    final IndexReaderPodIndex index;
    final PodRegistry registry;
    final EndpointBook book;
    final EppMetrics metrics;
    private final YamlRouting.Loaded loaded;
    private final YamlRouting.Environment environment;
    private final ThreadPoolExecutor tokenizePool;
    private final ScheduledThreadPoolExecutor timer;
    private final HealthStatusManager health = new HealthStatusManager();
    /** The ext_proc service's token check, or null without a token file. */
    final TokenInterceptor tokens;
    private final Server grpc;
    private final NettyServer http;
    private final Thread housekeeping;
    private final int blockSize;
    private volatile boolean running = true;

    private EppServer(final EppConfig config) throws IOException {
        final IndexReaderContext indexContext = new IndexReaderContext().dir(Path.of(config.dir)).cell(config.cell);
        this.index = new IndexReaderPodIndex(indexContext, 1_000);
        this.registry = new PodRegistry();
        final int mapped = index.isAvailable() ? index.blockSize() : 0;
        this.blockSize = mapped > 0 ? mapped : config.blockSize;
        final PodTopology topology = new PodTopology();
        this.environment = new YamlRouting.Environment().index(index).registry(registry).blockSize(blockSize)
            .topology(topology);
        this.loaded = YamlRouting.parse(config.routingDocument(), environment, config.baseDir);
        final Router router = loaded.router();
        this.book = new EndpointBook(registry, index, config.pods, config.podModels, config.podUrls,
            indexContext.indexFile().getParent(), topology);
        this.book.refresh();
        this.metrics = new EppMetrics(book::ready, book::podUrlsRefused, book::podDirectoryReadFailures);
        this.tokenizePool = pool("kvidx-epp-tokenize", Math.max(1, Math.min(4,
            Runtime.getRuntime().availableProcessors())), TOKENIZE_QUEUE);
        this.timer = new ScheduledThreadPoolExecutor(1, named("kvidx-epp-timer"));
        this.timer.setRemoveOnCancelPolicy(true);
        final EppLimits limits = config.limits();
        final Picker picker = new Picker(router, book, config.loraAdapters, config.sessionHeader,
            hasTokenizer(loaded), tokenizePool, blockSize);
        final PickerService service = new PickerService(picker, limits, metrics, config.sessionHeader, timer);
        setHealth();
        final ServerCredentials tls = credentials(config);
        final NettyServerBuilder b = tls == null ? NettyServerBuilder.forAddress(config.listenAddress())
            : NettyServerBuilder.forAddress(config.listenAddress(), tls);
        final String token = config.tokenFile == null ? null : BearerAuth.readToken(config.tokenFile);
        this.tokens = token == null ? null
            : new TokenInterceptor(token, () -> metrics.requests.labelValues("unauthorized").inc());
        b.addService(tokens == null ? service.bindService() : ServerInterceptors.intercept(service, tokens))
            .addService(health.getHealthService())
            // Calls run on gRPC's event loops: a token-id pick takes microseconds and never waits (text, chats and
            // plugins that may wait go to the deciding pool), so a hop to an executor and back would only add
            // latency and CPU (bench epp: p50 10-62 % lower with listeners on the event loops).
            .directExecutor()
            .maxInboundMessageSize(limits.maxBodyBytes() + EppLimits.MESSAGE_OVERHEAD_BYTES);
        // No per-connection stream cap: HTTP/2 would queue a stream beyond it in the proxy, unanswered; the
        // picker's own bound (max-streams, all connections) answers it at once with a 503 instead.
        NettyServer h = null;
        try {
            this.grpc = b.build().start();
            final java.net.InetSocketAddress m = config.metricsAddress();
            if (m != null) {
                final ServeContext context = new ServeContext().listen(m).threads(1).threadName("kvidx-epp-http")
                    .auth(token == null ? null : new BearerAuth(token, Set.of("/health"), ErrorShape.FLAT));
                final MetricsHandler handler = new MetricsHandler(metrics, index, book::ready);
                h = NettyServer.start(context, HttpPipeline.of(context, () -> handler));
            }
        } catch (final IOException | RuntimeException ex) {
            closeResources();
            throw new IllegalStateException("cannot listen on " + config.listen + " / " + config.metrics + ": "
                + (ex.getCause() != null ? ex.getCause().getMessage() : ex.getMessage()), ex);
        }
        this.http = h;
        this.housekeeping = new Thread(this::housekeep, "kvidx-epp-pods");
        this.housekeeping.setDaemon(true);
        this.housekeeping.start();
    }

    /**
     * Starts a picker.
     *
     * @param config the configuration (validated here).
     * @return the running picker.
     * @throws IllegalStateException when it cannot listen.
     * @throws IOException           when the TLS files cannot be read.
     */
    public static EppServer start(final EppConfig config) throws IOException {
        return new EppServer(config.validate());
    }

    private static ThreadPoolExecutor pool(final String name, final int threads, final int queue) {
        return new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(queue),
            named(name), new ThreadPoolExecutor.AbortPolicy());
    }

    private static java.util.concurrent.ThreadFactory named(final String name) {
        final AtomicInteger n = new AtomicInteger();
        return r -> {
            final Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    private static boolean hasTokenizer(final YamlRouting.Loaded loaded) {
        for (final Profile p : loaded.profiles().values()) {
            for (final var prep : p.preparers()) {
                if (prep instanceof TokenizePreparer) {
                    return true;
                }
            }
        }
        return false;
    }

    private void setHealth() {
        boolean attached;
        try {
            attached = index.isAvailable();
        } catch (final RuntimeException ex) {
            attached = false;
        }
        final ServingStatus s = attached ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
        health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.SERVING);
        health.setStatus("liveness", ServingStatus.SERVING);
        health.setStatus("readiness", s);
        health.setStatus("envoy.service.ext_proc.v3.ExternalProcessor", s);
    }

    private void housekeep() {
        while (running) {
            try {
                book.refresh();
                setHealth();
            } catch (final RuntimeException ex) {
                // Keep the picker up: the next round tries again.
            }
            try {
                Thread.sleep(REFRESH_MS);
            } catch (final InterruptedException ex) {
                return;
            }
        }
    }

    /**
     * @return the gRPC port (useful with port 0).
     */
    public int port() {
        return grpc.getPort();
    }

    /**
     * @return the metrics port, or -1 without one.
     */
    public int metricsPort() {
        return http == null ? -1 : http.port();
    }

    /**
     * @return tokens per block.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * Blocks until closed.
     *
     * @throws InterruptedException when interrupted.
     */
    public void awaitClose() throws InterruptedException {
        grpc.awaitTermination();
    }

    @Override
    public void close() {
        running = false;
        housekeeping.interrupt();
        health.enterTerminalState();
        grpc.shutdown();
        try {
            if (!grpc.awaitTermination(2, TimeUnit.SECONDS)) {
                grpc.shutdownNow();
            }
        } catch (final InterruptedException ex) {
            grpc.shutdownNow();
            Thread.currentThread().interrupt();
        }
        if (http != null) {
            http.close();
        }
        closeResources();
    }

    private void closeResources() {
        tokenizePool.shutdownNow();
        timer.shutdownNow();
        loaded.close(environment);
        index.close();
    }

    /** The ext_proc port's TLS (mutual with a client CA), or null for plaintext; files read once, named on failure. */
    private static ServerCredentials credentials(final EppConfig config) {
        if (config.tlsCert == null) {
            return null;
        }
        final TlsServerCredentials.Builder b = TlsServerCredentials.newBuilder();
        try {
            b.keyManager(config.tlsCert.toFile(), config.tlsKey.toFile());
            if (config.tlsClientCa != null) {
                b.trustManager(config.tlsClientCa.toFile()).clientAuth(TlsServerCredentials.ClientAuth.REQUIRE);
            }
        } catch (final IOException | IllegalArgumentException ex) {
            throw new IllegalArgumentException("tls-cert/tls-key/tls-client-ca: cannot use " + config.tlsCert + ", "
                + config.tlsKey + (config.tlsClientCa == null ? "" : ", " + config.tlsClientCa) + " (PEM): "
                + ex.getMessage(), ex);
        }
        return b.build();
    }
}
