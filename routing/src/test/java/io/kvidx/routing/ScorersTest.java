package io.kvidx.routing;

import io.kvidx.routing.plugins.CacheAffinityScorer;
import io.kvidx.routing.plugins.DynamoCostScorer;
import io.kvidx.routing.plugins.KvUtilizationScorer;
import io.kvidx.routing.plugins.LeastLoadScorer;
import io.kvidx.routing.plugins.LoraAffinityScorer;
import io.kvidx.routing.plugins.RoundRobinScorer;
import io.kvidx.routing.plugins.SessionAffinityScorer;
import io.kvidx.routing.plugins.SessionKeyPreparer;
import io.kvidx.routing.plugins.SessionTable;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ScorersTest {
    private static final double EPS = 1e-9;

    private static double[] first(final double[] a, final int n) {
        return java.util.Arrays.copyOf(a, n);
    }

    private static RoutingContext withDepths(final PodRegistry registry, final int chain, final int... depths) {
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final PodDepths d = ctx.get(Slots.PREFIX_DEPTHS);
        d.chainLength(chain);
        System.arraycopy(depths, 0, d.depths(), 0, depths.length);
        return ctx;
    }

    @Test
    void shouldScoreCacheAffinityAsDepthOverChainLength() {
        final PodRegistry registry = PluginTestSupport.registry(4);
        final RoutingContext ctx = withDepths(registry, 8, 0, 2, 8, 4);
        final double[] scores = new double[256];
        new CacheAffinityScorer("c").score(ctx, scores);
        assertArrayEquals(new double[] {0, 0.25, 1.0, 0.5}, first(scores, 4), EPS);
        final RoutingContext empty = withDepths(registry, 0, 0, 0, 0, 0);
        new CacheAffinityScorer("c").score(empty, scores);
        assertArrayEquals(new double[] {0, 0, 0, 0}, first(scores, 4), EPS);
    }

    @Test
    void shouldScoreASuspectPodAsHoldingNothingUnlessTrusted() {
        final PodRegistry registry = PluginTestSupport.registry(3);
        final MapPodIndex index = new MapPodIndex();
        for (int s = 0; s < 3; s++) {
            index.pod(s, "pod-" + s, "m");
        }
        index.suspect(1, true);
        assertTrue(registry.syncWithIndex(index));
        assertTrue(registry.isSuspect(1));
        final RoutingContext ctx = withDepths(registry, 8, 8, 8, 4);
        final double[] scores = new double[256];
        final CacheAffinityScorer distrusting = new CacheAffinityScorer("c", registry);
        assertTrue(distrusting.distrustsSuspects());
        distrusting.score(ctx, scores);
        assertArrayEquals(new double[] {1.0, 0, 0.5}, first(scores, 3), EPS);
        new CacheAffinityScorer("c").score(ctx, scores);
        assertArrayEquals(new double[] {1.0, 1.0, 0.5}, first(scores, 3), EPS, "trusted: depths as they are");

        // Tier mode: a suspect pod is neither credited nor looked up.
        final long[] keys = TestKeys.keys(5, 8);
        ctx.keys(keys, 0, 8);
        final int[] lookups = new int[3];
        final TierLookup tiers = (slot, key) -> {
            lookups[slot]++;
            return TierLookup.GPU;
        };
        new CacheAffinityScorer("t", tiers, 1.0, 0.8, 0.5, 3, registry).score(ctx, scores);
        assertArrayEquals(new double[] {1.0, 0, 0.5}, first(scores, 3), EPS);
        assertArrayEquals(new int[] {8, 0, 4}, lookups);

        // The flag cleared (the daemon resynced the pod): its depth counts again.
        index.suspect(1, false);
        assertTrue(registry.syncWithIndex(index));
        distrusting.score(ctx, scores);
        assertArrayEquals(new double[] {1.0, 1.0, 0.5}, first(scores, 3), EPS);
    }

    @Test
    void shouldWeightCachedBlocksByTier() {
        final PodRegistry registry = PluginTestSupport.registry(2);
        final RoutingContext ctx = withDepths(registry, 4, 4, 4);
        final long[] keys = TestKeys.keys(1, 4);
        ctx.keys(keys, 0, 4);
        final TierLookup tiers = (slot, key) ->
            slot == 1 && (key == keys[2] || key == keys[3]) ? TierLookup.CPU
                : TierLookup.GPU;
        final double[] scores = new double[256];
        new CacheAffinityScorer("t", tiers, 1.0, 0.8, 0.5).score(ctx, scores);
        assertArrayEquals(new double[] {1.0, (1 + 1 + 0.8 + 0.8) / 4}, first(scores, 2), EPS);
        new CacheAffinityScorer("t", tiers, 1.0, 0.5, 0.5).score(ctx, scores);
        assertEquals(0.75, scores[1], EPS);
        assertThrows(IllegalArgumentException.class, () -> new CacheAffinityScorer("t", tiers, 1.5, 0.8, 0.5));
    }

    @Test
    void shouldReadTiersOfTheBestCandidatesByDepthOnly() {
        final PodRegistry registry = PluginTestSupport.registry(6);
        // Slots 1 and 2 tie on depth 6 (1 on GPU, 2 on CPU); 3 holds 5; 4 holds 2; 0 and 5 hold nothing.
        final RoutingContext ctx = withDepths(registry, 8, 0, 6, 6, 5, 2, 0);
        final long[] keys = TestKeys.keys(3, 8);
        ctx.keys(keys, 0, 8);
        final int[] lookups = new int[6];
        final TierLookup tiers = (slot, key) -> {
            lookups[slot]++;
            return slot == 2 ? TierLookup.CPU : TierLookup.GPU;
        };
        final double[] scores = new double[256];
        final CacheAffinityScorer scorer = new CacheAffinityScorer("t", tiers, 1.0, 0.8, 0.5, 2);
        scorer.score(ctx, scores);
        assertArrayEquals(new int[] {0, 6, 6, 0, 0, 0}, lookups, "only the 2 best by depth are looked up, once per "
            + "cached leading block");
        assertEquals(6 / 8.0, scores[1], EPS);
        assertEquals(6 * 0.8 / 8, scores[2], EPS);
        assertTrue(scores[1] > scores[2], "the GPU pod ranks above the CPU pod of the same depth");
        assertEquals(5 * 0.5 / 8, scores[3], EPS, "not looked up: depth x lowest weight, a lower bound");
        assertEquals(2 * 0.5 / 8, scores[4], EPS);
        assertEquals(0, scores[0], EPS);
        java.util.Arrays.fill(lookups, 0);
        new CacheAffinityScorer("t", tiers, 1.0, 0.8, 0.5, 3).score(ctx, scores);
        assertArrayEquals(new int[] {0, 6, 6, 5, 0, 0}, lookups);
        assertEquals(5 / 8.0, scores[3], EPS);
        assertThrows(IllegalArgumentException.class, () -> new CacheAffinityScorer("t", tiers, 1, 0.8, 0.5, 0));
    }

    @Test
    void shouldScoreTheLeastLoadedHighest() {
        final PodRegistry registry = PluginTestSupport.registry(3);
        registry.load(0, 4, 0, 100).load(1, 0, 2, 50).load(2, 2, 8, 0);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final double[] scores = new double[256];
        new LeastLoadScorer("q", registry, LoadMetric.QUEUE).score(ctx, scores);
        assertArrayEquals(new double[] {0, 1, 0.5}, first(scores, 3), EPS);
        new LeastLoadScorer("t", registry, LoadMetric.TOKENS).score(ctx, scores);
        assertArrayEquals(new double[] {0, 0.5, 1}, first(scores, 3), EPS);
        new LeastLoadScorer("r", registry, LoadMetric.REQUESTS).score(ctx, scores);
        assertArrayEquals(new double[] {0.75, 1, 0}, first(scores, 3), EPS);
        registry.load(0, 1, 1, 0).load(1, 1, 1, 0).load(2, 1, 1, 0);
        new LeastLoadScorer("r", registry, LoadMetric.REQUESTS).score(ctx, scores);
        assertArrayEquals(new double[] {1, 1, 1}, first(scores, 3), EPS);
    }

    @Test
    void shouldMoveRoundRobinOnePodPerDecision() {
        final PodRegistry registry = PluginTestSupport.registry(3);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final RoundRobinScorer rr = new RoundRobinScorer("rr");
        final double[] scores = new double[256];
        for (int turn = 0; turn < 6; turn++) {
            rr.score(ctx, scores);
            final double[] expected = new double[3];
            expected[turn % 3] = 1;
            assertArrayEquals(expected, first(scores, 3), EPS);
        }
    }

    @Test
    void shouldFavourTheSessionsLastPod() {
        final PodRegistry registry = PluginTestSupport.registry(3);
        final SessionAffinityScorer scorer = new SessionAffinityScorer("s", new SessionTable(64, 60_000));
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        ctx.request().header("x-session-id", "s-1");
        new SessionKeyPreparer("k", null).prepare(ctx);
        final double[] scores = new double[256];
        scorer.score(ctx, scores);
        assertArrayEquals(new double[] {0, 0, 0}, first(scores, 3), EPS);
        scorer.onPicked(ctx, 2);
        scorer.score(ctx, scores);
        assertArrayEquals(new double[] {0, 0, 1}, first(scores, 3), EPS);
    }

    @Test
    void shouldFavourPodsWithTheAdapter() {
        final PodRegistry registry = PluginTestSupport.registry(3);
        registry.loraLoaded(0, "sql").maxLoras(0, 1).maxLoras(1, 2).loraLoaded(2, "x").maxLoras(2, 1);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        ctx.request().lora("sql");
        final double[] scores = new double[256];
        new LoraAffinityScorer("l", registry, LoraAffinityScorer.ROOM_SCORE_DEFAULT).score(ctx, scores);
        assertArrayEquals(new double[] {1, 0.5, 0}, first(scores, 3), EPS);
    }

    @Test
    void shouldFavourFreeKvCache() {
        final PodRegistry registry = PluginTestSupport.registry(2);
        registry.kvUtilization(0, 0.9).kvUtilization(1, 0.25);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final double[] scores = new double[256];
        new KvUtilizationScorer("kv", registry).score(ctx, scores);
        assertArrayEquals(new double[] {0.1, 0.75}, first(scores, 2), EPS);
    }

    @Test
    void shouldComputeDynamosCost() {
        final PodRegistry registry = PluginTestSupport.registry(3);
        final DynamoCostScorer one = new DynamoCostScorer("d", registry, 16, 1.0);
        assertEquals(8 + 10, one.cost(2, 160, 0, 0), EPS);
        assertEquals((32 + 160 - 5 * 16) / 16.0 + 4 + 10, one.cost(5, 160, 32, 4), EPS);
        assertEquals(0 + 10, one.cost(12, 160, 0, 0), EPS, "a deeper cache than the prompt costs no prefill");
        registry.activeBlocks(0, 0, 0).activeBlocks(1, 0, 5).activeBlocks(2, 0, 9);
        final RoutingContext ctx = withDepths(registry, 10, 2, 5, 8);
        ctx.tokens(new int[160], 0, 160);
        final double[] scores = new double[256];
        one.score(ctx, scores);
        assertArrayEquals(new double[] {1, 1.0 / 3, 0}, first(scores, 3), EPS, "costs 18, 20, 21");
        new DynamoCostScorer("d", registry, 16, 3.0).score(ctx, scores);
        assertArrayEquals(new double[] {0, 4.0 / 9, 1}, first(scores, 3), EPS, "costs 34, 30, 25");
    }
}
