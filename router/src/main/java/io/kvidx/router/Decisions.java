package io.kvidx.router;

import io.kvidx.routing.RequestMeta;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.OpenAiRequest;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpRequest;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * A request's routing decision: its routing context (from a pool that grows to the peak concurrency), the pods that
 * cannot be routed to now excluded, its inputs filled (model or LoRA adapter, salt, session header, prompt), and the
 * plan. A request given as token ids is decided on the event loop (microseconds; the index read is bounded and never
 * waits), unless the workflow holds a plugin that {@link io.kvidx.routing.RoutingPlugin#mayBlock() may block} (the
 * LMCache scorer's prefix lookup waits for its controller, up to its timeout): then every decision, as a text or chat
 * request whose profile tokenizes, goes to the deciding threads (the tokenizing pool: a bounded queue, 503 when
 * full) and comes back on the connection's event loop, so that no event loop waits. Such a plugin answers a replan of
 * the same request (a pod failed, on the event loop) without waiting again.
 *
 * <p><b>Note:</b> shared by all connections; thread safe (the pool is a concurrent queue, a context is used by one
 * thread at a time).
 */
final class Decisions {
    /** Where a decision goes: always called on the connection's event loop. */
    interface Decided {
        /**
         * @param rc           the request's context (released by whoever ends the request: {@link #release}).
         * @param plan         the plan.
         * @param promptTokens the prompt's tokens.
         */
        void decided(RoutingContext rc, RoutingPlan plan, int promptTokens);

        /**
         * @param error why no decision was made (its context is released).
         */
        void refused(HttpError error);
    }

    private final Router router;
    private final PodBook pods;
    private final Map<String, String> loraAdapters;
    private final String sessionHeader;
    private final boolean tokenizes;
    /** A plugin of the workflow may wait: every first decision leaves the event loop. */
    private final boolean mayBlock;
    private final Executor tokenizers;
    private final RouterMetrics metrics;
    private final ConcurrentLinkedQueue<RoutingContext> free = new ConcurrentLinkedQueue<>();

    /**
     * @param router        the router.
     * @param pods          the pods (which may be routed to now).
     * @param loraAdapters  adapter name to base model.
     * @param sessionHeader the header carrying the session id.
     * @param tokenizes     whether a profile tokenizes text (else text requests are decided without tokens).
     * @param tokenizers    the deciding threads: tokenizing, and decisions that may wait (a bounded queue).
     * @param metrics       the router's metrics.
     */
    Decisions(final Router router, final PodBook pods, final Map<String, String> loraAdapters,
        final String sessionHeader, final boolean tokenizes, final Executor tokenizers, final RouterMetrics metrics) {
        this.router = router;
        this.pods = pods;
        this.loraAdapters = loraAdapters;
        this.sessionHeader = sessionHeader;
        this.tokenizes = tokenizes;
        this.mayBlock = router.mayBlock();
        this.tokenizers = tokenizers;
        this.metrics = metrics;
    }

    /**
     * Decides where a request goes.
     *
     * @param ctx     the client's connection.
     * @param request the request (read here before this returns).
     * @param parsed  its parsed body.
     * @param arrived when it arrived ({@link System#nanoTime()}).
     * @param then    where the decision goes.
     */
    void decide(final ChannelHandlerContext ctx, final FullHttpRequest request, final OpenAiRequest parsed,
        final long arrived, final Decided then) {
        final RoutingContext rc = acquire();
        pods.excludeUnroutable(rc); // pods down (refused a connection, failed a health check) or without URL
        fill(rc, parsed, request);
        if (!mayBlock && (parsed.tokenCount >= 0 || !tokenizes)) {
            final RoutingPlan plan = router.plan(rc);
            metrics.routerSeconds.observe((System.nanoTime() - arrived) / 1e9);
            then.decided(rc, plan, Math.max(0, parsed.tokenCount));
            return;
        }
        try {
            tokenizers.execute(() -> {
                RoutingPlan plan;
                try {
                    plan = router.plan(rc);
                } catch (final RuntimeException ex) {
                    plan = null;
                }
                final RoutingPlan decided = plan;
                final int tokens = rc.tokens().length();
                metrics.routerSeconds.observe((System.nanoTime() - arrived) / 1e9);
                ctx.executor().execute(() -> {
                    if (decided == null) {
                        release(rc);
                        then.refused(new HttpError(500, "internal_error", "routing failed"));
                        return;
                    }
                    then.decided(rc, decided, Math.max(0, tokens));
                });
            });
        } catch (final RejectedExecutionException ex) {
            release(rc);
            metrics.tokenizeRejected.inc();
            then.refused(new HttpError(503, "overloaded", "the router's deciding queue (tokenizing, or a lookup "
                + "that may wait) is full; retry later"));
        }
    }

    /** Fills the request's routing inputs: model or adapter, salt, session header, and its prompt. */
    private void fill(final RoutingContext rc, final OpenAiRequest parsed, final FullHttpRequest request) {
        final RequestMeta meta = rc.request();
        final String model = parsed.model != null ? parsed.model : pods.defaultModel();
        final String base = model == null ? null : loraAdapters.get(model);
        if (base != null) {
            meta.model(base).lora(model);
        } else {
            meta.model(model);
        }
        if (parsed.cacheSalt != null) {
            meta.cacheSalt(parsed.cacheSalt);
        }
        final String session = request.headers().get(sessionHeader);
        if (session != null) {
            meta.header(sessionHeader, session);
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

    private RoutingContext acquire() {
        final RoutingContext c = free.poll();
        return (c != null ? c : router.newContext()).reset();
    }

    /**
     * Takes a request's context back once its call ended.
     *
     * @param rc the context.
     */
    void release(final RoutingContext rc) {
        free.offer(rc);
    }
}
