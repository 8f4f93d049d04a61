package io.kvidx.routing;

import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.client.tiers.TierMap;
import io.kvidx.routing.exec.CacheHint;
import io.kvidx.routing.exec.ProxyExchange;
import io.kvidx.routing.exec.ProxyPolicy;
import io.kvidx.routing.plugins.CacheAffinityScorer;
import io.kvidx.routing.plugins.LeastLoadScorer;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.PrefixQueryPreparer;
import io.kvidx.routing.plugins.RoleFilter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The one proxy policy, without a transport: what {@code kvidx router}'s Netty call and {@link
 * io.kvidx.routing.exec.HttpExecutor} both carry out. Where a call goes and with which headers (data-parallel rank,
 * cache hint, the client's headers passed on), what a failure and an answer mean, replanning within the attempts of
 * each stage, prefill then decode, and the pods' load counted while a call is in flight. The transports' own tests
 * (HttpExecutorTest, HttpExecutorRankTest; the router's RouterRetryTest, RouterPrefillDecodeTest, RouterHeadersTest)
 * run the same policy over real sockets.
 */
class ProxyPolicyTest {
    private static final URI ENGINE = URI.create("http://10.0.0.1:8000");
    private static final URI SOLO = URI.create("http://10.0.0.2:8000/base/");

    @TempDir
    Path dir;

    private static Router single(final PodRegistry registry) {
        final Profile p = Profile.builder("single").score(new LeastLoadScorer("load", registry, LoadMetric.REQUESTS),
            1).pick(new MaxScorePicker("max")).build(registry);
        return RoutingProfiles.single(p, registry, null);
    }

    private static RoutingContext planned(final Router router) {
        final RoutingContext ctx = router.newContext();
        ctx.reset().tokens(new int[] {1, 2, 3}, 0, 3);
        router.plan(ctx);
        return ctx;
    }

    @Test
    void shouldSendARankPodToItsEngineWithTheRankHeader() {
        final PodRegistry registry = new PodRegistry().register(0, "eng", "m", PodRole.BOTH, ENGINE)
            .register(1, "eng#1", "m", PodRole.BOTH, null)
            .register(2, "eng#2", "m", PodRole.BOTH, ENGINE)
            .register(3, "solo", "m", PodRole.BOTH, SOLO)
            .register(4, "solo#3", "m", PodRole.BOTH, URI.create("http://10.0.0.3:8000"));
        final ProxyPolicy policy = new ProxyPolicy(single(registry), null, 1, null, null);
        assertEquals(new ProxyPolicy.Target(ENGINE, "1"), policy.target(1), "no endpoint of its own: the engine's");
        assertEquals("/base/v1/completions", new ProxyExchange.Call(ProxyExchange.Stage.SINGLE, 3, SOLO, null, null,
            null).path("/v1/completions"), "the endpoint's own path is kept");
        assertEquals(new ProxyPolicy.Target(ENGINE, "2"), policy.target(2), "the engine's endpoint: the header");
        assertEquals(new ProxyPolicy.Target(ENGINE, "0"), policy.target(0), "a base pod with ranks is rank 0");
        assertEquals(new ProxyPolicy.Target(URI.create("http://10.0.0.3:8000"), null), policy.target(4),
            "a rank pod with a server of its own: no header");
        assertEquals(new ProxyPolicy.Target(SOLO, "0"), policy.target(3), "its base pod still names rank 0");
        registry.unregister(4).register(4, "other", "m", PodRole.BOTH, null);
        assertEquals(new ProxyPolicy.Target(SOLO, null), policy.target(3), "a pod without ranks: no header");
        registry.register(5, "lost#1", "m", PodRole.BOTH, null);
        assertNull(policy.target(5), "neither the pod nor its engine has an endpoint");
    }

    @Test
    void shouldTakeEndpointsFromTheTransportsPodBook() {
        final PodRegistry registry = new PodRegistry().register(0, "eng", "m", PodRole.BOTH, null)
            .register(1, "eng#1", "m", PodRole.BOTH, null);
        final ProxyPolicy policy = new ProxyPolicy(single(registry), null, 1, null, slot -> ENGINE);
        assertEquals(new ProxyPolicy.Target(ENGINE, "1"), policy.target(1));
        assertEquals(new ProxyPolicy.Target(ENGINE, "0"), policy.target(0));
    }

    @Test
    void shouldPassOnTheClientsHeadersButHopByHopOnesTheRankAndTheHintAndSetItsOwn() {
        final PodRegistry registry = new PodRegistry().register(0, "eng", "m", PodRole.BOTH, ENGINE)
            .register(1, "eng#1", "m", PodRole.BOTH, null);
        registry.unregister(0);
        final Router router = single(registry);
        try (TierMap tiers = new TierMap(dir.resolve("tiers"), slot -> 0, 1_000, 1_000_000)) {
            final ProxyPolicy policy = new ProxyPolicy(router, null, 1, new CacheHint(tiers, "x-hint"), null);
            final String connection = "keep-alive, X-Private";
            for (final String name : new String[] {"Connection", "keep-alive", "TE", "Transfer-Encoding", "host",
                "Content-Length", "expect", "Upgrade", "Proxy-Authorization", "x-private", "Content-Type",
                "X-Data-Parallel-Rank", "X-HINT"}) {
                assertFalse(policy.forwardsRequestHeader(name, connection), name);
            }
            for (final String name : new String[] {"Authorization", "x-session-id", "Accept", "x-hint-2"}) {
                assertTrue(policy.forwardsRequestHeader(name, connection), name);
            }
            final RoutingContext ctx = planned(router);
            final ProxyExchange.Call call = policy.begin(ctx, ctx.plan(), 3).call();
            assertNotNull(call);
            assertEquals(1, call.slot());
            final Map<String, String> set = new LinkedHashMap<>();
            call.headers(set::put);
            assertEquals(Map.of("Content-Type", "application/json", "X-data-parallel-rank", "1", "x-hint",
                "tier=none; blocks=0; gpu=0; cpu=0; disk=0; unknown=0"), set);
            assertEquals("/v1/completions", call.path("/v1/completions"));
            assertTrue(new ProxyPolicy(router, null, 1, null, null).forwardsRequestHeader("x-hint", null),
                "without a hint, a header of that name is the client's own");
        }
    }

    @Test
    void shouldReplanAFailedCallUntilTheStagesAttemptsAreSpent() {
        final PodRegistry registry = new PodRegistry().register(0, "a", "m", PodRole.BOTH, ENGINE)
            .register(1, "b", "m", PodRole.BOTH, SOLO)
            .register(2, "c", "m", PodRole.BOTH, null);
        final Router router = single(registry);
        final RoutingContext ctx = planned(router);
        final ProxyExchange x = new ProxyPolicy(router, null, 2, null, null).begin(ctx, ctx.plan(), 3);
        assertEquals(ProxyExchange.Stage.SINGLE, x.stage());
        final ProxyExchange.Call first = x.call();
        x.started();
        assertEquals(1, registry.running(first.slot()), "counted while in flight");
        assertTrue(x.retries(503));
        assertFalse(x.retries(404), "a 4xx is the client's");
        assertTrue(x.failed("answered HTTP 503"));
        assertEquals(0, registry.running(first.slot()), "a failed call is not counted");
        final ProxyExchange.Call second = x.call();
        assertTrue(second.slot() != first.slot(), "replanned without the failed pod");
        assertFalse(x.failed("closed"), "two attempts per stage");
        assertEquals(2, x.attempts());
        assertEquals(2, x.failures().size());
        assertTrue(x.spentMessage().startsWith("single failed on 2 attempt(s): single pod "), x.spentMessage());
        assertTrue(x.spentMessage().endsWith(": closed"), x.spentMessage());
    }

    @Test
    void shouldAnswerNoPodWhenThePlanHasNone() {
        final PodRegistry registry = new PodRegistry();
        final Router router = single(registry);
        final RoutingContext ctx = planned(router);
        final ProxyExchange x = new ProxyPolicy(router, null, 3, null, null).begin(ctx, ctx.plan(), 0);
        assertNull(x.call());
        assertEquals("no single pod available", x.noPodMessage());
    }

    @Test
    void shouldPrefillThenDecodeAndKeepThePrefillPodWhenTheDecodeFails() {
        final PodRegistry registry = new PodRegistry().register(0, "p0", "m", PodRole.PREFILL, ENGINE)
            .register(1, "p1", "m", PodRole.PREFILL, ENGINE)
            .register(2, "d0", "m", PodRole.DECODE, SOLO)
            .register(3, "d1", "m", PodRole.DECODE, SOLO);
        final MapPodIndex index = new MapPodIndex();
        for (int s = 0; s < 4; s++) {
            index.pod(s, registry.podId(s), "m");
        }
        final long[] chain = TestKeys.keys(5, 4);
        index.store(0, chain, 4).store(2, chain, 4);
        final Profile prefill = Profile.builder("prefill").input(Slots.BLOCK_KEYS)
            .prepare(new PrefixQueryPreparer("query", PrefixQueryPreparer.Mode.INDEX, null))
            .filter(new RoleFilter("role", registry, PodRole.PREFILL)).score(new CacheAffinityScorer("cache"), 1)
            .pick(new MaxScorePicker("max")).build(registry);
        final Profile decode = Profile.builder("decode").input(Slots.PREFILL_PICK, Slots.BLOCK_KEYS)
            .prepare(new PrefixQueryPreparer("query", PrefixQueryPreparer.Mode.INDEX, null))
            .filter(new RoleFilter("role", registry, PodRole.DECODE)).score(new CacheAffinityScorer("cache"), 1)
            .pick(new MaxScorePicker("max")).build(registry);
        final Router router = new Router(new PrefillDecodeWorkflow(new Selector(prefill, registry, index),
            new Selector(decode, registry, index)), registry, index);
        final RoutingContext ctx = router.newContext();
        ctx.reset().keys(chain, 0, chain.length);
        final ProxyExchange x = new ProxyPolicy(router, null, 2, null, null).begin(ctx, router.plan(ctx), 64);

        assertEquals(ProxyExchange.Stage.PREFILL, x.stage());
        assertEquals(0, x.call().slot(), "the prefill pod holding the prefix");
        assertTrue(x.retries(404), "a prefill answer that is not 2xx is a failure");
        final String body = "{\"prompt\":[1,2],\"max_tokens\":9,\"stream\":true}";
        assertTrue(new String(x.prefillBody(body.getBytes(java.nio.charset.StandardCharsets.UTF_8)),
            java.nio.charset.StandardCharsets.UTF_8).contains("\"do_remote_decode\":true"));
        x.started();
        x.prefilled();
        assertEquals(0, registry.running(0), "the prefill call ended");
        assertEquals(ProxyExchange.Stage.DECODE, x.stage());
        assertEquals(0, x.prefillSlot());
        assertEquals(2, x.call().slot(), "the decode pod holding the prefix");
        assertFalse(x.retries(404), "a decode 4xx is passed through");
        assertTrue(x.failed("answered HTTP 500"), "the decode stage has attempts of its own");
        assertEquals(3, x.call().slot(), "replanned to the other decode pod");
        assertEquals(0, x.prefillSlot(), "the prefill pod is kept");
        assertEquals(3, x.attempts());
    }
}
