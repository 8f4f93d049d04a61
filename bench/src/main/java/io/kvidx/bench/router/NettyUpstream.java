package io.kvidx.bench.router;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * The fast upstream of {@code bench router}'s overhead part when nginx is not installed: one Netty event loop that
 * reads each request (body discarded) and answers {@code 200} with a fixed completion ({@link RouterBench#ANSWER}),
 * keep-alive. With nginx the bench uses nginx's {@code return 200} instead.
 *
 * <p>{@code java -cp kvidx-bench.jar io.kvidx.bench.router.NettyUpstream PORT} (0: a free one); prints
 * {@code netty upstream listening on 127.0.0.1:PORT}.
 */
public final class NettyUpstream {
    private NettyUpstream() {
    }

    /**
     * @param args port.
     * @throws InterruptedException when interrupted.
     */
    public static void main(final String[] args) throws InterruptedException {
        final ByteBuf answer = Unpooled.unreleasableBuffer(Unpooled.directBuffer().writeBytes(
            RouterBench.ANSWER.getBytes(StandardCharsets.US_ASCII)));
        final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("upstream", false),
            NioIoHandler.newFactory());
        final Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
            .option(ChannelOption.SO_BACKLOG, 4096).childOption(ChannelOption.TCP_NODELAY, true)
            .childHandler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(final SocketChannel ch) {
                    ch.pipeline().addLast(new HttpServerCodec()).addLast(new Answer(answer));
                }
            }).bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), Integer.parseInt(args[0])))
            .sync().channel();
        System.out.println("netty upstream listening on 127.0.0.1:"
            + ((InetSocketAddress) server.localAddress()).getPort());
        System.out.flush();
        server.closeFuture().sync();
    }

    /** Answers each request once its body has been read. */
    private static final class Answer extends SimpleChannelInboundHandler<HttpObject> {
        private final ByteBuf answer;
        private boolean keepAlive = true;

        Answer(final ByteBuf answer) {
            this.answer = answer;
        }

        @Override
        protected void channelRead0(final ChannelHandlerContext ctx, final HttpObject msg) {
            if (msg instanceof HttpRequest r) {
                keepAlive = HttpUtil.isKeepAlive(r);
            }
            if (msg instanceof LastHttpContent) {
                final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                    HttpResponseStatus.OK, answer.duplicate());
                response.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                    .setInt(HttpHeaderNames.CONTENT_LENGTH, answer.readableBytes());
                HttpUtil.setKeepAlive(response, keepAlive);
                ctx.writeAndFlush(response);
                if (!keepAlive) {
                    ctx.close();
                }
            }
        }
    }
}
