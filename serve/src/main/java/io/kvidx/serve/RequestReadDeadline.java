package io.kvidx.serve;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * A bound on the time a client takes to send one request ({@link ServeContext#requestReadMs}): from the first byte
 * read after the previous request was whole, to the request being whole (headers and body, {@link BodyLimit}). A
 * client that sends a byte now and then, which the idle timeout never catches, has its connection closed when the
 * deadline passes, and the close is counted ({@link #expired()}). The time a request spends being answered does not
 * count: the clock starts again with the next request's first byte.
 *
 * <p>Two handlers per connection share its clock: {@link #first()} before the HTTP codec sees raw bytes and starts
 * it; {@link #whole()} after {@link BodyLimit} sees whole requests and stops it. The timer runs on the connection's
 * event loop; nothing waits.
 *
 * <p><b>Note:</b> one instance per server ({@link #expired()} is thread safe); the handlers are per connection.
 */
public final class RequestReadDeadline {
    private final long deadlineMs;
    private final LongAdder expired = new LongAdder();

    /**
     * @param deadlineMs how long one request may take to arrive.
     */
    public RequestReadDeadline(final long deadlineMs) {
        if (deadlineMs < 1) {
            throw new IllegalArgumentException("request read deadline must be positive: " + deadlineMs);
        }
        this.deadlineMs = deadlineMs;
    }

    /**
     * @return connections closed because a request did not arrive whole in time.
     */
    public long expired() {
        return expired.sum();
    }

    /**
     * @return a new connection's pair of handlers: {@code [0]} before the codec, {@code [1]} after the body limit.
     */
    public ChannelHandler[] handlers() {
        final Clock clock = new Clock();
        return new ChannelHandler[] {clock, clock.whole};
    }

    /** The first handler: starts the clock on a request's first byte; stops it when the connection goes. */
    private final class Clock extends ChannelDuplexHandler {
        private final Whole whole = new Whole(this);
        private ScheduledFuture<?> timer;
        private boolean reading;

        @Override
        public void channelRead(final ChannelHandlerContext ctx, final Object msg) throws Exception {
            if (!reading) {
                reading = true;
                timer = ctx.executor().schedule(() -> expire(ctx), deadlineMs, TimeUnit.MILLISECONDS);
            }
            super.channelRead(ctx, msg);
        }

        void requestWhole() {
            reading = false;
            if (timer != null) {
                timer.cancel(false);
                timer = null;
            }
        }

        private void expire(final ChannelHandlerContext ctx) {
            if (reading && ctx.channel().isActive()) {
                expired.increment();
                ctx.close();
            }
        }

        @Override
        public void channelInactive(final ChannelHandlerContext ctx) throws Exception {
            requestWhole();
            super.channelInactive(ctx);
        }
    }

    /** The second handler: a whole request (or one refused as too large) stops the clock. */
    private static final class Whole extends ChannelInboundHandlerAdapter {
        private final Clock clock;

        Whole(final Clock clock) {
            this.clock = clock;
        }

        @Override
        public void channelRead(final ChannelHandlerContext ctx, final Object msg) throws Exception {
            if (msg instanceof FullHttpRequest || msg instanceof BodyLimit.TooLarge) {
                clock.requestWhole();
            }
            super.channelRead(ctx, msg);
        }
    }
}
