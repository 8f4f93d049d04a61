package io.kvidx.serve;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.net.InetSocketAddress;
import java.nio.channels.spi.SelectorProvider;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A listening Netty server: its event loops (NIO; blocking in the selector, or busy-spinning with
 * {@link ServeContext#busySpin}), the bootstrap's socket options (backlog, address reuse, no Nagle, the write buffer
 * water marks that make a slow client's connection unwritable), and each accepted connection's pipeline as the
 * caller builds it ({@link HttpPipeline} for HTTP/1.1). The one place kvidx's servers start and stop Netty.
 *
 * <p>Netty's native epoll transport is not used: its {@code linux-x86_64} jar is not served by the registry this
 * project builds from (ADR 0015).
 *
 * <p><b>Note:</b> started and closed by one thread; connections run on the event loops.
 */
public final class NettyServer implements AutoCloseable {
    private final EventLoopGroup group;
    private final Channel channel;

    private NettyServer(final EventLoopGroup group, final Channel channel) {
        this.group = group;
        this.channel = channel;
    }

    /**
     * Binds and starts serving.
     *
     * @param context    the server's context (concluded here).
     * @param connection adds an accepted connection's handlers to its pipeline (on its event loop).
     * @return the running server.
     * @throws IllegalStateException when the address cannot be bound (the event loops are stopped again).
     */
    public static NettyServer start(final ServeContext context, final Consumer<ChannelPipeline> connection) {
        context.conclude();
        final EventLoopGroup group = eventLoops(context.threads(), context.busySpin(), context.threadName());
        final InetSocketAddress listen = context.listen();
        try {
            final Channel channel = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, ServeContext.BACKLOG_DEFAULT)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(
                    ServeContext.WRITE_BUFFER_LOW_BYTES_DEFAULT, ServeContext.WRITE_BUFFER_HIGH_BYTES_DEFAULT))
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(final SocketChannel ch) {
                        connection.accept(ch.pipeline());
                    }
                })
                .bind(listen.getHostString(), listen.getPort()).syncUninterruptibly().channel();
            return new NettyServer(group, channel);
        } catch (final RuntimeException ex) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
            throw new IllegalStateException("cannot listen on " + listen.getHostString() + ":" + listen.getPort()
                + ": " + ex.getMessage(), ex);
        }
    }

    /**
     * Event loops as every kvidx server runs them.
     *
     * @param threads    threads.
     * @param busySpin   true: every turn of a loop is a {@code selectNow} (never a blocking select), so a request is
     *                   read at once at the price of a core per loop; false: the loops block until there is work.
     * @param threadName the threads' name prefix (daemon threads).
     * @return the group.
     */
    public static EventLoopGroup eventLoops(final int threads, final boolean busySpin, final String threadName) {
        final SelectStrategyFactory strategy = busySpin ? () -> (selectNow, hasTasks) -> selectNow.get()
            : DefaultSelectStrategyFactory.INSTANCE;
        return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(threadName, true),
            NioIoHandler.newFactory(SelectorProvider.provider(), strategy));
    }

    /**
     * @return the port the server listens on (useful with port 0).
     */
    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    /**
     * Blocks until the server's channel is closed.
     *
     * @throws InterruptedException when interrupted.
     */
    public void awaitClose() throws InterruptedException {
        channel.closeFuture().sync();
    }

    /** Stops listening, then stops the event loops (open connections are closed with them). */
    @Override
    public void close() {
        channel.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
}
