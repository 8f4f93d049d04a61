package io.kvidx.router;

import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.serve.BodyLimit;
import io.kvidx.serve.HttpRequestHandler;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.OpenAiRequest;
import io.kvidx.serve.Responses;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.concurrent.FastThreadLocal;

/**
 * The client side of one connection: answers {@code GET /health}, {@code /metrics}, {@code /v1/models} through
 * {@link RouterEndpoints}, and turns {@code POST /v1/completions} and {@code /v1/chat/completions} into a decision
 * ({@link Decisions}) and a {@link ProxyCall} ({@link ProxyCalls}). The serving layer's
 * {@link io.kvidx.serve.RequestSequencer} before it hands it one request at a time, the next once the answer before
 * was written to its end, so answers leave in order; reading goes on meanwhile, so a client that goes away is seen
 * at once and its call cancelled, even during a long prefill.
 *
 * <p><b>Note:</b> one instance per connection, confined to its event loop (a tokenizing thread touches only the
 * request's context and hands back).
 */
final class FrontHandler extends HttpRequestHandler implements Decisions.Decided {
    private static final FastThreadLocal<OpenAiRequest> PARSERS = new FastThreadLocal<>() {
        @Override
        protected OpenAiRequest initialValue() {
            return new OpenAiRequest();
        }
    };

    private final RouterEndpoints endpoints;
    private final Decisions decisions;
    private final ProxyCalls calls;
    private final RouterMetrics metrics;
    private ProxyCall call;
    // The request being decided (one at a time: the sequencer hands on the next once this one was answered). The
    // handler is its own Decided, so that a decision allocates no callback.
    private ChannelHandlerContext pendingCtx;
    private FullHttpRequest pending;
    private String pendingPath;
    private String pendingLabel;
    private boolean pendingKeepAlive;
    private long pendingArrived;

    /**
     * @param endpoints the router's own answers.
     * @param decisions where requests are decided.
     * @param calls     where decided requests are proxied.
     * @param metrics   the router's metrics.
     */
    FrontHandler(final RouterEndpoints endpoints, final Decisions decisions, final ProxyCalls calls,
        final RouterMetrics metrics) {
        this.endpoints = endpoints;
        this.decisions = decisions;
        this.calls = calls;
        this.metrics = metrics;
    }

    @Override
    protected void tooLarge(final ChannelHandlerContext ctx, final BodyLimit.TooLarge tooLarge) {
            metrics.requests.labelValues("any", "413").inc();
            error(ctx, false, 413, OpenAiRequest.INVALID, "request body exceeds " + tooLarge.maxBodyBytes()
                + " bytes (max-body-bytes)");
    }

    @Override
    protected void request(final ChannelHandlerContext ctx, final FullHttpRequest request) {
        final long arrived = System.nanoTime();
        final boolean keepAlive = HttpUtil.isKeepAlive(request);
        if (!request.decoderResult().isSuccess()) {
            error(ctx, false, 400, OpenAiRequest.INVALID, "malformed HTTP request");
            return;
        }
        final String uri = request.uri();
        final int q = uri.indexOf('?');
        final String path = q < 0 ? uri : uri.substring(0, q);
        final HttpMethod method = request.method();
        switch (path) {
            case "/v1/completions", "/v1/chat/completions" -> {
                if (takes(ctx, keepAlive, method, HttpMethod.POST, path)) {
                    proxy(ctx, request, path, keepAlive, arrived);
                }
            }
            case "/health" -> {
                if (takes(ctx, keepAlive, method, HttpMethod.GET, path)) {
                    endpoints.health(ctx, keepAlive);
                }
            }
            case "/metrics" -> {
                if (takes(ctx, keepAlive, method, HttpMethod.GET, path)) {
                    endpoints.metrics(ctx, keepAlive);
                }
            }
            case "/v1/models" -> {
                if (takes(ctx, keepAlive, method, HttpMethod.GET, path)) {
                    endpoints.models(ctx, keepAlive);
                }
            }
            default -> error(ctx, keepAlive, 404, "not_found", "no such endpoint: " + path);
        }
    }

    /** False, and a 405 answered, when the endpoint takes another method. */
    private static boolean takes(final ChannelHandlerContext ctx, final boolean keepAlive, final HttpMethod method,
        final HttpMethod expected, final String path) {
        if (method == expected) {
            return true;
        }
        error(ctx, keepAlive, 405, OpenAiRequest.INVALID, path + " takes " + expected);
        return false;
    }

    private void proxy(final ChannelHandlerContext ctx, final FullHttpRequest request, final String path,
        final boolean keepAlive, final long arrived) {
        final boolean chat = path.endsWith("chat/completions");
        final String label = chat ? "chat" : "completions";
        final OpenAiRequest parsed = PARSERS.get();
        try {
            parsed.parse(request.content(), chat);
        } catch (final HttpError ex) {
            metrics.answered(label, ex.status());
            Responses.error(ctx, keepAlive, ErrorShape.OPENAI, ex);
            return;
        }
        request.retain();
        pendingCtx = ctx;
        pending = request;
        pendingPath = path;
        pendingLabel = label;
        pendingKeepAlive = keepAlive;
        pendingArrived = arrived;
        decisions.decide(ctx, request, parsed, arrived, this);
    }

    @Override
    public void decided(final RoutingContext rc, final RoutingPlan plan, final int promptTokens) {
        final ChannelHandlerContext ctx = pendingCtx;
        final FullHttpRequest request = taken();
        if (!ctx.channel().isActive()) {
            decisions.release(rc);
            request.release();
            metrics.clientDisconnects.inc();
            return;
        }
        // The headers are heap objects: they outlive the release of the request's content (no copy). The body is
        // the aggregated content itself, retained (no copy).
        final CallRequest r = new CallRequest(request.headers(), pendingPath, request.content().retain(),
            pendingKeepAlive, pendingArrived, promptTokens, pendingLabel);
        request.release();
        call = calls.start(ctx, r, rc, plan);
    }

    @Override
    public void refused(final HttpError error) {
        final FullHttpRequest request = taken();
        request.release();
        metrics.answered(pendingLabel, error.status());
        Responses.error(pendingCtx, pendingKeepAlive, ErrorShape.OPENAI, error);
    }

    private FullHttpRequest taken() {
        final FullHttpRequest request = pending;
        pending = null;
        return request;
    }

    private static void error(final ChannelHandlerContext ctx, final boolean keepAlive, final int status,
        final String type, final String message) {
        Responses.error(ctx, keepAlive, ErrorShape.OPENAI, new HttpError(status, type, message));
    }

    @Override
    public void channelReadComplete(final ChannelHandlerContext context) {
        context.flush();
    }

    @Override
    public void channelWritabilityChanged(final ChannelHandlerContext ctx) {
        if (call != null && !call.isDone()) {
            call.onClientWritable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(final ChannelHandlerContext context) {
        if (call != null) {
            call.onClientClosed();
        }
        context.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause) {
        if (call != null) {
            call.onClientClosed();
        }
        ctx.close();
    }
}
