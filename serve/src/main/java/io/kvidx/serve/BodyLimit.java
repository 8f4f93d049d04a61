package io.kvidx.serve;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;

/**
 * Whole requests of a bounded size: Netty's aggregator, which refuses a body larger than the bound from its
 * Content-Length before reading it (or once a chunked body passes it). A refused request is passed on as a
 * {@link TooLarge} in the request's place, so that it is answered in order, after the answers to the requests before
 * it ({@link RequestSequencer}); the server's handler answers it (413, in its API's error shape) and closes the
 * connection.
 *
 * <p>{@code Expect}: a request that expects {@code 100-continue} and whose body fits gets an interim
 * {@code 100 Continue}; one whose declared body is over the bound is refused like any other, in order, as a
 * {@link TooLarge} (not with the aggregator's own empty 413 written ahead of the answers before it); any other
 * expectation is ignored and the request served (RFC 9110 10.1.1 lets a server answer 417 and does not require it).
 * Netty's aggregator answered such a request itself with an empty {@code 417 Expectation Failed}, outside the
 * answers' order and the documented statuses, then skipped its body (found by {@code HttpDoorJazzerTest}).
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
    protected Object newContinueResponse(final HttpMessage start, final int maxContentLength,
        final ChannelPipeline pipeline) {
        if (!HttpUtil.is100ContinueExpected(start)) {
            return null;
        }
        final long length;
        try {
            length = HttpUtil.getContentLength(start, -1L);
        } catch (final NumberFormatException ex) {
            return null;
        }
        if (length > maxContentLength) {
            return null;
        }
        start.headers().remove(HttpHeaderNames.EXPECT);
        return new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE, Unpooled.EMPTY_BUFFER);
    }

    @Override
    protected void handleOversizedMessage(final ChannelHandlerContext ctx, final HttpMessage oversized) {
        ctx.fireChannelRead(new TooLarge(maxBodyBytes));
    }
}
