package io.kvidx.daemon.serve;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.tiers.TierMap;
import io.kvidx.daemon.ops.PodStatsFile;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerKeepAliveHandler;
import io.netty.handler.timeout.ReadTimeoutHandler;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.net.InetSocketAddress;
import java.nio.channels.spi.SelectorProvider;
import java.util.concurrent.TimeUnit;

/**
 * The daemon's indexer HTTP API ({@code --http HOST:PORT}): Netty's HTTP/1.1 codec on a few event-loop threads, a
 * body limit, an idle timeout, and {@link ApiHandler}, which answers every endpoint. A thin adapter: queries run
 * the same {@link IndexReader} search as an in-process router, changes go through the daemon's membership table.
 *
 * <p>Bounds: request line 4 KiB, headers 8 KiB, body {@code maxBodyBytes} (413 with a JSON error beyond, and the
 * connection closed), a connection idle for {@link #IDLE_TIMEOUT_S} seconds is closed, JSON depth, number and
 * string lengths as {@link RequestBody} says.
 *
 * <p><b>Note:</b> started and closed by the daemon's thread; requests run on the event loops.
 */
public final class IndexHttpServer implements AutoCloseable {
    /** Seconds a connection may stay silent (between requests, or within one) before it is closed. */
    public static final int IDLE_TIMEOUT_S = 60;

    private final EventLoopGroup group;
    private final Channel channel;
    private final IndexReader reader;
    private final TierMap tiers;
    private final PodStatsFile stats;

    private IndexHttpServer(final EventLoopGroup group, final Channel channel, final IndexReader reader,
        final TierMap tiers, final PodStatsFile stats) {
        this.group = group;
        this.channel = channel;
        this.reader = reader;
        this.tiers = tiers;
        this.stats = stats;
    }

    /**
     * Binds and starts serving.
     *
     * @param address      where to listen.
     * @param threads      event-loop threads.
     * @param busySpin     true: the event loops poll their sockets without sleeping (a core each); false: they block
     *                     in the selector until a request comes.
     * @param maxBodyBytes largest request body.
     * @param reader       the cell's index, read-only (closed with the server).
     * @param tierMapFile  the cell's tier map file (followed when it appears or is replaced), or null for none.
     * @param stats        the cell's pod statistics, or null (closed with the server).
     * @param fleet        the rest of the daemon.
     * @return the running server.
     * @throws IllegalStateException when the address cannot be bound.
     */
    public static IndexHttpServer start(final InetSocketAddress address, final int threads, final boolean busySpin,
        final int maxBodyBytes,
        final IndexReader reader, final java.nio.file.Path tierMapFile, final PodStatsFile stats,
        final FleetApi fleet) {
        final PodTableView.Source pods = new PodTableView.Source(reader, fleet.membership());
        // Tier lookups name the slot's generation as the pod table view saw it (no pod table read per lookup).
        final TierMap tiers = tierMapFile == null ? null : new TierMap(tierMapFile, pods::generation,
            TierMap.RETRY_INTERVAL_MS_DEFAULT, io.kvidx.client.tiers.TierMapReader.READ_BOUND_NS_DEFAULT,
            reader::isWriterStale);
        // Busy-spin: every turn of the loop is a selectNow (never a blocking select), so a request is read at once.
        final SelectStrategyFactory strategy = busySpin ? () -> (selectNow, hasTasks) -> selectNow.get()
            : DefaultSelectStrategyFactory.INSTANCE;
        final EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads,
            new DefaultThreadFactory("kvidx-http", true),
            NioIoHandler.newFactory(SelectorProvider.provider(), strategy));
        final ApiHandler api = new ApiHandler(reader, fleet, pods, tiers, stats, maxBodyBytes);
        try {
            final Channel channel = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(final SocketChannel ch) {
                        ch.pipeline()
                            .addLast(new ReadTimeoutHandler(IDLE_TIMEOUT_S, TimeUnit.SECONDS))
                            .addLast(new HttpServerCodec(4096, 8192, 65536))
                            .addLast(new HttpServerKeepAliveHandler())
                            .addLast(new BodyLimit(maxBodyBytes))
                            .addLast(api);
                    }
                })
                .bind(address.getHostString(), address.getPort()).syncUninterruptibly().channel();
            return new IndexHttpServer(group, channel, reader, tiers, stats);
        } catch (final RuntimeException ex) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            if (tiers != null) {
                tiers.close();
            }
            throw new IllegalStateException("cannot serve the HTTP API on " + address.getHostString() + ":"
                + address.getPort() + ": " + ex.getMessage(), ex);
        }
    }

    /**
     * @return the port the server listens on (useful with port 0).
     */
    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        if (tiers != null) {
            tiers.close();
        }
        if (stats != null) {
            stats.close();
        }
        reader.close();
    }

    /** The body limit, answering an oversized request with the API's JSON error (413) and closing. */
    private static final class BodyLimit extends HttpObjectAggregator {
        private final int maxBodyBytes;

        BodyLimit(final int maxBodyBytes) {
            super(maxBodyBytes);
            this.maxBodyBytes = maxBodyBytes;
        }

        @Override
        protected void handleOversizedMessage(final ChannelHandlerContext ctx, final HttpMessage oversized) {
            Responses.error(ctx, false, new ApiException(413, ApiException.BODY_TOO_LARGE,
                "request body exceeds " + maxBodyBytes + " bytes (--http-max-body-bytes)"));
        }
    }
}
