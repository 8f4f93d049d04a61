package io.kvidx.routing;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Single dispatch: one selector picks the pod that serves the whole request.
 *
 * <p><b>Note:</b> thread safe.
 */
public final class SingleWorkflow implements Workflow {
    private final Selector selector;

    /**
     * @param selector the selector.
     */
    public SingleWorkflow(final Selector selector) {
        this.selector = selector;
    }

    @Override
    public RoutingPlan plan(final RoutingContext ctx) {
        final int slot = selector.select(ctx);
        final RoutingPlan plan = ctx.plan();
        plan.single(slot, ctx.lastFallback);
        return plan;
    }

    @Override
    public RoutingPlan replan(final RoutingContext ctx, final int failedSlot) {
        ctx.exclude(failedSlot);
        return plan(ctx);
    }

    @Override
    public List<Selector> selectors() {
        return List.of(selector);
    }

    @Override
    public Set<Slot<?>> slots() {
        return new LinkedHashSet<>(selector.profile().slots());
    }
}
