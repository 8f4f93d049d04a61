package io.kvidx.serve;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.PrematureChannelClosureException;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;

import java.io.IOException;
import java.util.ArrayDeque;

/**
 * A keep-alive connection answers in request order: the server's handler gets one request at a time, and the next
 * only after the answer to the current one was written to its end (a {@link LastHttpContent}: a whole response, or
 * the last part of a streamed one). Requests a client pipelines meanwhile wait here, in order; reading goes on, so a
 * client that goes away is seen at once (its call cancelled, even while an answer is being prepared), and stops once
 * {@code maxPipelined} wait. An answer that completes on another thread (a registration, a snapshot, a proxied call)
 * therefore never overtakes the answer to an earlier request, nor lets a later one overtake it.
 *
 * <p>The next request is handed on in a later task of the event loop, after the write that ended the answer, so its
 * answer's bytes follow the last bytes of the one before and the handler is never re-entered from its own write.
 *
 * <p>An answer that closes the connection ({@code Connection: close}: the client asked for it, or the handler refused
 * a request and closes) is the last: the requests pipelined after it are dropped unprocessed, as RFC 9112 (9.6) asks
 * ("the server MUST NOT process any further requests"). Before, the next one was handed on while the close was under
 * way: a pipelined registration after it was carried out though its answer could never be sent, and that answer's
 * write to the closed channel ended at the pipeline's tail as an exception (found by {@code HttpDoorJazzerTest}).
 *
 * <p>An exception from below (a read that failed, a client gone in the middle of a request:
 * {@link PrematureChannelClosureException}, a write to a connection already closed) closes the connection and ends
 * here: any client could otherwise have Netty log a stack trace at the pipeline's tail per connection. Another
 * exception closes the connection too and goes on, so a bug stays visible.
 *
 * <p>Idle policy: on an {@link IdleStateEvent} the connection is closed when nothing is in flight or waiting;
 * otherwise the event is dropped (a long answer is bounded by the server's own deadlines, not by idleness).
 *
 * <p><b>Note:</b> one per connection, confined to its event loop.
 */
public final class RequestSequencer extends ChannelDuplexHandler {
    private final int maxPipelined;
    private final ArrayDeque<Object> waiting = new ArrayDeque<>();
    private ChannelHandlerContext context;
    private boolean inFlight;
    private boolean drainScheduled;
    private boolean closing;

    /**
     * @param maxPipelined requests that may wait before reading stops.
     */
    public RequestSequencer(final int maxPipelined) {
        this.maxPipelined = maxPipelined;
    }

    @Override
    public void handlerAdded(final ChannelHandlerContext ctx) {
        this.context = ctx;
    }

    /**
     * @return true while a request was handed on and its answer has not been written to its end.
     */
    public boolean inFlight() {
        return inFlight;
    }

    @Override
    public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
        if (!(msg instanceof FullHttpRequest) && !(msg instanceof BodyLimit.TooLarge)) {
            ctx.fireChannelRead(msg);
            return;
        }
        if (closing) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (inFlight || !waiting.isEmpty()) {
            waiting.add(msg);
            if (waiting.size() >= maxPipelined) {
                ctx.channel().config().setAutoRead(false);
            }
            return;
        }
        inFlight = true;
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(final ChannelHandlerContext ctx, final Object msg, final ChannelPromise promise) {
        if (msg instanceof HttpResponse response && !HttpUtil.isKeepAlive(response)) {
            closing = true;
        }
        final boolean last = msg instanceof LastHttpContent;
        ctx.write(msg, promise);
        if (last && inFlight) {
            inFlight = false;
            if (closing) {
                releaseWaiting();
            } else if (!waiting.isEmpty() && !drainScheduled) {
                drainScheduled = true;
                ctx.executor().execute(this::drain);
            }
        }
    }

    private void drain() {
        drainScheduled = false;
        final ChannelHandlerContext ctx = context;
        if (!inFlight && !closing && !waiting.isEmpty() && ctx.channel().isActive()) {
            inFlight = true;
            ctx.fireChannelRead(waiting.poll());
        }
        if (waiting.size() < maxPipelined && !ctx.channel().config().isAutoRead() && ctx.channel().isActive()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    @Override
    public void userEventTriggered(final ChannelHandlerContext ctx, final Object evt) {
        if (evt instanceof IdleStateEvent) {
            if (!inFlight && waiting.isEmpty()) {
                ctx.close();
            }
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause) {
        ctx.close();
        if (!(cause instanceof IOException) && !(cause instanceof PrematureChannelClosureException)) {
            ctx.fireExceptionCaught(cause);
        }
    }

    @Override
    public void channelInactive(final ChannelHandlerContext ctx) {
        releaseWaiting();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(final ChannelHandlerContext ctx) {
        releaseWaiting();
    }

    private void releaseWaiting() {
        Object m;
        while ((m = waiting.poll()) != null) {
            ReferenceCountUtil.release(m);
        }
    }
}
