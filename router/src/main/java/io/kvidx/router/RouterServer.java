package io.kvidx.router;

import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodTopology;
import io.kvidx.routing.Profile;
import io.kvidx.routing.Router;
import io.kvidx.routing.TierMapLookup;
import io.kvidx.routing.exec.CacheHint;
import io.kvidx.routing.exec.PrefillDecodeAdapter;
import io.kvidx.routing.exec.ProxyPolicy;
import io.kvidx.routing.yaml.YamlRouting;
import io.kvidx.serve.HttpPipeline;
import io.kvidx.serve.NettyServer;
import io.kvidx.serve.ServeContext;
import io.kvidx.tokenize.TokenizePreparer;

import java.nio.file.Path;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code kvidx router}: the OpenAI-compatible front door over the decision layer. Assembles the index (read-only,
 * {@link IndexReaderPodIndex}, which tolerates its absence: decisions fall back), the pods ({@link PodBook}), the
 * routing document ({@link YamlRouting}), the decisions ({@link Decisions}), the executor on Netty
 * ({@link ProxyCalls}: routing's {@link ProxyPolicy} over the pod connections, {@link Upstreams}), the metrics, and
 * the serving layer's HTTP/1.1 server ({@link NettyServer}, {@link HttpPipeline}) whose connections each get a
 * {@link FrontHandler}.
 *
 * <p>Threads: {@code threads} event loops (client and pod connections, token-id decisions), a few tokenizing threads
 * (text and chat requests, a bounded queue), one housekeeping thread ({@link PodBook#refresh} every
 * {@link #REFRESH_MS} ms).
 *
 * <p><b>Note:</b> started and closed by one thread.
 */
public final class RouterServer implements AutoCloseable {
    /** How often the pods are brought in step with the index and their checks started. */
    public static final long REFRESH_MS = 250;
    /** Seconds a client connection with no request in flight may stay silent before it is closed. */
    public static final int IDLE_TIMEOUT_S = ServeContext.IDLE_TIMEOUT_S_DEFAULT;
    /** Requests waiting for a tokenizing thread before new text requests are refused (503). */
    public static final int TOKENIZE_QUEUE = 1024;
    /** Requests a pipelining client may send ahead of its answers before the router stops reading. */
    static final int MAX_PIPELINED = ServeContext.MAX_PIPELINED_DEFAULT;
    /** What {@code admin-token-file}'s token guards: the metrics name pods and models. */
    static final java.util.Set<String> ADMIN_PATHS = java.util.Set.of("/metrics");
    /** Largest header block of a client's request. */
    static final int MAX_HEADER_BYTES = 16384;

    // Package-private for the tests, which watch the index and the pods; no handler reads this class.
    final IndexReaderPodIndex index;
    final PodRegistry registry;
    final PodBook pods;
    private final int blockSize;
    private final YamlRouting.Loaded loaded;
    private final YamlRouting.Environment environment;
    private final TierMapLookup hintTiers;
    private final ThreadPoolExecutor tokenizePool;
    /** Synthetic decisions before {@code /health} reports ready (package-private for the tests). */
    final WarmUp warmUp;
    private final NettyServer server;
    private final Thread housekeeping;
    private volatile boolean running = true;

    private RouterServer(final RouterConfig config) {
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
        this.pods = new PodBook(config, registry, index, indexContext.indexFile().getParent(), topology);
        this.pods.refresh(System.currentTimeMillis());
        final RouterMetrics metrics = new RouterMetrics(router.workflow(), pods);
        this.tokenizePool = tokenizers();
        // The cache hint reads the host tier map: the profiles' when they opened it, else its own.
        this.hintTiers = config.cacheHint == null || environment.tiers() instanceof TierMapLookup ? null
            : TierMapLookup.nextTo(index, registry);
        final CacheHint hint = config.cacheHint == null ? null : new CacheHint((hintTiers != null ? hintTiers
            : (TierMapLookup) environment.tiers()).tierMap(), config.cacheHint);
        final ProxyPolicy policy = new ProxyPolicy(router, PrefillDecodeAdapter.vllm(), config.attempts, hint,
            pods::endpoint);
        final Decisions decisions = new Decisions(router, pods, config.loraAdapters, config.sessionHeader,
            hasTokenizer(loaded), tokenizePool, metrics);
        final ProxyCalls calls = new ProxyCalls(policy, new Upstreams(config.connectMs), pods, decisions, metrics,
            config, blockSize);
        // The warm-up decides through a twin of the routing document (its own plugins and counters), never a pod.
        final YamlRouting.Environment twinEnvironment = new YamlRouting.Environment().index(index).registry(registry)
            .blockSize(blockSize).topology(topology);
        this.warmUp = new WarmUp(() -> YamlRouting.parse(config.routingDocument(), twinEnvironment, config.baseDir),
            twinEnvironment, pods, router.mayBlock() ? 0 : config.warmUpDecisions, config.warmUpMs);
        final RouterEndpoints endpoints = new RouterEndpoints(pods, index, config.loraAdapters, metrics, warmUp);
        final ServeContext context = new ServeContext().listen(config.listenAddress()).threads(config.threads)
            .threadName("kvidx-router").idleTimeoutS(IDLE_TIMEOUT_S).maxHeaderBytes(MAX_HEADER_BYTES)
            .maxBodyBytes(config.maxBodyBytes).maxPipelined(MAX_PIPELINED)
            .auth(config.adminToken == null ? null : io.kvidx.serve.BearerAuth.adminOnly(config.adminToken,
                ADMIN_PATHS, io.kvidx.serve.ErrorShape.OPENAI))
            .tls(config.tls);
        try {
            this.server = NettyServer.start(context, HttpPipeline.of(context,
                () -> new FrontHandler(endpoints, decisions, calls, metrics)));
        } catch (final RuntimeException ex) {
            closeResources();
            final Throwable cause = ex.getCause() != null ? ex.getCause() : ex;
            throw new IllegalStateException("cannot listen on " + config.listen + ": " + cause.getMessage(), ex);
        }
        this.warmUp.start();
        this.housekeeping = new Thread(this::housekeep, "kvidx-router-pods");
        this.housekeeping.setDaemon(true);
        this.housekeeping.start();
    }

    /**
     * Starts a router.
     *
     * @param config the validated configuration.
     * @return the running router.
     * @throws IllegalStateException when it cannot listen.
     */
    public static RouterServer start(final RouterConfig config) {
        return new RouterServer(config.validate());
    }

    private static ThreadPoolExecutor tokenizers() {
        final int threads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));
        final AtomicInteger n = new AtomicInteger();
        return new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(TOKENIZE_QUEUE), r -> {
                final Thread t = new Thread(r, "kvidx-router-tokenize-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            }, new ThreadPoolExecutor.AbortPolicy());
    }

    private void housekeep() {
        while (running) {
            try {
                pods.refresh(System.currentTimeMillis());
            } catch (final RuntimeException ex) {
                // Keep the router up: the next round tries again.
            }
            try {
                Thread.sleep(REFRESH_MS);
            } catch (final InterruptedException ex) {
                return;
            }
        }
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

    /**
     * @return the port the router listens on (useful with port 0).
     */
    public int port() {
        return server.port();
    }

    /**
     * @return the block size the router's keys are made with.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * Blocks until the router is closed.
     *
     * @throws InterruptedException when interrupted.
     */
    public void awaitClose() throws InterruptedException {
        server.awaitClose();
    }

    @Override
    public void close() {
        running = false;
        housekeeping.interrupt();
        server.close();
        closeResources();
    }

    private void closeResources() {
        tokenizePool.shutdownNow();
        loaded.close(environment);
        if (hintTiers != null) {
            hintTiers.close();
        }
        index.close();
    }
}
