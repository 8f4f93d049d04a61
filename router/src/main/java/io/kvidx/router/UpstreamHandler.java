package io.kvidx.router;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.util.ReferenceCountUtil;

/**
 * The pod side of a connection: hands the pod's response head and content to the exchange the connection serves
 * ({@link Upstreams#LISTENER}); a connection serving none (idle in the pool) drops what it reads and is closed when
 * the pod closes it.
 *
 * <p><b>Note:</b> shared by all pod connections; runs on their event loops.
 */
@ChannelHandler.Sharable
final class UpstreamHandler extends ChannelInboundHandlerAdapter {
    static final UpstreamHandler INSTANCE = new UpstreamHandler();

    /** What a pod connection's exchange hears of it. */
    interface Listener {
        /**
         * @param ch   the pod connection.
         * @param head the response head.
         */
        void onHead(Channel ch, HttpResponse head);

        /**
         * @param ch      the pod connection.
         * @param content content of the answer (the listener owns it).
         */
        void onContent(Channel ch, HttpContent content);

        /**
         * @param ch  the pod connection.
         * @param why why it closed or failed.
         */
        void onUpstreamClosed(Channel ch, String why);
    }

    private UpstreamHandler() {
    }

    @Override
    public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
        final Listener call = ctx.channel().attr(Upstreams.LISTENER).get();
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
        final Listener call = ctx.channel().attr(Upstreams.LISTENER).get();
        if (call != null) {
            call.onUpstreamClosed(ctx.channel(), "the pod closed the connection");
        }
    }

    @Override
    public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause) {
        final Listener call = ctx.channel().attr(Upstreams.LISTENER).get();
        ctx.close();
        if (call != null) {
            call.onUpstreamClosed(ctx.channel(), cause.toString());
        }
    }
}
