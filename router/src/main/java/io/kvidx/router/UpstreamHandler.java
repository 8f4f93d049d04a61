package io.kvidx.router;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.util.ReferenceCountUtil;

/**
 * The pod side of a connection: hands the pod's response head and content to the exchange the connection serves
 * ({@link Upstreams#CALL}); a connection serving none (idle in the pool) drops what it reads and is closed when the
 * pod closes it.
 *
 * <p><b>Note:</b> shared by all pod connections; runs on their event loops.
 */
@ChannelHandler.Sharable
final class UpstreamHandler extends ChannelInboundHandlerAdapter {
    static final UpstreamHandler INSTANCE = new UpstreamHandler();

    private UpstreamHandler() {
    }

    @Override
    public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
        final ProxyCall call = ctx.channel().attr(Upstreams.CALL).get();
        if (call == null) {
            ReferenceCountUtil.release(msg);
            ctx.close();
            return;
        }
        if (msg instanceof HttpResponse head) {
            call.onHead(ctx.channel(), head);
        }
        if (msg instanceof HttpContent content) {
            call.onContent(ctx.channel(), content);
        } else {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelInactive(final ChannelHandlerContext ctx) {
        final ProxyCall call = ctx.channel().attr(Upstreams.CALL).get();
        if (call != null) {
            call.onUpstreamClosed(ctx.channel(), "the pod closed the connection");
        }
    }

    @Override
    public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause) {
        final ProxyCall call = ctx.channel().attr(Upstreams.CALL).get();
        ctx.close();
        if (call != null) {
            call.onUpstreamClosed(ctx.channel(), cause.toString());
        }
    }
}
