package io.kvidx.router;

import io.kvidx.routing.PodIndex;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.Responses;
import io.netty.channel.ChannelHandlerContext;

import java.io.IOException;
import java.util.Map;

/**
 * The router's own answers: {@code GET /health} (200 while a pod is routable, else 503), {@code GET /v1/models}
 * (the models served and the LoRA adapters with their parent) and {@code GET /metrics} (Prometheus text).
 *
 * <p><b>Note:</b> stateless; called on event loops.
 */
final class RouterEndpoints {
    private final PodBook pods;
    private final PodIndex index;
    private final Map<String, String> loraAdapters;
    private final RouterMetrics metrics;

    /**
     * @param pods         the pods.
     * @param index        the index (whether it is mapped now).
     * @param loraAdapters adapter name to base model.
     * @param metrics      the router's metrics.
     */
    RouterEndpoints(final PodBook pods, final PodIndex index, final Map<String, String> loraAdapters,
        final RouterMetrics metrics) {
        this.pods = pods;
        this.index = index;
        this.loraAdapters = loraAdapters;
        this.metrics = metrics;
    }

    void health(final ChannelHandlerContext ctx, final boolean keepAlive) {
        final int routable = pods.routable();
        final boolean indexed = index.isAvailable();
        Responses.health(ctx, keepAlive, routable > 0, routable > 0 ? "ok" : "no routable pod", g -> {
            g.writeNumberField("pods_routable", routable);
            g.writeBooleanField("index_available", indexed);
        });
    }

    void models(final ChannelHandlerContext ctx, final boolean keepAlive) {
        final var models = pods.models();
        Responses.json(ctx, keepAlive, 200, g -> {
            g.writeStartObject();
            g.writeStringField("object", "list");
            g.writeArrayFieldStart("data");
            for (final String m : models) {
                g.writeStartObject();
                g.writeStringField("id", m);
                g.writeStringField("object", "model");
                g.writeStringField("owned_by", "kvidx");
                final String base = loraAdapters.get(m);
                if (base != null) {
                    g.writeStringField("parent", base);
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        });
    }

    void metrics(final ChannelHandlerContext ctx, final boolean keepAlive) {
        try {
            Responses.prometheus(ctx, keepAlive, metrics::write);
        } catch (final IOException | RuntimeException ex) {
            Responses.error(ctx, keepAlive, ErrorShape.OPENAI, new HttpError(500, "internal_error",
                "metrics: " + ex.getMessage()));
        }
    }
}
