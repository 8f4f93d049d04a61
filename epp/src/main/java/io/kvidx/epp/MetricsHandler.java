package io.kvidx.epp;

import io.kvidx.routing.PodIndex;
import io.kvidx.serve.BodyLimit;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.HttpRequestHandler;
import io.kvidx.serve.Responses;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpUtil;

import java.io.IOException;
import java.util.function.IntSupplier;

/**
 * The picker's HTTP door on the serving layer: {@code GET /metrics} (Prometheus text) and {@code GET /health} for
 * Kubernetes probes (200 while a pod is ready, else 503, with whether the index is mapped).
 *
 * <p><b>Note:</b> stateless and shared by all connections; called on event loops.
 */
@ChannelHandler.Sharable
final class MetricsHandler extends HttpRequestHandler {
    private final EppMetrics metrics;
    private final PodIndex index;
    private final IntSupplier ready;

    MetricsHandler(final EppMetrics metrics, final PodIndex index, final IntSupplier ready) {
        this.metrics = metrics;
        this.index = index;
        this.ready = ready;
    }

    @Override
    protected void tooLarge(final ChannelHandlerContext ctx, final BodyLimit.TooLarge tooLarge) {
        Responses.error(ctx, false, ErrorShape.OPENAI, new HttpError(413, "invalid_request_error",
            "request body exceeds " + tooLarge.maxBodyBytes() + " bytes"));
    }

    @Override
    protected void request(final ChannelHandlerContext ctx, final FullHttpRequest request) {
        final boolean keepAlive = HttpUtil.isKeepAlive(request);
        final String uri = request.uri();
        final String path = uri.indexOf('?') >= 0 ? uri.substring(0, uri.indexOf('?')) : uri;
        if (!HttpMethod.GET.equals(request.method())) {
            Responses.error(ctx, keepAlive, ErrorShape.OPENAI, new HttpError(405, "invalid_request_error",
                path + " takes GET"));
        } else if ("/health".equals(path)) {
            final int n = ready.getAsInt();
            final boolean indexed = index.isAvailable();
            Responses.health(ctx, keepAlive, n > 0, n > 0 ? "ok" : "no ready pod", g -> {
                g.writeNumberField("pods_ready", n);
                g.writeBooleanField("index_available", indexed);
            });
        } else if ("/metrics".equals(path)) {
            try {
                Responses.prometheus(ctx, keepAlive, metrics::write);
            } catch (final IOException | RuntimeException ex) {
                Responses.error(ctx, keepAlive, ErrorShape.OPENAI, new HttpError(500, "internal_error",
                    "metrics: " + ex.getMessage()));
            }
        } else {
            Responses.error(ctx, keepAlive, ErrorShape.OPENAI, new HttpError(404, "invalid_request_error",
                "no such path: " + path + " (/health, /metrics)"));
        }
    }
}
