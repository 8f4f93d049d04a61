package io.kvidx.routing;

import io.kvidx.routing.plugins.ConsistentHashPicker;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.SessionTable;
import io.kvidx.routing.plugins.SoftmaxPicker;
import io.kvidx.routing.plugins.StickySessionPicker;
import io.kvidx.routing.plugins.WeightedRandomPicker;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PickersTest {
    private static final int N = 20_000;

    private static int[] histogram(final Picker picker, final RoutingContext ctx, final double[] totals,
        final int pods) {
        final int[] h = new int[pods];
        for (int i = 0; i < N; i++) {
            h[picker.pick(ctx, totals)]++;
        }
        return h;
    }

    @Test
    void shouldPickTheMaximumAndBreakTiesAtRandom() {
        final PodRegistry registry = PluginTestSupport.registry(4);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final double[] totals = new double[256];
        totals[0] = 0.5;
        totals[1] = 0.9;
        totals[2] = 0.9;
        totals[3] = 0.1;
        final int[] h = histogram(new MaxScorePicker("m"), ctx, totals, 4);
        assertEquals(0, h[0] + h[3]);
        assertTrue(Math.abs(h[1] - h[2]) < N / 20, "ties split evenly: " + h[1] + " vs " + h[2]);
    }

    @Test
    void shouldBreakTiesByThePromptAlikeOnReplicasWhoseSlotsDiffer() {
        // Two replicas know the same four pods in different slots (each daemon numbers its pods as they came).
        final String[] ids = {"vllm-a", "vllm-b", "vllm-c", "vllm-d"};
        final PodRegistry one = new PodRegistry();
        final PodRegistry two = new PodRegistry();
        for (int i = 0; i < 4; i++) {
            one.register(i, ids[i], "m", PodRole.BOTH, null);
            two.register(7 - i, ids[i], "m", PodRole.BOTH, null);
        }
        final double[] t1 = new double[256];
        final double[] t2 = new double[256];
        t1[0] = t1[1] = t1[2] = 0.9; // a, b and c tie; d scores less
        t1[3] = 0.2;
        t2[7] = t2[6] = t2[5] = 0.9;
        t2[4] = 0.2;
        final MaxScorePicker p1 = new MaxScorePicker("m", one);
        final MaxScorePicker p2 = new MaxScorePicker("m", two);
        final int[] h = new int[3];
        final java.util.SplittableRandom random = new java.util.SplittableRandom(3);
        for (int r = 0; r < 3_000; r++) {
            final int[] prompt = new int[1 + random.nextInt(300)];
            for (int i = 0; i < prompt.length; i++) {
                prompt[i] = random.nextInt(150_000);
            }
            final RoutingContext c1 = PluginTestSupport.context(one, null);
            c1.tokens(prompt, 0, prompt.length);
            final RoutingContext c2 = PluginTestSupport.context(two, null);
            c2.tokens(prompt, 0, prompt.length);
            final int s1 = p1.pick(c1, t1);
            final int s2 = p2.pick(c2, t2);
            assertEquals(one.podId(s1), two.podId(s2), "the same pod for the same prompt");
            assertEquals(s1, p1.pick(c1, t1), "and again for its repeat");
            h[s1]++;
        }
        for (final int n : h) {
            assertTrue(n > 800 && n < 1_200, "different prompts spread over the tied pods: " + Arrays.toString(h));
        }
        // Keys, when the request has them, are what the fingerprint reads.
        final RoutingContext k1 = PluginTestSupport.context(one, null);
        k1.keys(new long[] {11, 12, 13}, 0, 3);
        final RoutingContext k2 = PluginTestSupport.context(one, null);
        k2.keys(new long[] {99, 12, 13}, 0, 3);
        assertEquals(k1.requestFingerprint(), k2.requestFingerprint(), "the last key chains over the prefix");
        k2.keys(new long[] {11, 12, 14}, 0, 3);
        assertTrue(k1.requestFingerprint() != k2.requestFingerprint());
        assertEquals(0, PluginTestSupport.context(one, null).requestFingerprint(), "no prompt, no fingerprint");
    }

    @Test
    void shouldPickInProportionToTheTotals() {
        final PodRegistry registry = PluginTestSupport.registry(3);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final double[] totals = new double[256];
        totals[0] = 1;
        totals[1] = 3;
        totals[2] = 0;
        final int[] h = histogram(new WeightedRandomPicker("w"), ctx, totals, 3);
        assertEquals(0, h[2]);
        assertEquals(0.75, h[1] / (double) N, 0.02);
        totals[0] = 0;
        totals[1] = 0;
        final int[] u = histogram(new WeightedRandomPicker("w"), ctx, totals, 3);
        assertTrue(u[0] > N / 4 && u[1] > N / 4 && u[2] > N / 4, "uniform when all totals are 0");
    }

    @Test
    void shouldSharpenWithALowerTemperature() {
        final PodRegistry registry = PluginTestSupport.registry(2);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final double[] totals = new double[256];
        totals[0] = 1.0;
        totals[1] = 0.0;
        final int[] hot = histogram(new SoftmaxPicker("hot", 10), ctx, totals, 2);
        final int[] cold = histogram(new SoftmaxPicker("cold", 0.1), ctx, totals, 2);
        final double pHot = 1 / (1 + Math.exp(-0.1));
        final double pCold = 1 / (1 + Math.exp(-10));
        assertEquals(pHot, hot[0] / (double) N, 0.02);
        assertEquals(pCold, cold[0] / (double) N, 0.01);
    }

    @Test
    void shouldHashConsistentlyAndMoveFewKeysWhenAPodLeaves() {
        final PodRegistry registry = PluginTestSupport.registry(10);
        final ConsistentHashPicker picker = new ConsistentHashPicker("ch", registry,
            ConsistentHashPicker.VIRTUAL_NODES_DEFAULT);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final double[] totals = new double[256];
        final int keys = 5000;
        final int[] before = new int[keys];
        final int[] load = new int[10];
        for (int k = 0; k < keys; k++) {
            ctx.get(Slots.HASH_KEY).set(RoutingContext.mix(k));
            before[k] = picker.pick(ctx, totals);
            load[before[k]]++;
            assertEquals(before[k], picker.pick(ctx, totals), "same key, same pod");
        }
        for (final int l : load) {
            assertTrue(l > keys / 10 / 2 && l < keys / 10 * 2, "virtual nodes spread keys: " + l);
        }
        registry.unregister(4);
        final RoutingContext after = PluginTestSupport.context(registry, null);
        int moved = 0;
        for (int k = 0; k < keys; k++) {
            after.get(Slots.HASH_KEY).set(RoutingContext.mix(k));
            final int slot = picker.pick(after, totals);
            if (before[k] != 4) {
                moved += slot != before[k] ? 1 : 0;
            } else {
                assertTrue(slot != 4);
            }
        }
        assertEquals(0, moved, "keys of the remaining pods stay put");
    }

    @Test
    void shouldPreferTheLessLoadedOfTwo() {
        final PodRegistry registry = PluginTestSupport.registry(2);
        registry.load(0, 5, 5, 0).load(1, 0, 1, 0);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final int[] h = histogram(new PowerOfTwoPicker("p2c", registry), ctx, new double[256], 2);
        assertEquals(N, h[1]);
        final PodRegistry many = PluginTestSupport.registry(8);
        many.load(7, 100, 0, 0);
        final RoutingContext c8 = PluginTestSupport.context(many, null);
        final int[] h8 = histogram(new PowerOfTwoPicker("p2c", many), c8, new double[256], 8);
        assertEquals(0, h8[7], "the busiest pod never wins a pair");
        for (int s = 0; s < 7; s++) {
            assertTrue(h8[s] > N / 7 / 2, "others share: " + h8[s]);
        }
    }

    @Test
    void shouldStickASessionToItsPodWhileItIsACandidate() {
        final PodRegistry registry = PluginTestSupport.registry(4);
        final StickySessionPicker picker = new StickySessionPicker("sticky", new SessionTable(64, 60_000),
            new MaxScorePicker("max"));
        final double[] totals = new double[256];
        totals[1] = 1;
        RoutingContext ctx = PluginTestSupport.context(registry, null);
        ctx.get(Slots.SESSION_KEY).set(77);
        final int first = picker.pick(ctx, totals);
        assertEquals(1, first);
        picker.onPicked(ctx, first);
        totals[1] = 0;
        totals[3] = 1;
        assertEquals(1, picker.pick(ctx, totals), "sticks although another pod scores higher");
        ctx = PluginTestSupport.context(registry, null);
        ctx.get(Slots.SESSION_KEY).set(77);
        ctx.removeCandidate(1);
        assertEquals(3, picker.pick(ctx, totals), "moves when its pod is filtered out");
    }
}
