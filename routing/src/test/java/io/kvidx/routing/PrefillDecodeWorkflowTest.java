package io.kvidx.routing;

import io.kvidx.routing.plugins.BlockKeysPreparer;
import io.kvidx.routing.plugins.CacheAffinityScorer;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.PrefixQueryPreparer;
import io.kvidx.routing.plugins.RoleFilter;
import org.junit.jupiter.api.Test;

import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PrefillDecodeWorkflowTest {
    /** Decode scorer that prefers the pod right after the prefill pod: proves the decode pass sees the pick. */
    static final class NextToPrefill implements Scorer {
        @Override
        public String name() {
            return "next-to-prefill";
        }

        @Override
        public Set<Slot<?>> reads() {
            return Set.of(Slots.PREFILL_PICK);
        }

        @Override
        public void score(final RoutingContext ctx, final double[] scores) {
            final int prefill = ctx.get(Slots.PREFILL_PICK).slot();
            for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
                final int s = ctx.candidateSlot(ci);
                scores[s] = s == prefill + 1 ? 1 : 0;
            }
        }
    }

    @Test
    void shouldPickAPrefillPodThenADecodePodThatSeesIt() {
        final PodRegistry registry = new PodRegistry();
        final MapPodIndex index = new MapPodIndex();
        for (int s = 0; s < 8; s++) {
            registry.register(s, "pod-" + s, "m", s % 2 == 0 ? PodRole.PREFILL : PodRole.DECODE, null);
            index.pod(s, "pod-" + s, "m");
        }
        final int[] prompt = TestKeys.tokens(3, 64);
        index.store(4, TestKeys.chain(prompt), 16).store(2, TestKeys.chain(prompt), 3);
        final Profile prefill = Profile.builder("prefill")
            .prepare(new BlockKeysPreparer("keys", TestKeys.KEYS, TestKeys.BLOCK))
            .prepare(new PrefixQueryPreparer("query", PrefixQueryPreparer.Mode.INDEX, null))
            .filter(new RoleFilter("role", registry, PodRole.PREFILL))
            .score(new CacheAffinityScorer("cache"), 1)
            .pick(new MaxScorePicker("max"))
            .build(registry);
        final Profile decode = Profile.builder("decode")
            .input(Slots.PREFILL_PICK, Slots.BLOCK_KEYS)
            .filter(new RoleFilter("role", registry, PodRole.DECODE))
            .score(new NextToPrefill(), 1)
            .pick(new MaxScorePicker("max"))
            .build(registry);
        final PrefillDecodeWorkflow workflow = new PrefillDecodeWorkflow(new Selector(prefill, registry, index),
            new Selector(decode, registry, index));
        final Router router = new Router(workflow, registry, index);
        final RoutingContext ctx = router.newContext();
        ctx.reset().tokens(prompt, 0, prompt.length);
        final RoutingPlan plan = router.plan(ctx);
        assertEquals(RoutingPlan.Kind.PREFILL_DECODE, plan.kind());
        assertEquals(4, plan.prefillSlot(), "the prefill pod holding the deepest prefix");
        assertEquals(5, plan.decodeSlot(), "the decode pass saw the prefill pick");
        assertTrue(plan.isRoutable());
        assertFalse(plan.isFallback());
        final RoutingPlan retry = workflow.replan(ctx, 4);
        assertEquals(2, retry.prefillSlot(), "the failed prefill pod is excluded");
        assertEquals(3, retry.decodeSlot());
    }

    @Test
    void shouldReportNoPodWhenNoPrefillPodIsLeft() {
        final PodRegistry registry = new PodRegistry();
        registry.register(0, "d", null, PodRole.DECODE, null);
        final Profile prefill = Profile.builder("prefill").filter(new RoleFilter("role", registry, PodRole.PREFILL))
            .pick(new MaxScorePicker("max")).build(registry);
        final Profile decode = Profile.builder("decode").filter(new RoleFilter("role", registry, PodRole.DECODE))
            .pick(new MaxScorePicker("max")).build(registry);
        final Router router = new Router(new PrefillDecodeWorkflow(new Selector(prefill, registry, null),
            new Selector(decode, registry, null)), registry, null);
        final RoutingContext ctx = router.newContext();
        ctx.reset();
        assertFalse(router.plan(ctx).isRoutable());
        assertEquals(RoutingPlan.NO_POD, ctx.plan().prefillSlot());
    }
}
