package io.kvidx.epp;

import io.kvidx.routing.RequestMeta;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.serve.OpenAiRequest;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * A request's pick, made as {@code kvidx router} makes its decision (its {@code Decisions}): a routing context from
 * a pool, the pods without an endpoint (or outside the proxy's subset) excluded, the inputs filled the same way
 * (model or LoRA adapter, salt, session header, prompt as ids, text or chat) and the router's plan. A token-id
 * request is decided on the calling thread (microseconds, the index read never waits); a text or chat request whose
 * profile tokenizes goes to the tokenizing threads (a bounded queue: refused when full).
 *
 * <p><b>Note:</b> thread safe (the pool is a concurrent queue; a context is used by one thread at a time).
 */
final class Picker {
    /** The answer of one pick. */
    record Pick(String primary, String prefill, long predictedTokens, boolean fallback) {
    }

    /** Where a pick goes (on the tokenizing thread, or the caller's). */
    interface Picked {
        /**
         * @param pick the pick, or null when no endpoint can serve.
         */
        void picked(Pick pick);

        /**
         * @param status  HTTP status for the immediate response (503 when overloaded, 500 when routing failed).
         * @param message why.
         */
        void refused(int status, String message);
    }

    private final Router router;
    private final EndpointBook book;
    private final Map<String, String> loraAdapters;
    private final String sessionHeader;
    private final boolean tokenizes;
    private final boolean mayBlock;
    private final Executor tokenizers;
    private final int blockSize;
    private final ConcurrentLinkedQueue<RoutingContext> free = new ConcurrentLinkedQueue<>();

    Picker(final Router router, final EndpointBook book, final Map<String, String> loraAdapters,
        final String sessionHeader, final boolean tokenizes, final Executor tokenizers, final int blockSize) {
        this.router = router;
        this.book = book;
        this.loraAdapters = loraAdapters;
        this.sessionHeader = sessionHeader;
        this.tokenizes = tokenizes;
        this.mayBlock = router.mayBlock();
        this.tokenizers = tokenizers;
        this.blockSize = blockSize;
    }

    /**
     * Picks an endpoint.
     *
     * @param parsed  the parsed body (read before this returns when decided here), or null for a request without one.
     * @param body    the body as text, for a chat (the chat template reads the whole request).
     * @param session the session header's value, or null.
     * @param subset  the endpoints the proxy allows, or null for all.
     * @param then    where the pick goes.
     */
    void pick(final OpenAiRequest parsed, final String body, final String session, final Set<String> subset,
        final Picked then) {
        final RoutingContext rc = acquire();
        if (book.exclude(rc, subset) == 0) {
            release(rc);
            then.picked(null);
            return;
        }
        fill(rc, parsed, body, session);
        // Token ids are decided here, on a gRPC executor thread, unless a plugin may wait (a remote lookup): then on
        // the bounded deciding pool, as text is, so that a slow lookup does not hold the executor's threads.
        if (!mayBlock && (parsed == null || parsed.tokenCount >= 0 || !tokenizes)) {
            final Pick p = plan(rc);
            release(rc);
            then.picked(p);
            return;
        }
        try {
            tokenizers.execute(() -> {
                final Pick p;
                try {
                    p = plan(rc);
                } catch (final RuntimeException ex) {
                    release(rc);
                    then.refused(500, "routing failed: " + ex.getMessage());
                    return;
                }
                release(rc);
                then.picked(p);
            });
        } catch (final RejectedExecutionException ex) {
            release(rc);
            then.refused(503, "the picker's tokenizing queue is full; retry later");
        }
    }

    private Pick plan(final RoutingContext rc) {
        final RoutingPlan plan = router.plan(rc);
        if (!plan.isRoutable()) {
            return null;
        }
        final int slot = plan.decodeSlot();
        final String primary = book.endpoint(slot);
        if (primary == null) {
            return null;
        }
        final String prefill = plan.kind() == RoutingPlan.Kind.PREFILL_DECODE ? book.endpoint(plan.prefillSlot())
            : null;
        // As kvidx router's x-kvidx-predicted-tokens: never the block holding the prompt's last token.
        final long blocks = Math.max(0, router.heldDepth(rc, plan.kind() == RoutingPlan.Kind.PREFILL_DECODE
            ? plan.prefillSlot() : slot));
        final int tokens = rc.tokens().length();
        final long hittable = tokens > 0 ? (tokens - 1) / blockSize : blocks;
        return new Pick(primary, prefill, Math.min(blocks, hittable) * blockSize, plan.isFallback());
    }

    private void fill(final RoutingContext rc, final OpenAiRequest parsed, final String body, final String session) {
        final RequestMeta meta = rc.request();
        final String model = parsed != null && parsed.model != null ? parsed.model : book.defaultModel();
        final String base = model == null ? null : loraAdapters.get(model);
        if (base != null) {
            meta.model(base).lora(model);
        } else {
            meta.model(model);
        }
        if (session != null) {
            meta.header(sessionHeader, session);
        }
        if (parsed == null) {
            return; // a request without a body: no prompt
        }
        if (parsed.cacheSalt != null) {
            meta.cacheSalt(parsed.cacheSalt);
        }
        if (parsed.tokenCount >= 0) {
            meta.promptTokens(parsed.tokenCount);
            rc.tokens(parsed.tokens, 0, parsed.tokenCount);
        } else if (parsed.chat) {
            meta.chat(body);
        } else if (parsed.text != null) {
            meta.prompt(parsed.text);
        }
    }

    private RoutingContext acquire() {
        final RoutingContext c = free.poll();
        return (c != null ? c : router.newContext()).reset();
    }

    private void release(final RoutingContext rc) {
        free.offer(rc);
    }
}
