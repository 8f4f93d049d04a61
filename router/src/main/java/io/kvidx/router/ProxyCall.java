package io.kvidx.router;

import io.kvidx.client.index.DataParallelRanks;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.exec.ProxyExchange;
import io.kvidx.routing.exec.ProxyHeaders;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.Responses;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ConnectTimeoutException;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.ScheduledFuture;

import java.net.ConnectException;
import java.net.URI;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One proxied request, from its routing plan to the last byte sent to the client: the Netty transport of routing's
 * proxy policy ({@link ProxyExchange}: which pod each call goes to, with which headers, when to replan, prefill then
 * decode). It opens (or reuses) the pod connection on the client connection's event loop, sends each call, streams
 * the answer back chunk by chunk, and for a prefill stage reads the whole answer (at most
 * {@link RouterConfig#MAX_PREFILL_ANSWER_BYTES}) to pass to the decode call.
 *
 * <p>Failures the policy retries on another pod (a refused or timed-out connection, which also marks the pod down
 * until its health check passes; no response headers within {@code first-byte-ms}; a 5xx, or a prefill answer that
 * is not 2xx; the pod closing the connection before answering) are counted here by reason. Once the answer's head
 * reached the client, a pod breaking off closes the client's connection (counted).
 *
 * <p>Backpressure: while the client's connection is not writable, the pod's connection stops reading (so the pod's
 * TCP window closes); it reads again once the client drained. A client that goes away closes the pod connection,
 * which cancels the request in the engine. {@code request-ms} bounds the whole exchange.
 *
 * <p><b>Note:</b> confined to the client connection's event loop (the pod connections are opened on it too).
 */
final class ProxyCall implements UpstreamHandler.Listener, Runnable {
    /** A timer firing this close to a deadline counts it as reached. */
    private static final long TIMER_SLACK_NS = TimeUnit.MICROSECONDS.toNanos(500);

    private final ProxyCalls calls;
    private final ChannelHandlerContext client;
    private final CallRequest request;
    private final RoutingContext ctx;
    private final ProxyExchange exchange;

    private ByteBuf stageBody;
    private ProxyExchange.Call call;
    private Channel upstream;
    private boolean headSent;
    private boolean done;
    private boolean upstreamKeepAlive;
    /** x-kvidx-predicted-tokens: the chosen pod's cached prefix per the index when it was called. */
    private long predictedTokens;
    private CompositeByteBuf prefillAnswer;
    /** The one timer of the call ({@link #run}): at the earliest of its deadlines. */
    private ScheduledFuture<?> timer;
    /** When {@link #timer} fires ({@link System#nanoTime()}), or {@link Long#MAX_VALUE} when none is pending. */
    private long timerAtNs = Long.MAX_VALUE;
    private long requestDeadlineNs;
    /** The answer's head is due by then while a call waits for it, else {@link Long#MAX_VALUE}. */
    private long firstByteDeadlineNs = Long.MAX_VALUE;
    /** Whether the client's headers were cut to those forwarded (once, in place: they are the calls' headers). */
    private boolean headersPrepared;

    ProxyCall(final ProxyCalls calls, final ChannelHandlerContext client, final CallRequest request,
        final RoutingContext ctx, final ProxyExchange exchange) {
        this.calls = calls;
        this.client = client;
        this.request = request;
        this.ctx = ctx;
        this.exchange = exchange;
    }

    /** Starts the first call. */
    void start() {
        calls.metrics.inFlight.inc();
        final long now = System.nanoTime();
        requestDeadlineNs = now + TimeUnit.MILLISECONDS.toNanos(calls.requestMs);
        // One timer for both deadlines: the first call's head is due about firstByteMs from now.
        arm(Math.min(requestDeadlineNs, now + TimeUnit.MILLISECONDS.toNanos(calls.firstByteMs)));
        if (exchange.stage() == ProxyExchange.Stage.PREFILL) {
            try {
                stageBody = Unpooled.wrappedBuffer(exchange.prefillBody(ByteBufUtil.getBytes(request.body())));
            } catch (final RuntimeException ex) {
                fail(400, "invalid_request_error", "cannot prepare the prefill request: " + ex.getMessage());
                return;
            }
        } else {
            stageBody = request.body().retain(); // each call sends a duplicate: its indexes stay for a retry
        }
        next();
    }

    /**
     * @return true once the call ended (answered, failed or cancelled).
     */
    boolean isDone() {
        return done;
    }

    private void next() {
        if (done) {
            return;
        }
        call = exchange.call();
        if (call == null) {
            calls.metrics.noPod.inc();
            fail(503, "no_pod_available", exchange.noPodMessage());
            return;
        }
        if (call.endpoint() == null) {
            failed("no-url", "pod " + podId(call.slot()) + " has no URL");
            return;
        }
        if (calls.responseHeaders) {
            // Probed before the pod is called: once called, it stores the prompt's blocks and the index shows them.
            // Capped as vLLM caps a hit: never the block holding the prompt's last token (it is recomputed).
            final long blocks = Math.max(0, calls.policy.router().heldDepth(ctx, call.slot()));
            final int tokens = request.promptTokens();
            final long hittable = tokens > 0 ? (tokens - 1) / calls.blockSize : blocks;
            predictedTokens = Math.min(blocks, hittable) * (long) calls.blockSize;
        }
        final ProxyExchange.Call target = call;
        final ChannelFuture f = calls.upstreams.acquire(client.channel().eventLoop(), target.endpoint());
        if (f.isDone()) {
            connected(f, target);
        } else {
            f.addListener((ChannelFutureListener) cf -> connected(cf, target));
        }
    }

    private void connected(final ChannelFuture f, final ProxyExchange.Call target) {
        if (done || target != call) {
            if (f.isSuccess()) {
                f.channel().close();
            }
            return;
        }
        final URI url = target.endpoint();
        if (!f.isSuccess()) {
            final Throwable cause = f.cause();
            if (cause instanceof ConnectException || cause instanceof ConnectTimeoutException) {
                calls.pods.markDown(target.slot());
            }
            failed("connect", "cannot connect to " + url.getHost() + ":" + Upstreams.port(url) + ": "
                + cause.getMessage());
            return;
        }
        upstream = f.channel();
        upstream.attr(Upstreams.LISTENER).set(this);
        upstreamKeepAlive = false;
        exchange.started();
        // The client's headers object is the call's (no copy): cut once to those forwarded, then the policy's and the
        // transport's set on it for each call (a retry replaces them).
        final HttpHeaders h = request.headers();
        if (!headersPrepared) {
            final String connection = h.get(HttpHeaderNames.CONNECTION);
            CharSequence name;
            while ((name = firstNotForwarded(h, connection)) != null) {
                h.remove(name);
            }
            headersPrepared = true;
        } else {
            h.remove(DataParallelRanks.HEADER);
            if (target.hintName() != null) {
                h.remove(target.hintName());
            }
        }
        target.headers(h::set);
        h.set(HttpHeaderNames.HOST, calls.hostHeader(url));
        h.setInt(HttpHeaderNames.CONTENT_LENGTH, stageBody.readableBytes());
        h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        final DefaultFullHttpRequest out = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST,
            target.path(request.path()), stageBody.retainedDuplicate(), h, EmptyHttpHeaders.INSTANCE);
        firstByteDeadlineNs = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(calls.firstByteMs);
        if (firstByteDeadlineNs < timerAtNs) {
            arm(firstByteDeadlineNs);
        }
        upstream.writeAndFlush(out).addListener((ChannelFutureListener) wf -> {
            if (!wf.isSuccess() && upstream == wf.channel()) {
                final Channel ch = upstream;
                dropUpstream();
                ch.close();
                failed("write", "cannot send the request: " + wf.cause());
            }
        });
    }

    @Override
    public void onHead(final Channel ch, final HttpResponse head) {
        if (ch != upstream || done) {
            return;
        }
        firstByteDeadlineNs = Long.MAX_VALUE;
        upstreamKeepAlive = HttpUtil.isKeepAlive(head);
        final int status = head.status().code();
        if (exchange.retries(status)) {
            dropUpstream();
            ch.close();
            failed("status", (exchange.stage() == ProxyExchange.Stage.PREFILL ? "prefill answered HTTP "
                : "answered HTTP ") + status);
            return;
        }
        if (exchange.stage() == ProxyExchange.Stage.PREFILL) {
            prefillAnswer = ch.alloc().compositeBuffer();
            return;
        }
        // The pod's head goes to the client itself (no copy), its hop-by-hop headers removed in place: the decoder
        // read its framing before handing it on.
        final HttpResponse out = head;
        out.setProtocolVersion(HttpVersion.HTTP_1_1);
        final HttpHeaders from = head.headers();
        final String connection = from.get(HttpHeaderNames.CONNECTION);
        CharSequence name;
        while ((name = firstHopByHop(from, connection)) != null) {
            from.remove(name);
        }
        if (!from.contains(HttpHeaderNames.CONTENT_LENGTH)) {
            HttpUtil.setTransferEncodingChunked(out, true);
        }
        if (calls.responseHeaders) {
            final RoutingPlan plan = exchange.plan();
            out.headers().set("x-kvidx-pod", String.valueOf(podId(call.slot())));
            out.headers().set("x-kvidx-predicted-tokens", predictedTokens);
            out.headers().set("x-kvidx-fallback", plan.isFallback());
            if (exchange.prefillSlot() != RoutingPlan.NO_POD) {
                out.headers().set("x-kvidx-prefill-pod", String.valueOf(podId(exchange.prefillSlot())));
            }
        }
        HttpUtil.setKeepAlive(out, request.keepAlive());
        headSent = true;
        calls.metrics.firstByteSeconds.observe((System.nanoTime() - request.arrivedNs()) / 1e9);
        calls.metrics.answered(request.endpointLabel(), status);
        client.write(out);
    }

    @Override
    public void onContent(final Channel ch, final HttpContent content) {
        if (ch != upstream || done) {
            content.release();
            return;
        }
        final boolean last = content instanceof LastHttpContent;
        if (exchange.stage() == ProxyExchange.Stage.PREFILL) {
            collectPrefill(ch, content, last);
            return;
        }
        if (!headSent) {
            content.release();
            return;
        }
        if (last) {
            returnUpstream(ch);
            complete((LastHttpContent) content); // the pod's last part itself, its data and trailers
            return;
        }
        client.writeAndFlush(content); // the pod's chunk itself: the client's connection releases it once written
        if (!client.channel().isWritable()) {
            ch.config().setAutoRead(false);
        }
    }

    private void collectPrefill(final Channel ch, final HttpContent content, final boolean last) {
        if (prefillAnswer == null) {
            content.release();
            return;
        }
        if (prefillAnswer.readableBytes() + content.content().readableBytes() > RouterConfig.MAX_PREFILL_ANSWER_BYTES) {
            content.release();
            dropUpstream();
            ch.close();
            failed("prefill-too-large", "prefill answer exceeds " + RouterConfig.MAX_PREFILL_ANSWER_BYTES + " bytes");
            return;
        }
        prefillAnswer.addComponent(true, content.content().retain());
        content.release();
        if (last) {
            prefillDone(ch);
        }
    }

    private void prefillDone(final Channel ch) {
        final byte[] answer = ByteBufUtil.getBytes(prefillAnswer);
        prefillAnswer.release();
        prefillAnswer = null;
        returnUpstream(ch);
        exchange.prefilled();
        final byte[] decodeBody;
        try {
            decodeBody = exchange.decodeBody(ByteBufUtil.getBytes(request.body()), answer);
        } catch (final RuntimeException ex) {
            fail(502, "bad_gateway", "the prefill pod's answer cannot be passed to decode: " + ex.getMessage());
            return;
        }
        stageBody.release();
        stageBody = Unpooled.wrappedBuffer(decodeBody);
        next();
    }

    /** A pod connection whose answer was read to its end goes back to the pool on a keep-alive exchange. */
    private void returnUpstream(final Channel ch) {
        final boolean reuse = upstreamKeepAlive;
        final URI url = call.endpoint();
        dropUpstream();
        if (reuse) {
            calls.upstreams.release(url, ch);
        } else {
            ch.close();
        }
    }

    @Override
    public void onUpstreamClosed(final Channel ch, final String why) {
        if (ch != upstream || done) {
            return;
        }
        dropUpstream();
        if (headSent) {
            calls.metrics.brokenStreams.inc();
            calls.metrics.upstreamFailures.labelValues(exchange.stage().label(), "broken").inc();
            exchange.brokeOff(why);
            finish();
            client.close();
            return;
        }
        failed("closed", why);
    }

    /** The client's connection can take more: let the pod's connection read again. */
    void onClientWritable() {
        if (upstream != null && client.channel().isWritable()) {
            upstream.config().setAutoRead(true);
            upstream.read();
        }
    }

    /** The client went away: cancel the pod's request by closing its connection. */
    void onClientClosed() {
        if (done) {
            return;
        }
        calls.metrics.clientDisconnects.inc();
        final Channel ch = upstream;
        dropUpstream();
        if (ch != null) {
            ch.close();
        }
        finish();
    }

    /** A call failed before the answer's head reached the client: the policy tries another pod or gives up. */
    private void failed(final String reason, final String detail) {
        if (done) {
            return;
        }
        calls.metrics.upstreamFailures.labelValues(exchange.stage().label(), reason).inc();
        if (!exchange.failed(detail)) {
            fail(502, "bad_gateway", exchange.spentMessage());
            return;
        }
        calls.metrics.retries.inc();
        next();
    }

    private void fail(final int status, final String type, final String message) {
        if (done) {
            return;
        }
        final Channel ch = upstream;
        dropUpstream();
        if (ch != null) {
            ch.close();
        }
        if (headSent) {
            finish();
            client.close();
            return;
        }
        calls.metrics.answered(request.endpointLabel(), status);
        finish();
        Responses.error(client, request.keepAlive(), ErrorShape.OPENAI, new HttpError(status, type, message));
    }

    private void complete(final LastHttpContent last) {
        finish();
        final ChannelFuture f = client.writeAndFlush(last);
        if (!request.keepAlive()) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
    }

    /** The first header the policy does not forward, or null (the headers' iterator cannot remove). */
    private CharSequence firstNotForwarded(final HttpHeaders h, final String connection) {
        final Iterator<Map.Entry<CharSequence, CharSequence>> it = h.iteratorCharSequence();
        while (it.hasNext()) {
            final CharSequence name = it.next().getKey();
            if (!setByCall(name) && !calls.policy.forwardsRequestHeader(name, connection)) {
                return name;
            }
        }
        return null;
    }

    /** Whether each call sets the header itself, replacing the client's (Host, Content-Length, Content-Type, ...). */
    private static boolean setByCall(final CharSequence name) {
        return HttpHeaderNames.HOST.contentEqualsIgnoreCase(name)
            || HttpHeaderNames.CONTENT_LENGTH.contentEqualsIgnoreCase(name)
            || HttpHeaderNames.CONTENT_TYPE.contentEqualsIgnoreCase(name)
            || HttpHeaderNames.CONNECTION.contentEqualsIgnoreCase(name);
    }

    /** The first hop-by-hop header of a pod's answer, or null. */
    private static CharSequence firstHopByHop(final HttpHeaders h, final String connection) {
        final Iterator<Map.Entry<CharSequence, CharSequence>> it = h.iteratorCharSequence();
        while (it.hasNext()) {
            final CharSequence name = it.next().getKey();
            // Content-Length is kept, Connection set by HttpUtil.setKeepAlive: neither needs removing.
            if (!HttpHeaderNames.CONTENT_LENGTH.contentEqualsIgnoreCase(name)
                && !HttpHeaderNames.CONNECTION.contentEqualsIgnoreCase(name)
                && ProxyHeaders.isHopByHop(name, connection)) {
                return name;
            }
        }
        return null;
    }

    /**
     * The call's timer: the request's deadline ({@code request-ms}: 504 before the answer started) and, while a call
     * waits for the answer's head, its first-byte deadline (the pod is dropped and another tried); then armed again
     * at the next deadline still pending.
     */
    @Override
    public void run() {
        timer = null;
        timerAtNs = Long.MAX_VALUE;
        if (done) {
            return;
        }
        final long now = System.nanoTime() + TIMER_SLACK_NS;
        if (now >= requestDeadlineNs) {
            fail(504, "timeout", "the request took longer than " + calls.requestMs + " ms (timeouts.request-ms)");
            return;
        }
        if (now >= firstByteDeadlineNs && upstream != null && !headSent) {
            final Channel ch = upstream;
            dropUpstream();
            ch.close();
            failed("first-byte-timeout", "no answer within " + calls.firstByteMs + " ms (timeouts.first-byte-ms)");
        }
        if (!done && timerAtNs == Long.MAX_VALUE) {
            arm(Math.min(requestDeadlineNs, firstByteDeadlineNs));
        }
    }

    /** (Re)arms the call's one timer for {@code atNs}. */
    private void arm(final long atNs) {
        cancel(timer);
        timerAtNs = atNs;
        timer = client.executor().schedule(this, Math.max(0, atNs - System.nanoTime()), TimeUnit.NANOSECONDS);
    }

    /** Forgets the pod connection (the caller closes or keeps it); its call stops counting in the pod's load. */
    private void dropUpstream() {
        firstByteDeadlineNs = Long.MAX_VALUE;
        if (upstream != null) {
            upstream.attr(Upstreams.LISTENER).set(null);
            upstream = null;
        }
        exchange.ended();
    }

    private void finish() {
        if (done) {
            return;
        }
        done = true;
        cancel(timer);
        timer = null;
        timerAtNs = Long.MAX_VALUE;
        exchange.ended();
        if (prefillAnswer != null) {
            prefillAnswer.release();
            prefillAnswer = null;
        }
        if (stageBody != null) {
            stageBody.release();
            stageBody = null;
        }
        request.body().release();
        calls.decisions.release(ctx);
        calls.metrics.inFlight.dec();
    }

    private String podId(final int slot) {
        return calls.policy.registry().podId(slot);
    }

    private static void cancel(final ScheduledFuture<?> f) {
        if (f != null) {
            f.cancel(false);
        }
    }
}
