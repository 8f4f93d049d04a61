package io.kvidx.router;

import com.fasterxml.jackson.core.JsonGenerator;
import io.kvidx.routing.RequestMeta;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.FastThreadLocal;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.RejectedExecutionException;

/**
 * The client side of one connection: answers {@code GET /health}, {@code /metrics}, {@code /v1/models} itself, and
 * turns {@code POST /v1/completions} and {@code /v1/chat/completions} into a routing decision and a
 * {@link ProxyCall}. One request at a time per connection: requests a client pipelines wait here while a call is
 * in flight, so answers leave in order; reading goes on, so a client that goes away is seen at once.
 *
 * <p>Deciding: a request given as token ids is parsed, keyed and decided on the event loop (microseconds; the index
 * read is bounded and never waits); a text or chat request whose profile tokenizes goes to the tokenizing threads
 * (a bounded queue: 503 when full), and its call starts back on the event loop.
 *
 * <p><b>Note:</b> one instance per connection, confined to its event loop (the tokenizing thread touches only the
 * request's context and hands back).
 */
final class FrontHandler extends ChannelInboundHandlerAdapter {
    private static final FastThreadLocal<OpenAiRequest> PARSERS = new FastThreadLocal<>() {
        @Override
        protected OpenAiRequest initialValue() {
            return new OpenAiRequest();
        }
    };

    /** Requests a pipelining client may send ahead of its answers before the router stops reading. */
    static final int MAX_PIPELINED = 16;

    /** What {@link RouterServer}'s body limit passes on, in order, for a request it refused. */
    static final class Oversized {
        final int maxBodyBytes;

        Oversized(final int maxBodyBytes) {
            this.maxBodyBytes = maxBodyBytes;
        }
    }

    private final RouterServer server;
    private final ArrayDeque<Object> pending = new ArrayDeque<>();
    private ChannelHandlerContext connection;
    private ProxyCall call;
    private boolean busy;

    FrontHandler(final RouterServer server) {
        this.server = server;
    }

    @Override
    public void handlerAdded(final ChannelHandlerContext context) {
        this.connection = context;
    }

    /**
     * Reads go on while a call is in flight, so that a client that goes away is seen at once (its call cancelled,
     * even during a long prefill); requests it pipelines meanwhile wait here, in order, and reading stops once
     * {@link #MAX_PIPELINED} wait.
     */
    @Override
    public void channelRead(final ChannelHandlerContext context, final Object msg) {
        if (busy) {
            pending.add(msg);
            if (pending.size() >= MAX_PIPELINED) {
                context.channel().config().setAutoRead(false);
            }
            return;
        }
        handle(context, msg);
    }

    private void handle(final ChannelHandlerContext ctx, final Object msg) {
        if (msg instanceof Oversized o) {
            server.metrics.requests.labelValues("any", "413").inc();
            sendError(ctx, false, 413, "invalid_request_error", "request body exceeds " + o.maxBodyBytes
                + " bytes (max-body-bytes)");
            return;
        }
        if (!(msg instanceof FullHttpRequest request)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        final long arrived = System.nanoTime();
        final boolean keepAlive = HttpUtil.isKeepAlive(request);
        if (!request.decoderResult().isSuccess()) {
            request.release();
            sendError(ctx, false, 400, "invalid_request_error", "malformed HTTP request");
            return;
        }
        final String uri = request.uri();
        final int q = uri.indexOf('?');
        final String path = q < 0 ? uri : uri.substring(0, q);
        final HttpMethod method = request.method();
        try {
            switch (path) {
                case "/v1/completions", "/v1/chat/completions" -> {
                    if (method != HttpMethod.POST) {
                        sendError(ctx, keepAlive, 405, "invalid_request_error", path + " takes POST");
                        return;
                    }
                    proxy(ctx, request.retain(), path, keepAlive, arrived);
                }
                case "/health" -> health(ctx, keepAlive, method);
                case "/metrics" -> metrics(ctx, keepAlive, method);
                case "/v1/models" -> models(ctx, keepAlive, method);
                default -> sendError(ctx, keepAlive, 404, "not_found", "no such endpoint: " + path);
            }
        } finally {
            request.release();
        }
    }

    private void proxy(final ChannelHandlerContext ctx, final FullHttpRequest request, final String path,
        final boolean keepAlive, final long arrived) {
        final String label = path.endsWith("chat/completions") ? "chat" : "completions";
        final ByteBuf content = request.content();
        final boolean chatEndpoint = "chat".equals(label);
        final OpenAiRequest parsed = PARSERS.get();
        try {
            parsed.parse(content, chatEndpoint);
        } catch (final OpenAiRequest.BadRequest ex) {
            request.release();
            server.metrics.requests.labelValues(label, "400").inc();
            sendError(ctx, keepAlive, 400, "invalid_request_error", ex.getMessage());
            return;
        }
        busy = true;
        final RoutingContext rc = server.contexts.acquire();
        server.pods.excludeUnroutable(rc); // pods down (refused a connection, failed a health check) or without URL
        fill(rc, parsed, request);
        final int promptTokens = Math.max(0, parsed.tokenCount);
        if (parsed.tokenCount >= 0 || !server.tokenizes) {
            final RoutingPlan plan = server.router.plan(rc);
            server.metrics.routerSeconds.observe((System.nanoTime() - arrived) / 1e9);
            startCall(ctx, request, path, rc, plan, keepAlive, arrived, promptTokens, label);
            return;
        }
        try {
            server.tokenizePool.execute(() -> {
                RoutingPlan plan;
                try {
                    plan = server.router.plan(rc);
                } catch (final RuntimeException ex) {
                    plan = null;
                }
                final RoutingPlan decided = plan;
                final int tokens = rc.tokens().length();
                server.metrics.routerSeconds.observe((System.nanoTime() - arrived) / 1e9);
                ctx.executor().execute(() -> {
                    if (decided == null) {
                        server.contexts.release(rc);
                        request.release();
                        sendError(ctx, keepAlive, 500, "internal_error", "routing failed");
                        callFinished(null);
                        return;
                    }
                    startCall(ctx, request, path, rc, decided, keepAlive, arrived, Math.max(0, tokens), label);
                });
            });
        } catch (final RejectedExecutionException ex) {
            server.contexts.release(rc);
            request.release();
            server.metrics.tokenizeRejected.inc();
            server.metrics.requests.labelValues(label, "503").inc();
            sendError(ctx, keepAlive, 503, "overloaded", "the router's tokenizing queue is full; retry later");
            callFinished(null);
        }
    }

    /** Fills the request's routing inputs: model or adapter, salt, session header, and its prompt. */
    private void fill(final RoutingContext rc, final OpenAiRequest parsed, final FullHttpRequest request) {
        final RequestMeta meta = rc.request();
        final String model = parsed.model != null ? parsed.model : server.pods.defaultModel();
        final String base = model == null ? null : server.config.loraAdapters.get(model);
        if (base != null) {
            meta.model(base).lora(model);
        } else {
            meta.model(model);
        }
        if (parsed.cacheSalt != null) {
            meta.cacheSalt(parsed.cacheSalt);
        }
        final String session = request.headers().get(server.config.sessionHeader);
        if (session != null) {
            meta.header(server.config.sessionHeader, session);
        }
        if (parsed.tokenCount >= 0) {
            meta.promptTokens(parsed.tokenCount);
            rc.tokens(parsed.tokens, 0, parsed.tokenCount);
        } else if (parsed.chat) {
            meta.chat(request.content().toString(StandardCharsets.UTF_8));
        } else if (parsed.text != null) {
            meta.prompt(parsed.text);
        }
    }

    private void startCall(final ChannelHandlerContext ctx, final FullHttpRequest request, final String path,
        final RoutingContext rc, final RoutingPlan plan, final boolean keepAlive, final long arrived,
        final int promptTokens, final String label) {
        if (!ctx.channel().isActive()) {
            server.contexts.release(rc);
            request.release();
            server.metrics.clientDisconnects.inc();
            callFinished(null);
            return;
        }
        final ByteBuf body = request.content().retain();
        // The headers are heap objects: they outlive the release of the request's content (no copy).
        final var headers = request.headers();
        request.release();
        call = new ProxyCall(server, this, ctx, headers, path, body, rc, plan, keepAlive, arrived, promptTokens,
            label);
        call.start();
    }

    /**
     * The call ended (answered, failed or cancelled): the connection's next request may start. Deferred to a later
     * task of the event loop, so that this answer's last bytes are written before a waiting request's.
     *
     * @param finished the call, or null when the request ended before its call started.
     */
    void callFinished(final ProxyCall finished) {
        if (call == finished) {
            call = null;
        }
        busy = false;
        if (!pending.isEmpty()) {
            connection.executor().execute(this::drain);
        }
    }

    private void drain() {
        while (!busy && !pending.isEmpty() && connection.channel().isActive()) {
            handle(connection, pending.poll());
        }
        if (pending.size() < MAX_PIPELINED && !connection.channel().config().isAutoRead()) {
            connection.channel().config().setAutoRead(true);
        }
    }

    @Override
    public void channelReadComplete(final ChannelHandlerContext context) {
        context.flush();
    }

    @Override
    public void channelWritabilityChanged(final ChannelHandlerContext ctx) {
        if (call != null) {
            call.onClientWritable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(final ChannelHandlerContext context) {
        if (call != null) {
            call.onClientClosed();
        }
        Object waiting;
        while ((waiting = pending.poll()) != null) {
            ReferenceCountUtil.release(waiting);
        }
        context.fireChannelInactive();
    }

    @Override
    public void userEventTriggered(final ChannelHandlerContext ctx, final Object evt) {
        if (evt instanceof IdleStateEvent && call == null && !busy) {
            ctx.close();
            return;
        }
        ReferenceCountUtil.release(evt);
    }

    @Override
    public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause) {
        if (call != null) {
            call.onClientClosed();
        }
        ctx.close();
    }

    private void health(final ChannelHandlerContext ctx, final boolean keepAlive, final HttpMethod method) {
        if (method != HttpMethod.GET) {
            sendError(ctx, keepAlive, 405, "invalid_request_error", "/health takes GET");
            return;
        }
        final int routable = server.pods.routable();
        final boolean indexed = server.index.isAvailable();
        json(ctx, keepAlive, routable > 0 ? 200 : 503, g -> {
            g.writeStartObject();
            g.writeStringField("status", routable > 0 ? "ok" : "no routable pod");
            g.writeNumberField("pods_routable", routable);
            g.writeBooleanField("index_available", indexed);
            g.writeEndObject();
        });
    }

    private void models(final ChannelHandlerContext ctx, final boolean keepAlive, final HttpMethod method) {
        if (method != HttpMethod.GET) {
            sendError(ctx, keepAlive, 405, "invalid_request_error", "/v1/models takes GET");
            return;
        }
        final var models = server.pods.models();
        json(ctx, keepAlive, 200, g -> {
            g.writeStartObject();
            g.writeStringField("object", "list");
            g.writeArrayFieldStart("data");
            for (final String m : models) {
                g.writeStartObject();
                g.writeStringField("id", m);
                g.writeStringField("object", "model");
                g.writeStringField("owned_by", "kvidx");
                final String base = server.config.loraAdapters.get(m);
                if (base != null) {
                    g.writeStringField("parent", base);
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        });
    }

    private void metrics(final ChannelHandlerContext ctx, final boolean keepAlive, final HttpMethod method) {
        if (method != HttpMethod.GET) {
            sendError(ctx, keepAlive, 405, "invalid_request_error", "/metrics takes GET");
            return;
        }
        final ByteBuf buf = ctx.alloc().buffer();
        try (OutputStream out = new ByteBufOutputStream(buf)) {
            server.metrics.write(out);
        } catch (final IOException | RuntimeException ex) {
            buf.release();
            sendError(ctx, keepAlive, 500, "internal_error", "metrics: " + ex.getMessage());
            return;
        }
        send(ctx, keepAlive, 200, buf, "text/plain; version=0.0.4; charset=utf-8");
    }

    /** Writes a JSON body. */
    @FunctionalInterface
    interface Json {
        void write(JsonGenerator g) throws IOException;
    }

    private void json(final ChannelHandlerContext ctx, final boolean keepAlive, final int status, final Json body) {
        final ByteBuf buf = ctx.alloc().buffer();
        try (JsonGenerator g = RouterServer.JSON.createGenerator((OutputStream) new ByteBufOutputStream(buf))) {
            body.write(g);
        } catch (final IOException ex) {
            buf.release();
            throw new IllegalStateException(ex);
        }
        send(ctx, keepAlive, status, buf, HttpHeaderValues.APPLICATION_JSON);
    }

    /**
     * Answers with an OpenAI-shaped error: {@code {"error": {"message", "type", "code"}}}.
     *
     * @param ctx       the client connection.
     * @param keepAlive keep the connection.
     * @param status    HTTP status.
     * @param type      error type.
     * @param message   what went wrong.
     */
    void sendError(final ChannelHandlerContext ctx, final boolean keepAlive, final int status, final String type,
        final String message) {
        json(ctx, keepAlive, status, g -> {
            g.writeStartObject();
            g.writeObjectFieldStart("error");
            g.writeStringField("message", message);
            g.writeStringField("type", type);
            g.writeNumberField("code", status);
            g.writeEndObject();
            g.writeEndObject();
        });
    }

    private static void send(final ChannelHandlerContext ctx, final boolean keepAlive, final int status,
        final ByteBuf body, final CharSequence contentType) {
        final FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
            HttpResponseStatus.valueOf(status), body);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType)
            .setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
        HttpUtil.setKeepAlive(response, keepAlive);
        final ChannelFuture f = ctx.writeAndFlush(response);
        if (!keepAlive) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
    }
}
