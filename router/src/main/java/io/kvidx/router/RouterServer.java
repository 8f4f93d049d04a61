package io.kvidx.router;

import com.fasterxml.jackson.core.JsonFactory;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Profile;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.exec.PrefillDecodeAdapter;
import io.kvidx.routing.yaml.YamlRouting;
import io.kvidx.tokenize.TokenizePreparer;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.net.InetSocketAddress;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code kvidx router}: the OpenAI-compatible front door over the decision layer. Assembles the index (read-only,
 * {@link IndexReaderPodIndex}, which tolerates its absence: decisions fall back), the pods ({@link PodBook}), the
 * routing document ({@link YamlRouting}), the pod connections ({@link Upstreams}), the metrics, and a Netty HTTP/1.1
 * server whose connections each get a {@link FrontHandler}.
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
    public static final int IDLE_TIMEOUT_S = 60;
    /** Requests waiting for a tokenizing thread before new text requests are refused (503). */
    public static final int TOKENIZE_QUEUE = 1024;

    static final JsonFactory JSON = new JsonFactory();

    final RouterConfig config;
    final IndexReaderPodIndex index;
    final PodRegistry registry;
    final Router router;
    final PodBook pods;
    final RouterMetrics metrics;
    final Upstreams upstreams;
    final PrefillDecodeAdapter adapter = PrefillDecodeAdapter.vllm();
    final Contexts contexts;
    final ThreadPoolExecutor tokenizePool;
    final boolean tokenizes;
    final int blockSize;
    private final YamlRouting.Loaded loaded;
    private final EventLoopGroup group;
    private final Channel channel;
    private final Thread housekeeping;
    private volatile boolean running = true;

    /** Routing contexts handed to requests and taken back when their call ends; grows to the peak concurrency. */
    static final class Contexts {
        private final Router router;
        private final ConcurrentLinkedQueue<RoutingContext> free = new ConcurrentLinkedQueue<>();

        Contexts(final Router router) {
            this.router = router;
        }

        RoutingContext acquire() {
            final RoutingContext c = free.poll();
            return (c != null ? c : router.newContext()).reset();
        }

        void release(final RoutingContext c) {
            free.offer(c);
        }
    }

    private RouterServer(final RouterConfig config) {
        this.config = config;
        this.index = new IndexReaderPodIndex(new IndexReaderContext().dir(java.nio.file.Path.of(config.dir))
            .cell(config.cell), 1_000);
        this.registry = new PodRegistry();
        final int mapped = index.isAvailable() ? index.blockSize() : 0;
        this.blockSize = mapped > 0 ? mapped : config.blockSize;
        this.loaded = YamlRouting.parse(config.routingDocument(),
            new YamlRouting.Environment().index(index).registry(registry).blockSize(blockSize), config.baseDir);
        this.router = loaded.router();
        this.tokenizes = hasTokenizer(loaded);
        this.pods = new PodBook(config, registry, index);
        this.pods.refresh(System.currentTimeMillis());
        this.metrics = new RouterMetrics(router.workflow(), pods);
        this.upstreams = new Upstreams(config.connectMs);
        this.contexts = new Contexts(router);
        final int tokenizers = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));
        final AtomicInteger n = new AtomicInteger();
        this.tokenizePool = new ThreadPoolExecutor(tokenizers, tokenizers, 60, TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(TOKENIZE_QUEUE), r -> {
                final Thread t = new Thread(r, "kvidx-router-tokenize-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            }, new ThreadPoolExecutor.AbortPolicy());
        this.group = new MultiThreadIoEventLoopGroup(config.threads, new DefaultThreadFactory("kvidx-router", true),
            NioIoHandler.newFactory());
        final InetSocketAddress listen = config.listenAddress();
        try {
            this.channel = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(32 << 10, 64 << 10))
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(final SocketChannel ch) {
                        ch.pipeline()
                            .addLast(new IdleStateHandler(0, 0, IDLE_TIMEOUT_S, TimeUnit.SECONDS))
                            .addLast(new HttpServerCodec(4096, 16384, 65536))
                            .addLast(new BodyLimit(config.maxBodyBytes))
                            .addLast(new FrontHandler(RouterServer.this));
                    }
                })
                .bind(listen.getHostString(), listen.getPort()).syncUninterruptibly().channel();
        } catch (final RuntimeException ex) {
            shutdownQuietly();
            throw new IllegalStateException("cannot listen on " + config.listen + ": " + ex.getMessage(), ex);
        }
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
        return ((InetSocketAddress) channel.localAddress()).getPort();
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
        channel.closeFuture().sync();
    }

    @Override
    public void close() {
        running = false;
        housekeeping.interrupt();
        channel.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        shutdownQuietly();
    }

    private void shutdownQuietly() {
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        tokenizePool.shutdownNow();
        for (final Profile p : loaded.profiles().values()) {
            for (final var prep : p.preparers()) {
                if (prep instanceof AutoCloseable c) {
                    try {
                        c.close();
                    } catch (final Exception ex) {
                        // closing: nothing to do
                    }
                }
            }
        }
        index.close();
    }

    /** The body limit: an oversized request gets the OpenAI-shaped 413 (from {@link FrontHandler}), then closing. */
    private static final class BodyLimit extends HttpObjectAggregator {
        private final int maxBodyBytes;

        BodyLimit(final int maxBodyBytes) {
            super(maxBodyBytes);
            this.maxBodyBytes = maxBodyBytes;
        }

        /** Passed on as a message, so that the 413 leaves after the answers to the requests before it. */
        @Override
        protected void handleOversizedMessage(final ChannelHandlerContext ctx, final HttpMessage oversized) {
            ctx.fireChannelRead(new FrontHandler.Oversized(maxBodyBytes));
        }
    }
}
