package io.kvidx.routing;

import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The decision layer's entry point: a {@link Workflow} over a {@link PodRegistry} and (optionally) a
 * {@link PodIndex}. Each routing thread makes one context with {@link #newContext()} and then, per request:
 * <pre>{@code
 *   int slot = router.route(ctx, tokenIds, tokenCount);          // or routeKeys(ctx, keys, n)
 *   // or: ctx.reset().tokens(ids, 0, n); ctx.request().model("m").header("x-session-id", "s1");
 *   //     RoutingPlan plan = router.plan(ctx);
 * }</pre>
 *
 * <p><b>Note:</b> thread safe; contexts are not (one per thread). Routing allocates nothing once a context has
 * seen its first requests.
 */
public final class Router {
    private static final AtomicLong SEEDS = new AtomicLong(System.nanoTime());

    private final Workflow workflow;
    private final PodRegistry registry;
    private final PodIndex index;
    private final Set<Slot<?>> slots;

    /**
     * @param workflow the workflow.
     * @param registry the pods it routes to.
     * @param index    the index (null when no profile needs it).
     */
    public Router(final Workflow workflow, final PodRegistry registry, final PodIndex index) {
        this.workflow = Objects.requireNonNull(workflow, "workflow");
        this.registry = Objects.requireNonNull(registry, "registry");
        this.index = index;
        this.slots = workflow.slots();
    }

    /**
     * @return a context for one routing thread, its slots preallocated.
     */
    public RoutingContext newContext() {
        final RoutingContext ctx = new RoutingContext(index == null ? null : index.newCursor(),
            RoutingContext.mix(SEEDS.incrementAndGet()));
        ctx.preallocate(slots);
        return ctx;
    }

    /**
     * Plans the request already in the context.
     *
     * @param ctx context with the request's slots filled.
     * @return the plan.
     */
    public RoutingPlan plan(final RoutingContext ctx) {
        return workflow.plan(ctx);
    }

    /**
     * Routes a request given by its token ids (profiles with a block-keys preparer).
     *
     * @param ctx    the thread's context.
     * @param tokens token ids.
     * @param length number of tokens.
     * @return the picked slot (the decode pod for prefill/decode), or {@link RoutingPlan#NO_POD}.
     */
    public int route(final RoutingContext ctx, final int[] tokens, final int length) {
        ctx.reset().tokens(tokens, 0, length);
        return workflow.plan(ctx).slot();
    }

    /**
     * Routes a request given by its block keys (profiles declaring {@link Slots#BLOCK_KEYS} as input).
     *
     * @param ctx    the thread's context.
     * @param keys   block keys.
     * @param length number of keys.
     * @return the picked slot, or {@link RoutingPlan#NO_POD}.
     */
    public int routeKeys(final RoutingContext ctx, final long[] keys, final int length) {
        ctx.reset().keys(keys, 0, length);
        return workflow.plan(ctx).slot();
    }

    /**
     * How many leading blocks of the request's chain ({@link Slots#BLOCK_KEYS}, as routed by {@link #routeKeys} or
     * computed by a key preparer) a pod holds according to the index, whatever the profile: e.g. to measure the
     * prefix hit rate of a round-robin router next to a cache-aware one. Allocation-free.
     *
     * @param ctx  the context of the decision.
     * @param slot a pod slot.
     * @return the depth, or -1 when there is no index or it is unavailable.
     */
    public int heldDepth(final RoutingContext ctx, final int slot) {
        if (index == null || ctx.cursor() == null || slot < 0 || !index.isAvailable()) {
            return -1;
        }
        final BlockKeys keys = ctx.get(Slots.BLOCK_KEYS);
        final long[] one = ctx.probeWords();
        one[0] = 0;
        one[1] = 0;
        one[2] = 0;
        one[3] = 0;
        one[slot >>> 6] = 1L << slot;
        try {
            ctx.cursor().prefixDepths(keys.keys(), keys.length(), one, ctx.probeDepths());
        } catch (final io.kvidx.client.index.IndexException ex) {
            return -1;
        }
        return ctx.probeDepths()[slot];
    }

    /**
     * @return the workflow.
     */
    public Workflow workflow() {
        return workflow;
    }

    /**
     * @return the registry.
     */
    public PodRegistry registry() {
        return registry;
    }

    /**
     * @return the index, or null.
     */
    public PodIndex index() {
        return index;
    }

    /**
     * @return true when a plugin of the workflow may wait ({@link RoutingPlugin#mayBlock}, e.g. a remote lookup):
     * such a router must not decide on an event loop.
     */
    public boolean mayBlock() {
        for (final Selector selector : workflow().selectors()) {
            for (final RoutingPlugin plugin : selector.profile().plugins()) {
                if (plugin.mayBlock()) {
                    return true;
                }
            }
        }
        return false;
    }
}
