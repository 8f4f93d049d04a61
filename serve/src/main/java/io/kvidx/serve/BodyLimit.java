package io.kvidx.serve;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;

/**
 * Whole requests of a bounded size: Netty's aggregator, which refuses a body larger than the bound from its
 * Content-Length before reading it (or once a chunked body passes it). A refused request is passed on as a
 * {@link TooLarge} in the request's place, so that it is answered in order, after the answers to the requests before
 * it ({@link RequestSequencer}); the server's handler answers it (413, in its API's error shape) and closes the
 * connection.
 *
 * <p><b>Note:</b> one per connection.
 */
public final class BodyLimit extends HttpObjectAggregator {
    /**
     * A request whose body exceeded the bound (its body is discarded).
     *
     * @param maxBodyBytes the bound.
     */
    public record TooLarge(int maxBodyBytes) {
    }

    private final int maxBodyBytes;

    /**
     * @param maxBodyBytes largest body.
     */
    public BodyLimit(final int maxBodyBytes) {
        super(maxBodyBytes);
        this.maxBodyBytes = maxBodyBytes;
    }

    @Override
    protected void handleOversizedMessage(final ChannelHandlerContext ctx, final HttpMessage oversized) {
        ctx.fireChannelRead(new TooLarge(maxBodyBytes));
    }
}
