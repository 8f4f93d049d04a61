package io.kvidx.routing;

import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.routing.overlay.PickOverlay;
import io.kvidx.routing.plugins.BlockKeysPreparer;
import io.kvidx.routing.plugins.CacheAffinityScorer;
import io.kvidx.routing.plugins.ConsistentHashPicker;
import io.kvidx.routing.plugins.HashKeyPreparer;
import io.kvidx.routing.plugins.LeastLoadScorer;
import io.kvidx.routing.plugins.LocalityScorer;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.PrefixQueryPreparer;
import io.kvidx.routing.plugins.SessionAffinityScorer;
import io.kvidx.routing.plugins.SessionKeyPreparer;
import io.kvidx.routing.plugins.SessionTable;
import io.kvidx.routing.plugins.SoftmaxPicker;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Counts the bytes a routing thread allocates over many decisions once warmed up: the decision path must not
 * allocate (checked with the JVM's per-thread allocation counter, no timing involved). The index here is the
 * approximate (overlay-only) mode so that no test double's allocations are counted.
 */
class AllocationFreeRoutingTest {
    private static long allocated() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
            .getThreadAllocatedBytes(Thread.currentThread().threadId());
    }

    @Test
    void shouldRouteWithoutAllocating() {
        // Half the pods are data-parallel ranks of the other half (their locations found through their pods').
        final PodRegistry registry = new PodRegistry();
        final PodTopology topology = new PodTopology();
        for (int s = 0; s < 64; s++) {
            registry.register(s, s % 2 == 0 ? "pod-" + s : "pod-" + (s - 1) + "#1", "m", PodRole.BOTH, null);
            registry.load(s, s % 3, s % 7, s * 10L);
            if (s % 2 == 0) {
                topology.put("pod-" + s, "node-" + (s % 8), "zone-" + (s % 3));
            }
        }
        final PickOverlay overlay = new PickOverlay(1 << 14, PickOverlay.APPROXIMATE_TTL_MS_DEFAULT);
        final SessionTable sessions = new SessionTable(1024, 60_000);
        final Profile p = Profile.builder("approx")
            .prepare(new BlockKeysPreparer("keys", TestKeys.KEYS, TestKeys.BLOCK))
            .prepare(new PrefixQueryPreparer("query", PrefixQueryPreparer.Mode.APPROXIMATE, overlay))
            .prepare(new SessionKeyPreparer("session", null))
            .score(new CacheAffinityScorer("cache"), 2)
            .score(new LeastLoadScorer("load", registry, LoadMetric.REQUESTS), 1)
            .score(new SessionAffinityScorer("sticky", sessions), 0.5)
            .score(LocalityScorer.nearOrigin("near", registry, topology, "node-2", "zone-2", 0.5), 0.25)
            .pick(new MaxScorePicker("max", registry)) // ties by the prompt: its fingerprint, the pods' id hashes
            .build(registry);
        final Profile hashed = Profile.builder("hash")
            .prepare(new HashKeyPreparer("hash", "x-user", HashKeyPreparer.Source.TOKENS, 64))
            .score(new LeastLoadScorer("load", registry, LoadMetric.TOKENS), 1)
            .pick(new SoftmaxPicker("soft", 0.3))
            .fallback(new ConsistentHashPicker("ring", registry, 160))
            .build(registry);
        final Router router = RoutingProfiles.single(p, registry, null);
        final Router ring = RoutingProfiles.single(hashed, registry, null);
        final RoutingContext ctx = router.newContext();
        final RoutingContext ringCtx = ring.newContext();
        final int[][] prompts = new int[16][];
        for (int i = 0; i < prompts.length; i++) {
            prompts[i] = TestKeys.tokens(i, 128);
        }
        final String[] users = {"u1", "u2", "u3"};
        int sink = 0;
        for (int i = 0; i < 20_000; i++) {
            sink += decide(router, ctx, ring, ringCtx, prompts[i & 15], users[i % 3]);
        }
        final long[] perRound = new long[5];
        for (int round = 0; round < perRound.length; round++) {
            final long calibrate = allocated();
            final long overhead = allocated() - calibrate;
            final long before = allocated();
            for (int i = 0; i < 20_000; i++) {
                sink += decide(router, ctx, ring, ringCtx, prompts[i & 15], users[i % 3]);
            }
            final long bytes = allocated() - before - overhead;
            perRound[round] = bytes;
        }
        assertTrue(sink > 0);
        assertSteadyStateAllocationFree(perRound, 20_000);
    }

    /**
     * A decision that allocates would show at least 16 bytes per decision (320 KB per round). The JVM itself
     * charges a few bytes to the thread now and then while it compiles (seen: 64-200 bytes in a round, on a busy
     * machine), so: one round must be exactly 0 and the later rounds below 0.05 bytes per decision.
     */
    static void assertSteadyStateAllocationFree(final long[] perRound, final int decisionsPerRound) {
        final String rounds = java.util.Arrays.toString(perRound);
        assertTrue(java.util.Arrays.stream(perRound).anyMatch(b -> b == 0), "no round without allocation: " + rounds);
        for (int r = 2; r < perRound.length; r++) {
            assertTrue(perRound[r] < decisionsPerRound / 20, "allocation in steady state: " + rounds);
        }
    }

    private static int decide(final Router router, final RoutingContext ctx, final Router ring,
        final RoutingContext ringCtx, final int[] prompt, final String user) {
        ctx.reset().tokens(prompt, 0, prompt.length).request().header("x-session-id", user);
        final int a = router.plan(ctx).slot();
        ringCtx.reset().tokens(prompt, 0, prompt.length).request().header("x-user", user);
        final int b = ring.plan(ringCtx).slot();
        return a + b + 2;
    }
}
