package io.kvidx.router;

import io.kvidx.routing.PodIndex;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.Responses;
import io.netty.channel.ChannelHandlerContext;

import java.io.IOException;
import java.util.Map;

/**
 * The router's own answers: {@code GET /health} (200 while a pod is routable once the {@link WarmUp} ended, else
 * 503), {@code GET /v1/models}
 * (the models served and the LoRA adapters with their parent) and {@code GET /metrics} (Prometheus text).
 *
 * <p><b>Note:</b> stateless; called on event loops.
 */
final class RouterEndpoints {
    private final PodBook pods;
    private final PodIndex index;
    private final Map<String, String> loraAdapters;
    private final RouterMetrics metrics;
    private final WarmUp warmUp;

    /**
     * @param pods         the pods.
     * @param index        the index (whether it is mapped now).
     * @param loraAdapters adapter name to base model.
     * @param metrics      the router's metrics.
     * @param warmUp       the warm-up (not ready while it runs).
     */
    RouterEndpoints(final PodBook pods, final PodIndex index, final Map<String, String> loraAdapters,
        final RouterMetrics metrics, final WarmUp warmUp) {
        this.pods = pods;
        this.index = index;
        this.loraAdapters = loraAdapters;
        this.metrics = metrics;
        this.warmUp = warmUp;
    }

    void health(final ChannelHandlerContext ctx, final boolean keepAlive) {
        final int routable = pods.routable();
        final boolean indexed = index.isAvailable();
        final boolean warm = warmUp.ready();
        final int warmUpDecisions = warmUp.decisionsMade();
        Responses.health(ctx, keepAlive, warm && routable > 0, !warm ? "warming up" : routable > 0 ? "ok"
            : "no routable pod", g -> {
                g.writeNumberField("pods_routable", routable);
                g.writeBooleanField("index_available", indexed);
                g.writeNumberField("warm_up_decisions", warmUpDecisions);
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
