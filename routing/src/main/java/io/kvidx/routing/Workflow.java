package io.kvidx.routing;

import java.util.List;
import java.util.Set;

/**
 * Composes selectors into a {@link RoutingPlan}: one for single dispatch ({@link SingleWorkflow}), two sharing the
 * context for disaggregated prefill/decode ({@link PrefillDecodeWorkflow}).
 *
 * <p><b>Note:</b> thread safe; each thread plans with its own {@link RoutingContext}.
 */
public interface Workflow {
    /**
     * Decides for the request in the context.
     *
     * @param ctx the context (request slots filled).
     * @return the context's plan, overwritten.
     */
    RoutingPlan plan(RoutingContext ctx);

    /**
     * Decides again after the plan's prefill pod failed: excludes it and re-runs the selection.
     *
     * @param ctx        the context of the failed plan.
     * @param failedSlot the pod that failed.
     * @return the new plan (check {@link RoutingPlan#isRoutable()}).
     */
    RoutingPlan replan(RoutingContext ctx, int failedSlot);

    /**
     * Decides again after the plan's serving (decode) pod failed, keeping the prefill pod of a prefill/decode plan
     * (its KV cache is already computed): excludes the failed pod and re-runs only the last selection.
     *
     * @param ctx        the context of the failed plan.
     * @param failedSlot the pod that failed.
     * @return the new plan (check {@link RoutingPlan#isRoutable()}).
     */
    default RoutingPlan replanDecode(final RoutingContext ctx, final int failedSlot) {
        return replan(ctx, failedSlot);
    }

    /**
     * @return the selectors, in the order they run.
     */
    List<Selector> selectors();

    /**
     * @return every slot the workflow's plugins use (contexts preallocate them).
     */
    Set<Slot<?>> slots();
}
