package io.kvidx.router;

import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
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
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.AsciiString;
import io.netty.util.concurrent.ScheduledFuture;

import java.net.ConnectException;
import java.net.URI;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * One proxied request, from its routing plan to the last byte sent to the client: calls the planned pod, retries on
 * another pod (the workflow replans without the failed one) while nothing has been sent to the client yet, streams
 * the answer back chunk by chunk, and for a prefill/decode plan first calls the prefill pod, reads its whole answer
 * and passes it to the decode call ({@link io.kvidx.routing.exec.PrefillDecodeAdapter}).
 *
 * <p>Failures retried (at most {@code attempts} calls per stage): a refused or timed-out connection (the pod is
 * marked down until its health check passes), no response headers within {@code first-byte-ms}, a 5xx answer, the
 * pod closing the connection before answering; a prefill answer that is not 2xx. A 4xx is the client's: passed
 * through. Once the answer's head reached the client, a pod breaking off closes the client's connection (counted).
 *
 * <p>Backpressure: while the client's connection is not writable, the pod's connection stops reading (so the pod's
 * TCP window closes); it reads again once the client drained. A client that goes away closes the pod connection,
 * which cancels the request in the engine. {@code request-ms} bounds the whole exchange.
 *
 * <p><b>Note:</b> confined to the client connection's event loop (the pod connections are opened on it too).
 */
final class ProxyCall {
    private enum Stage { SINGLE, PREFILL, DECODE }

    /** Hop-by-hop headers (RFC 9110 7.6.1 and the usual extras), and those the router sets itself. */
    private static final AsciiString[] SKIPPED = {HttpHeaderNames.CONNECTION, AsciiString.cached("keep-alive"),
        HttpHeaderNames.PROXY_AUTHENTICATE, HttpHeaderNames.PROXY_AUTHORIZATION, HttpHeaderNames.TE,
        HttpHeaderNames.TRAILER, HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderNames.UPGRADE,
        AsciiString.cached("proxy-connection"), HttpHeaderNames.HOST, HttpHeaderNames.CONTENT_LENGTH,
        HttpHeaderNames.EXPECT};

    private final RouterServer server;
    private final FrontHandler front;
    private final ChannelHandlerContext client;
    private final HttpHeaders clientHeaders;
    private final String path;
    private final ByteBuf body;
    private final RoutingContext ctx;
    private final boolean clientKeepAlive;
    private final long arrivedNs;
    private final int promptTokens;
    private final String endpointLabel;
    private final List<String> failures = new ArrayList<>(2);

    private RoutingPlan plan;
    private Stage stage;
    private int stageAttempts;
    private int slot = RoutingPlan.NO_POD;
    private int prefillSlot = RoutingPlan.NO_POD;
    private ByteBuf stageBody;
    private URI url;
    private Channel upstream;
    private boolean counted;
    private boolean headSent;
    private boolean done;
    private boolean upstreamKeepAlive;
    /** x-kvidx-predicted-tokens: the chosen pod's cached prefix per the index when it was called. */
    private long predictedTokens;
    private CompositeByteBuf prefillAnswer;
    private ScheduledFuture<?> firstByteTimer;
    private ScheduledFuture<?> requestTimer;

    ProxyCall(final RouterServer server, final FrontHandler front, final ChannelHandlerContext client,
        final HttpHeaders clientHeaders, final String path, final ByteBuf body, final RoutingContext ctx,
        final RoutingPlan plan, final boolean clientKeepAlive, final long arrivedNs, final int promptTokens,
        final String endpointLabel) {
        this.server = server;
        this.front = front;
        this.client = client;
        this.clientHeaders = clientHeaders;
        this.path = path;
        this.body = body;
        this.ctx = ctx;
        this.plan = plan;
        this.clientKeepAlive = clientKeepAlive;
        this.arrivedNs = arrivedNs;
        this.promptTokens = promptTokens;
        this.endpointLabel = endpointLabel;
    }

    /** Starts the first call. */
    void start() {
        server.metrics.inFlight.inc();
        requestTimer = client.executor().schedule(() -> fail(504, "timeout",
            "the request took longer than " + server.config.requestMs + " ms (timeouts.request-ms)"),
            server.config.requestMs, TimeUnit.MILLISECONDS);
        if (plan.kind() == RoutingPlan.Kind.PREFILL_DECODE) {
            stage = Stage.PREFILL;
            try {
                stageBody = Unpooled.wrappedBuffer(server.adapter.prefillBody(ByteBufUtil.getBytes(body)));
            } catch (final RuntimeException ex) {
                fail(400, "invalid_request_error", "cannot prepare the prefill request: " + ex.getMessage());
                return;
            }
            slot = plan.prefillSlot();
        } else {
            stage = Stage.SINGLE;
            stageBody = body.retainedDuplicate();
            slot = plan.slot();
        }
        call();
    }

    private String stageName() {
        return stage.name().toLowerCase(Locale.ROOT);
    }

    private void call() {
        if (done) {
            return;
        }
        if (slot == RoutingPlan.NO_POD) {
            server.metrics.noPod.inc();
            fail(503, "no_pod_available", "no " + stageName() + " pod available" + attemptsSummary());
            return;
        }
        url = server.pods.endpoint(slot);
        if (url == null) {
            failed("no-url", "pod " + server.registry.podId(slot) + " has no URL");
            return;
        }
        if (server.config.responseHeaders) {
            // Probed before the pod is called: once called, it stores the prompt's blocks and the index shows them.
            // Capped as vLLM caps a hit: never the block holding the prompt's last token (it is recomputed).
            final long blocks = Math.max(0, server.router.heldDepth(ctx, slot));
            final long hittable = promptTokens > 0 ? (promptTokens - 1) / server.blockSize : blocks;
            predictedTokens = Math.min(blocks, hittable) * (long) server.blockSize;
        }
        final URI target = url;
        final ChannelFuture f = server.upstreams.acquire(client.channel().eventLoop(), target);
        if (f.isDone()) {
            connected(f, target);
        } else {
            f.addListener((ChannelFutureListener) cf -> connected(cf, target));
        }
    }

    private void connected(final ChannelFuture f, final URI target) {
        if (done) {
            if (f.isSuccess()) {
                f.channel().close();
            }
            return;
        }
        if (!f.isSuccess()) {
            final Throwable cause = f.cause();
            if (cause instanceof ConnectException || cause instanceof ConnectTimeoutException) {
                server.pods.markDown(slot);
            }
            failed("connect", "cannot connect to " + target.getHost() + ":" + Upstreams.port(target) + ": "
                + cause.getMessage());
            return;
        }
        upstream = f.channel();
        upstream.attr(Upstreams.CALL).set(this);
        upstreamKeepAlive = false;
        server.registry.requestStarted(slot, promptTokens);
        counted = true;
        final String base = target.getRawPath() == null ? "" : target.getRawPath();
        final String uri = (base.endsWith("/") ? base.substring(0, base.length() - 1) : base) + path;
        final DefaultFullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST,
            uri, stageBody.retainedDuplicate());
        final HttpHeaders h = request.headers();
        copyHeaders(clientHeaders, h);
        h.set(HttpHeaderNames.HOST, target.getHost() + ":" + Upstreams.port(target));
        h.set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        h.setInt(HttpHeaderNames.CONTENT_LENGTH, stageBody.readableBytes());
        h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        firstByteTimer = client.executor().schedule(() -> {
            if (!done && upstream != null && !headSent) {
                final Channel ch = upstream;
                dropUpstream();
                ch.close();
                failed("first-byte-timeout", "no answer within " + server.config.firstByteMs
                    + " ms (timeouts.first-byte-ms)");
            }
        }, server.config.firstByteMs, TimeUnit.MILLISECONDS);
        upstream.writeAndFlush(request).addListener((ChannelFutureListener) wf -> {
            if (!wf.isSuccess() && upstream == wf.channel()) {
                final Channel ch = upstream;
                dropUpstream();
                ch.close();
                failed("write", "cannot send the request: " + wf.cause());
            }
        });
    }

    /** The pod's response head. */
    void onHead(final Channel ch, final HttpResponse head) {
        if (ch != upstream || done) {
            return;
        }
        cancel(firstByteTimer);
        upstreamKeepAlive = HttpUtil.isKeepAlive(head);
        final int status = head.status().code();
        if (stage == Stage.PREFILL) {
            if (status / 100 != 2) {
                dropUpstream();
                ch.close();
                failed("status", "prefill answered HTTP " + status);
                return;
            }
            prefillAnswer = ch.alloc().compositeBuffer();
            return;
        }
        if (status >= 500) {
            dropUpstream();
            ch.close();
            failed("status", "answered HTTP " + status);
            return;
        }
        final HttpResponse out = new DefaultHttpResponse(HttpVersion.HTTP_1_1, head.status());
        copyHeaders(head.headers(), out.headers());
        if (head.headers().contains(HttpHeaderNames.CONTENT_LENGTH)) {
            out.headers().set(HttpHeaderNames.CONTENT_LENGTH, head.headers().get(HttpHeaderNames.CONTENT_LENGTH));
        } else {
            HttpUtil.setTransferEncodingChunked(out, true);
        }
        if (server.config.responseHeaders) {
            out.headers().set("x-kvidx-pod", String.valueOf(server.registry.podId(slot)));
            out.headers().set("x-kvidx-predicted-tokens", predictedTokens);
            out.headers().set("x-kvidx-fallback", plan.isFallback());
            if (prefillSlot != RoutingPlan.NO_POD) {
                out.headers().set("x-kvidx-prefill-pod", String.valueOf(server.registry.podId(prefillSlot)));
            }
        }
        HttpUtil.setKeepAlive(out, clientKeepAlive);
        headSent = true;
        server.metrics.firstByteSeconds.observe((System.nanoTime() - arrivedNs) / 1e9);
        server.metrics.requests.labelValues(endpointLabel, Integer.toString(status)).inc();
        client.write(out);
    }

    /** Content of the pod's answer (this call owns it). */
    void onContent(final Channel ch, final HttpContent content) {
        if (ch != upstream || done) {
            content.release();
            return;
        }
        final boolean last = content instanceof LastHttpContent;
        if (stage == Stage.PREFILL) {
            if (prefillAnswer == null) {
                content.release();
                return;
            }
            if (prefillAnswer.readableBytes() + content.content().readableBytes()
                > RouterConfig.MAX_PREFILL_ANSWER_BYTES) {
                content.release();
                dropUpstream();
                ch.close();
                failed("prefill-too-large", "prefill answer exceeds " + RouterConfig.MAX_PREFILL_ANSWER_BYTES
                    + " bytes");
                return;
            }
            prefillAnswer.addComponent(true, content.content().retain());
            content.release();
            if (last) {
                prefillDone(ch);
            }
            return;
        }
        if (!headSent) {
            content.release();
            return;
        }
        if (last) {
            final ByteBuf data = content.content().retain();
            content.release();
            final HttpContent out = data.isReadable() ? new DefaultHttpContent(data) : null;
            if (out == null) {
                data.release();
            } else {
                client.write(out);
            }
            final boolean reuse = upstreamKeepAlive;
            final Channel finished = upstream;
            final URI finishedUrl = url;
            dropUpstream();
            if (reuse) {
                server.upstreams.release(finishedUrl, finished);
            } else {
                finished.close();
            }
            complete();
            return;
        }
        client.writeAndFlush(new DefaultHttpContent(content.content().retain()));
        content.release();
        if (!client.channel().isWritable()) {
            ch.config().setAutoRead(false);
        }
    }

    private void prefillDone(final Channel ch) {
        final byte[] answer = ByteBufUtil.getBytes(prefillAnswer);
        prefillAnswer.release();
        prefillAnswer = null;
        final boolean reuse = upstreamKeepAlive;
        final URI prefillUrl = url;
        prefillSlot = slot;
        dropUpstream();
        if (reuse) {
            server.upstreams.release(prefillUrl, ch);
        } else {
            ch.close();
        }
        final byte[] decodeBody;
        try {
            decodeBody = server.adapter.decodeBody(ByteBufUtil.getBytes(body), answer);
        } catch (final RuntimeException ex) {
            fail(502, "bad_gateway", "the prefill pod's answer cannot be passed to decode: " + ex.getMessage());
            return;
        }
        stageBody.release();
        stageBody = Unpooled.wrappedBuffer(decodeBody);
        stage = Stage.DECODE;
        stageAttempts = 0;
        slot = plan.slot();
        call();
    }

    /** The pod connection closed or failed. */
    void onUpstreamClosed(final Channel ch, final String why) {
        if (ch != upstream || done) {
            return;
        }
        dropUpstream();
        if (headSent) {
            server.metrics.brokenStreams.inc();
            server.metrics.upstreamFailures.labelValues(stageName(), "broken").inc();
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
        server.metrics.clientDisconnects.inc();
        final Channel ch = upstream;
        dropUpstream();
        if (ch != null) {
            ch.close();
        }
        finish();
    }

    /** Records a failed call and tries another pod, or answers the client once the attempts are spent. */
    private void failed(final String reason, final String detail) {
        if (done) {
            return;
        }
        server.metrics.upstreamFailures.labelValues(stageName(), reason).inc();
        failures.add(stageName() + " pod " + server.registry.podId(slot) + ": " + detail);
        stageAttempts++;
        if (stageAttempts >= server.config.attempts) {
            fail(502, "bad_gateway", stageName() + " failed on " + stageAttempts + " attempt(s)"
                + attemptsSummary());
            return;
        }
        server.metrics.retries.inc();
        final int failed = slot;
        plan = switch (stage) {
            case DECODE -> server.router.workflow().replanDecode(ctx, failed);
            case PREFILL -> server.router.workflow().replan(ctx, failed);
            case SINGLE -> server.router.workflow().replan(ctx, failed);
        };
        slot = stage == Stage.PREFILL ? plan.prefillSlot() : plan.slot();
        call();
    }

    private String attemptsSummary() {
        return failures.isEmpty() ? "" : ": " + String.join("; ", failures);
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
        server.metrics.requests.labelValues(endpointLabel, Integer.toString(status)).inc();
        finish();
        front.sendError(client, clientKeepAlive, status, type, message);
    }

    private void complete() {
        final boolean keepAlive = clientKeepAlive;
        finish();
        final ChannelFuture f = client.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
        if (!keepAlive) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
    }

    /** Stops counting the pod's request and forgets the pod connection (the caller closes or keeps it). */
    private void dropUpstream() {
        cancel(firstByteTimer);
        if (upstream != null) {
            upstream.attr(Upstreams.CALL).set(null);
            upstream = null;
        }
        if (counted) {
            server.registry.requestFinished(slot, promptTokens);
            counted = false;
        }
    }

    private void finish() {
        if (done) {
            return;
        }
        done = true;
        cancel(requestTimer);
        cancel(firstByteTimer);
        if (prefillAnswer != null) {
            prefillAnswer.release();
            prefillAnswer = null;
        }
        if (stageBody != null) {
            stageBody.release();
            stageBody = null;
        }
        body.release();
        server.contexts.release(ctx);
        server.metrics.inFlight.dec();
        front.callFinished(this);
    }

    private static void cancel(final ScheduledFuture<?> f) {
        if (f != null) {
            f.cancel(false);
        }
    }

    /**
     * Copies headers except hop-by-hop ones (and those the Connection header names), Host, Content-Length and Expect
     * (the router answered the client's 100-continue itself). Names are compared in place, case-insensitively, as
     * Netty's {@link AsciiString}s: nothing is allocated per header but the copy.
     */
    static void copyHeaders(final HttpHeaders from, final HttpHeaders to) {
        final String connection = from.get(HttpHeaderNames.CONNECTION);
        final Iterator<Map.Entry<CharSequence, CharSequence>> it = from.iteratorCharSequence();
        while (it.hasNext()) {
            final Map.Entry<CharSequence, CharSequence> e = it.next();
            final CharSequence name = e.getKey();
            if (isSkipped(name) || (connection != null && connectionNames(connection, name))) {
                continue;
            }
            to.add(name, e.getValue());
        }
    }

    private static boolean isSkipped(final CharSequence name) {
        for (final AsciiString h : SKIPPED) {
            if (h.contentEqualsIgnoreCase(name)) {
                return true;
            }
        }
        return false;
    }

    private static boolean connectionNames(final String connection, final CharSequence name) {
        for (final String token : connection.split(",")) {
            if (AsciiString.contentEqualsIgnoreCase(token.trim(), name)) {
                return true;
            }
        }
        return false;
    }
}
