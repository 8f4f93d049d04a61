package io.kvidx.routing;

import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.routing.overlay.PickOverlay;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SelectorTest {
    private final PodRegistry registry = new PodRegistry();
    private final MapPodIndex index = new MapPodIndex();

    @BeforeEach
    void fleet() {
        for (int s = 0; s < 8; s++) {
            registry.register(s, "pod-" + s, "m", PodRole.BOTH, null);
            index.pod(s, "pod-" + s, "m");
        }
    }

    @Test
    void shouldRouteToThePodHoldingTheDeepestPrefix() {
        final int[] prompt = TestKeys.tokens(1, 64);
        final long[] chain = TestKeys.chain(prompt);
        index.store(5, chain, chain.length).store(2, chain, 4);
        final Router router = RoutingProfiles.single(
            RoutingProfiles.cacheAware("ca", index, registry, TestKeys.KEYS, TestKeys.BLOCK, null), registry, index);
        final RoutingContext ctx = router.newContext();
        for (int i = 0; i < 10; i++) {
            assertEquals(5, router.route(ctx, prompt, prompt.length));
        }
        assertFalse(ctx.plan().isFallback());
    }

    @Test
    void shouldPreferTheLessLoadedPodAtEqualDepth() {
        final long[] chain = TestKeys.keys(1, 16);
        index.store(3, chain, 16).store(6, chain, 16);
        registry.load(3, 4, 10, 0).load(6, 0, 1, 0);
        final Router router = RoutingProfiles.single(
            RoutingProfiles.cacheAware("ca", index, registry, null, TestKeys.BLOCK, null), registry, index);
        final RoutingContext ctx = router.newContext();
        assertEquals(6, router.routeKeys(ctx, chain, chain.length));
    }

    @Test
    void shouldSkipDeadAndExcludedPods() {
        final long[] chain = TestKeys.keys(2, 8);
        index.store(1, chain, 8).store(4, chain, 6).store(7, chain, 2);
        index.down(1);
        final Router router = RoutingProfiles.single(
            RoutingProfiles.cacheAware("ca", index, registry, null, TestKeys.BLOCK, null), registry, index);
        final RoutingContext ctx = router.newContext();
        assertEquals(4, router.routeKeys(ctx, chain, chain.length));
        ctx.reset().keys(chain, 0, chain.length);
        ctx.exclude(4);
        assertEquals(7, router.plan(ctx).slot());
    }

    @Test
    void shouldFallBackWhileTheIndexIsMissingAndComeBack() {
        final long[] chain = TestKeys.keys(3, 8);
        index.store(2, chain, 8);
        final Profile p = RoutingProfiles.cacheAware("ca", index, registry, null, TestKeys.BLOCK, null);
        final Selector selector = new Selector(p, registry, index);
        final Router router = new Router(new SingleWorkflow(selector), registry, index);
        final RoutingContext ctx = router.newContext();
        index.available = false;
        final Set<Integer> picks = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            final int slot = router.routeKeys(ctx, chain, chain.length);
            assertTrue(slot >= 0 && slot < 8);
            assertTrue(ctx.plan().isFallback());
            picks.add(slot);
        }
        assertTrue(picks.size() > 4, "power-of-two spreads over pods: " + picks);
        assertEquals(200, selector.counters().fallbacks());
        assertEquals(0, index.queries, "no query while the index is missing");
        index.available = true;
        assertEquals(2, router.routeKeys(ctx, chain, chain.length));
        assertFalse(ctx.plan().isFallback());
        assertEquals(200, selector.counters().fallbacks());
    }

    @Test
    void shouldFallBackWhenAQueryFails() {
        final long[] chain = TestKeys.keys(4, 8);
        index.store(2, chain, 8);
        final Selector selector = new Selector(
            RoutingProfiles.cacheAware("ca", index, registry, null, TestKeys.BLOCK, null), registry, index);
        final Router router = new Router(new SingleWorkflow(selector), registry, index);
        final RoutingContext ctx = router.newContext();
        index.failQueries = true;
        assertNotEquals(RoutingPlan.NO_POD, router.routeKeys(ctx, chain, chain.length));
        assertTrue(ctx.plan().isFallback());
        assertEquals(1, selector.counters().indexErrors());
        assertEquals(1, selector.counters().fallbacks());
    }

    @Test
    void shouldReturnNoPodWhenFiltersLeaveNone() {
        final Router router = RoutingProfiles.single(RoutingProfiles.roundRobin("rr", index, registry, false),
            registry, index);
        for (int s = 0; s < 8; s++) {
            index.down(s);
        }
        final RoutingContext ctx = router.newContext();
        assertEquals(RoutingPlan.NO_POD, router.route(ctx, new int[0], 0));
        assertFalse(ctx.plan().isRoutable());
    }

    @Test
    void shouldRoundRobinOverCandidates() {
        final Router router = RoutingProfiles.single(RoutingProfiles.roundRobin("rr", index, registry, false),
            registry, index);
        final RoutingContext ctx = router.newContext();
        final int[] counts = new int[8];
        for (int i = 0; i < 80; i++) {
            counts[router.route(ctx, new int[0], 0)]++;
        }
        for (int s = 0; s < 8; s++) {
            assertEquals(10, counts[s]);
        }
    }

    @Test
    void shouldStickABurstOfANewPrefixWithTheOverlay() {
        final PickOverlay overlay = new PickOverlay(1024, 2_000);
        final Router router = RoutingProfiles.single(
            RoutingProfiles.cacheAware("ca", index, registry, TestKeys.KEYS, TestKeys.BLOCK, overlay), registry,
            index);
        final RoutingContext ctx = router.newContext();
        final int[] prompt = TestKeys.tokens(9, 128);
        final int first = router.route(ctx, prompt, prompt.length);
        for (int i = 0; i < 20; i++) {
            registry.requestStarted(first, 1);
            assertEquals(first, router.route(ctx, prompt, prompt.length), "burst sticks before any event");
        }
        final Router plain = RoutingProfiles.single(
            RoutingProfiles.cacheAware("plain", index, registry, TestKeys.KEYS, TestKeys.BLOCK, null), registry,
            index);
        final RoutingContext ctx2 = plain.newContext();
        assertNotEquals(first, plain.route(ctx2, prompt, prompt.length), "without overlay, load wins");
    }

    @Test
    void shouldRouteByItsOwnPicksWithNoEventStream() {
        final PickOverlay overlay = new PickOverlay(4096, PickOverlay.APPROXIMATE_TTL_MS_DEFAULT);
        final Profile approx = Profile.builder("approx")
            .prepare(new io.kvidx.routing.plugins.BlockKeysPreparer("keys", TestKeys.KEYS, TestKeys.BLOCK))
            .prepare(new io.kvidx.routing.plugins.PrefixQueryPreparer("query",
                io.kvidx.routing.plugins.PrefixQueryPreparer.Mode.APPROXIMATE, overlay))
            .score(new io.kvidx.routing.plugins.CacheAffinityScorer("cache"), 2)
            .score(new io.kvidx.routing.plugins.LeastLoadScorer("load", registry,
                io.kvidx.routing.LoadMetric.REQUESTS), 1)
            .pick(new io.kvidx.routing.plugins.MaxScorePicker("max"))
            .build(registry);
        assertFalse(approx.needsIndex());
        final Router router = RoutingProfiles.single(approx, registry, null);
        final RoutingContext ctx = router.newContext();
        final int[] system = TestKeys.tokens(21, 256);
        final int home = router.route(ctx, system, system.length);
        registry.requestStarted(home, 1);
        for (int user = 0; user < 10; user++) {
            final int[] prompt = TestKeys.tokens(21, 256, 100 + user, 320);
            assertEquals(home, router.route(ctx, prompt, prompt.length), "shared system prompt follows its pod");
            assertFalse(ctx.plan().isFallback());
        }
        final int[] other = TestKeys.tokens(99, 256);
        assertNotEquals(home, router.route(ctx, other, other.length), "a new prefix goes to an idle pod");
    }

    /**
     * A slot freed and given to another pod: the decision sees another pod table version, so the registry
     * re-learns the slot before the pick, and the new pod's blocks are never credited to the former pod's name.
     */
    @Test
    void shouldReLearnAChangedSlotBeforePicking() {
        final PodRegistry followed = new PodRegistry();
        followed.registerFromIndex(index);
        final long[] old = TestKeys.keys(5, 8);
        final long[] fresh = TestKeys.keys(6, 8);
        index.store(5, old, 8);
        final Selector selector = new Selector(
            RoutingProfiles.cacheAware("ca", index, followed, null, TestKeys.BLOCK, null), followed, index);
        final Router router = new Router(new SingleWorkflow(selector), followed, index);
        final RoutingContext ctx = router.newContext();
        assertEquals(5, router.routeKeys(ctx, old, 8));
        assertEquals("pod-5", followed.podId(5));
        final long resyncs = selector.counters().podTableResyncs();

        index.free(5).pod(5, "pod-new", "m").store(5, fresh, 8);
        assertEquals(5, router.routeKeys(ctx, fresh, 8));
        assertFalse(ctx.plan().isFallback());
        assertEquals("pod-new", followed.podId(5), "the new pod's blocks under the new pod's name");
        assertEquals(resyncs + 1, selector.counters().podTableResyncs());

        // The fleet's hand-registered registry names slot 5 "pod-5": it must not route there any more.
        final Router byHand = RoutingProfiles.single(
            RoutingProfiles.cacheAware("ca", index, registry, null, TestKeys.BLOCK, null), registry, index);
        assertNotEquals(5, byHand.routeKeys(byHand.newContext(), fresh, 8));
        assertFalse(registry.isRegistered(5));
    }

    @Test
    void shouldFallBackWhileThePodTableKeepsChanging() {
        final MapPodIndex churning = new MapPodIndex() {
            private long version;

            @Override
            public long podTableVersion() {
                return ++version;
            }
        };
        for (int s = 0; s < 8; s++) {
            churning.pod(s, "pod-" + s, "m");
        }
        final long[] chain = TestKeys.keys(7, 8);
        churning.store(3, chain, 8);
        final Selector selector = new Selector(
            RoutingProfiles.cacheAware("ca", churning, registry, null, TestKeys.BLOCK, null), registry, churning);
        final Router router = new Router(new SingleWorkflow(selector), registry, churning);
        final int pick = router.routeKeys(router.newContext(), chain, 8);
        assertTrue(pick >= 0 && pick < 8);
        assertEquals(1, selector.counters().fallbacks(), "decided without the index it cannot pin down");
        assertEquals(3, selector.counters().podTableResyncs());
    }

    @Test
    void shouldCheckAHandRegistrationAgainstTheIndexBeforeRoutingToIt() {
        final long[] chain = TestKeys.keys(8, 8);
        index.store(5, chain, 8);
        final Router router = RoutingProfiles.single(
            RoutingProfiles.cacheAware("ca", index, registry, null, TestKeys.BLOCK, null), registry, index);
        final RoutingContext ctx = router.newContext();
        assertEquals(5, router.routeKeys(ctx, chain, 8));
        registry.register(5, "impostor", "m", PodRole.BOTH, null);
        assertNotEquals(5, router.routeKeys(ctx, chain, 8), "pod-5's blocks are not the impostor's");
        assertFalse(registry.isRegistered(5));
    }
}
