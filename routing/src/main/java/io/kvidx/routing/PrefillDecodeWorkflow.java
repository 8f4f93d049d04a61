package io.kvidx.routing;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Disaggregated serving: the prefill selector picks the pod that computes the prompt's KV cache, then the decode
 * selector picks the pod that generates, in the same context: it sees every slot the prefill pass wrote (block
 * keys, prefix depths, ...) and the prefill pick in {@link Slots#PREFILL_PICK}.
 *
 * <p>Built only if the decode profile's inputs are covered: each must be a request input, a slot the prefill
 * profile writes, or {@link Slots#PREFILL_PICK}; otherwise a {@link ProfileValidationException} names the slot.
 *
 * <p><b>Note:</b> thread safe.
 */
public final class PrefillDecodeWorkflow implements Workflow {
    private final Selector prefill;
    private final Selector decode;

    /**
     * @param prefill selector over prefill-capable pods.
     * @param decode  selector over decode-capable pods.
     */
    public PrefillDecodeWorkflow(final Selector prefill, final Selector decode) {
        this.prefill = prefill;
        this.decode = decode;
        final Set<Slot<?>> available = new LinkedHashSet<>(prefill.profile().inputs());
        available.addAll(prefill.profile().written());
        available.add(Slots.PREFILL_PICK);
        final List<ProfileValidationException.Problem> problems = new ArrayList<>();
        for (final Slot<?> in : decode.profile().inputs()) {
            if (!available.contains(in)) {
                problems.add(new ProfileValidationException.Problem(ProfileValidationException.Kind.MISSING_WRITER,
                    decode.profile().name(), Profile.REQUEST_WRITER, in.name(),
                    "the decode profile expects this input but neither the request nor the prefill profile '"
                        + prefill.profile().name() + "' writes it"));
            }
        }
        if (!problems.isEmpty()) {
            throw new ProfileValidationException(problems);
        }
    }

    @Override
    public RoutingPlan plan(final RoutingContext ctx) {
        final RoutingPlan plan = ctx.plan();
        final int p = prefill.select(ctx);
        final boolean prefillFallback = ctx.lastFallback;
        ctx.get(Slots.PREFILL_PICK).slot(p);
        if (p == RoutingPlan.NO_POD) {
            plan.prefillDecode(RoutingPlan.NO_POD, RoutingPlan.NO_POD, prefillFallback);
            return plan;
        }
        final int d = decode.select(ctx);
        plan.prefillDecode(p, d, prefillFallback || ctx.lastFallback);
        return plan;
    }

    @Override
    public RoutingPlan replan(final RoutingContext ctx, final int failedSlot) {
        ctx.exclude(failedSlot);
        return plan(ctx);
    }

    @Override
    public RoutingPlan replanDecode(final RoutingContext ctx, final int failedSlot) {
        ctx.exclude(failedSlot);
        final RoutingPlan plan = ctx.plan();
        final int p = plan.prefillSlot();
        final int d = decode.select(ctx);
        plan.prefillDecode(p, d, plan.isFallback() || ctx.lastFallback);
        return plan;
    }

    @Override
    public List<Selector> selectors() {
        return List.of(prefill, decode);
    }

    @Override
    public Set<Slot<?>> slots() {
        final Set<Slot<?>> all = new LinkedHashSet<>(prefill.profile().slots());
        all.addAll(decode.profile().slots());
        all.add(Slots.PREFILL_PICK);
        return all;
    }
}
