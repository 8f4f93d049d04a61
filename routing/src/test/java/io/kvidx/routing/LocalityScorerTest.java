package io.kvidx.routing;

import io.kvidx.routing.plugins.LocalityScorer;
import io.kvidx.routing.yaml.YamlRouting;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The locality scorer: the same node scores 1, the same zone {@code zone-score}, anything else or an unknown
 * location 0, relative to the prefill pick (decode profiles) or a fixed origin; built from YAML inside a
 * prefill/decode workflow, the decode lands next to its prefill.
 */
class LocalityScorerTest {
    private static final double EPS = 1e-9;

    private static PodTopology topology() {
        return new PodTopology().put("pod-0", "node-a", "zone-1").put("pod-1", "node-a", "zone-1")
            .put("pod-2", "node-b", "zone-1").put("pod-3", "node-c", "zone-2");
    }

    @Test
    void shouldPreferThePrefillsNodeThenItsZone() {
        final PodRegistry registry = PluginTestSupport.registry(5);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final double[] scores = new double[256];
        final LocalityScorer scorer = LocalityScorer.nearPrefill("near", registry, topology(), 0.5);
        assertEquals(java.util.Set.of(Slots.PREFILL_PICK), scorer.reads());

        ctx.get(Slots.PREFILL_PICK).slot(0);
        scorer.score(ctx, scores);
        assertArrayEquals(new double[] {1, 1, 0.5, 0, 0}, Arrays.copyOf(scores, 5), EPS, "pod-4 has no location");

        ctx.get(Slots.PREFILL_PICK).slot(3);
        scorer.score(ctx, scores);
        assertArrayEquals(new double[] {0, 0, 0, 1, 0}, Arrays.copyOf(scores, 5), EPS);

        ctx.get(Slots.PREFILL_PICK).slot(RoutingPlan.NO_POD);
        scorer.score(ctx, scores);
        assertArrayEquals(new double[] {0, 0, 0, 0, 0}, Arrays.copyOf(scores, 5), EPS, "no prefill: neutral");
    }

    @Test
    void shouldPreferAFixedOrigin() {
        final PodRegistry registry = PluginTestSupport.registry(4);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final double[] scores = new double[256];
        LocalityScorer.nearOrigin("o", registry, topology(), "node-b", "zone-1", 0.25).score(ctx, scores);
        assertArrayEquals(new double[] {0.25, 0.25, 1, 0}, Arrays.copyOf(scores, 4), EPS);
        LocalityScorer.nearOrigin("o", registry, topology(), null, "zone-2", 0.25).score(ctx, scores);
        assertArrayEquals(new double[] {0, 0, 0, 0.25}, Arrays.copyOf(scores, 4), EPS, "zone only");
        assertThrows(IllegalArgumentException.class,
            () -> LocalityScorer.nearOrigin("o", registry, topology(), null, null, 0.5));
        assertThrows(IllegalArgumentException.class,
            () -> LocalityScorer.nearPrefill("o", registry, topology(), 1.5));
    }

    @Test
    void shouldGiveRankPodsTheirPodsLocationAndFollowASnapshot() {
        final PodTopology t = topology();
        assertEquals(new PodTopology.Location("node-a", "zone-1"), t.location("pod-0#3"));
        assertEquals(new PodTopology.Location("node-a", "zone-1"), t.location("pod-0#3"), "again, from the cache");
        assertNull(t.location("pod-7#1"), "a rank of a pod with no location");
        t.replaceAll(Map.of("pod-9", new PodTopology.Location("node-z", null)));
        assertNull(t.location("pod-0"));
        assertNull(t.location("pod-0#3"), "a write forgets the cached rank locations");
        assertEquals("node-z", t.location("pod-9").node());
        assertEquals("node-z", t.location("pod-9#2").node());
        t.put("pod-7", "node-7", null);
        assertEquals("node-7", t.location("pod-7#1").node(), "a rank found nowhere before is found after a write");
        assertEquals(2, t.size());
    }

    @Test
    void shouldLandTheDecodeNextToItsPrefillFromYaml() {
        final PodRegistry registry = new PodRegistry();
        registry.register(0, "prefill-a", "m", PodRole.PREFILL, null);
        registry.register(1, "decode-far", "m", PodRole.DECODE, null);
        registry.register(2, "decode-zone", "m", PodRole.DECODE, null);
        registry.register(3, "decode-near", "m", PodRole.DECODE, null);
        final YamlRouting.Environment env = new YamlRouting.Environment().registry(registry);
        env.topology().put("prefill-a", "node-a", "zone-1").put("decode-far", "node-x", "zone-9")
            .put("decode-zone", "node-b", "zone-1").put("decode-near", "node-a", "zone-1");
        final Router router = YamlRouting.parse("""
            profiles:
              prefill:
                filter: [{type: role, role: prefill}]
                score: [{type: least-load}]
                pick: max-score
              decode:
                inputs: [prefill-pick]
                filter: [{type: role, role: decode}]
                score: [{type: locality, weight: 1, zone-score: 0.5}]
                pick: max-score
            workflow: {type: prefill-decode, prefill: prefill, decode: decode}
            """, env).router();
        final RoutingContext ctx = router.newContext();
        final RoutingPlan plan = router.plan(ctx.reset());
        assertEquals(0, plan.prefillSlot());
        assertEquals(3, plan.slot(), "the decode pod on the prefill's node");

        env.topology().put("decode-near", null, null);
        assertEquals(2, router.plan(router.newContext().reset()).slot(), "then the one in its zone");

        final ProfileValidationException bad = assertThrows(ProfileValidationException.class,
            () -> YamlRouting.parse("""
            profiles:
              p:
                score: [{type: locality, reference: nearby}]
                pick: max-score
            """, env));
        assertTrue(bad.getMessage().contains("reference must be prefill or origin"), bad.getMessage());
    }
}
