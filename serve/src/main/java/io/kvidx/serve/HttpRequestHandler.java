package io.kvidx.serve;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.util.ReferenceCountUtil;

/**
 * The last handler of an {@link HttpPipeline}: takes what the pipeline hands on, in request order, and releases it.
 * A request whose body the {@link BodyLimit} refused arrives as {@link BodyLimit.TooLarge} and goes to
 * {@link #tooLarge}; a whole request to {@link #request} (released after it returns); anything else is released.
 *
 * <p><b>Note:</b> called on the connection's event loop only; implementations must not block it.
 */
public abstract class HttpRequestHandler extends ChannelInboundHandlerAdapter {
    @Override
    public final void channelRead(final ChannelHandlerContext ctx, final Object msg) {
        if (msg instanceof BodyLimit.TooLarge tooLarge) {
            tooLarge(ctx, tooLarge);
        } else if (msg instanceof FullHttpRequest request) {
            try {
                request(ctx, request);
            } finally {
                request.release();
            }
        } else {
            ReferenceCountUtil.release(msg);
        }
    }

    /**
     * Answers a request whose body was over the limit (a 413 in the server's error shape).
     *
     * @param ctx      the connection.
     * @param tooLarge what was refused.
     */
    protected abstract void tooLarge(ChannelHandlerContext ctx, BodyLimit.TooLarge tooLarge);

    /**
     * Answers a request; the request is released when this returns (copy what an asynchronous answer needs).
     *
     * @param ctx     the connection.
     * @param request the request.
     */
    protected abstract void request(ChannelHandlerContext ctx, FullHttpRequest request);
}
