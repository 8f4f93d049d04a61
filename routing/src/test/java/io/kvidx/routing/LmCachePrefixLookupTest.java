package io.kvidx.routing;

import io.kvidx.routing.lmcache.LmCacheLookupClient;
import io.kvidx.routing.plugins.LmCacheScorer;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.yaml.YamlRouting;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The LMCache scorer's prefix-lookup mode against a real local implementation of the controller's {@code POST
 * /lookup} ({@link LmCacheControllerServer}): routing by matched tokens, the instance-to-pod map, the timeout and
 * failure fallbacks with their counters, and the YAML definition.
 */
@Timeout(30)
class LmCachePrefixLookupTest {
    private static final int CHUNK = 256;
    /** Pod slot 1 is "pod-1"; slot 2 is reached by its endpoint URL. */
    private static final Map<String, String> WORKER_MAP = Map.of("vllm-a", "pod-1",
        "vllm-b", "http://10.0.0.2:8000/");

    private LmCacheControllerServer controller;
    private final PodRegistry registry = new PodRegistry();
    private final int[] prompt = prompt(700);

    @BeforeEach
    void start() throws IOException {
        controller = new LmCacheControllerServer(CHUNK);
        for (int s = 0; s < 4; s++) {
            registry.register(s, "pod-" + s, "m", PodRole.BOTH, s == 2 ? URI.create("http://10.0.0.2:8000") : null);
        }
    }

    @AfterEach
    void stop() throws InterruptedException {
        controller.close();
    }

    private static int[] prompt(final int n) {
        return prompt(n, 1000);
    }

    private static int[] prompt(final int n, final int base) {
        final int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = base + (i * 7919) % 50_000;
        }
        return t;
    }

    private LmCacheLookupClient client(final long timeoutMs) {
        return new LmCacheLookupClient(controller.uri(), registry, WORKER_MAP, timeoutMs);
    }

    private static Router router(final LmCacheScorer scorer, final PodRegistry registry) {
        final Profile p = Profile.builder("lmcache").score(scorer, 1).pick(new MaxScorePicker("max")).build(registry);
        return new Router(new SingleWorkflow(new Selector(p, registry, null)), registry, null);
    }

    private static Selector selector(final Router router) {
        return router.workflow().selectors().get(0);
    }

    @Test
    void shouldRouteToThePodWithTheLongestMatchedPrefix() {
        // vllm-b stores the first chunk first, so the controller credits chunk 1 to it; vllm-a holds 600 tokens,
        // which match the request's first two chunks (the third, 512..700, differs from a's partial 512..600).
        controller.admit("vllm-b", Arrays.copyOf(prompt, 256));
        controller.admit("vllm-a", Arrays.copyOf(prompt, 600));
        controller.admit("vllm-c", prompt(300, 60_000));
        assertEquals(Map.of("vllm-b", List.of(LmCacheControllerServer.LOCATION, 256L),
            "vllm-a", List.of(LmCacheControllerServer.LOCATION, 512L)), controller.lookup(prompt));

        final LmCacheLookupClient client = client(2_000);
        final long[] matched = new long[PodRegistry.MAX_PODS];
        assertEquals(2, client.lookup(prompt, 0, prompt.length, matched));
        assertEquals(List.of(Arrays.stream(prompt).asLongStream().boxed().toList()), controller.posted,
            "the controller parsed exactly the request's tokens");
        assertArrayEquals(new long[] {0, 512, 256, 0}, Arrays.copyOf(matched, 4));

        registry.load(0, 0, 0, 0).load(1, 0, 4, 0).load(2, 0, 2, 0).load(3, 0, 8, 0);
        final LmCacheScorer scorer = LmCacheScorer.prefixLookup("lmcache", client, registry, LoadMetric.REQUESTS,
            LmCacheScorer.KEY_WEIGHT_DEFAULT);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        ctx.tokens(prompt, 0, prompt.length);
        final double[] scores = new double[PodRegistry.MAX_PODS];
        scorer.score(ctx, scores);
        final double w = LmCacheScorer.KEY_WEIGHT_DEFAULT;
        assertArrayEquals(new double[] {
            w * 0 + (1 - w) * 1.0,
            w * 512 / 700.0 + (1 - w) * (8 - 4) / 8.0,
            w * 256 / 700.0 + (1 - w) * (8 - 2) / 8.0,
            w * 0 + (1 - w) * 0.0}, Arrays.copyOf(scores, 4), 1e-9);
        assertNull(ctx.fallbackScorer());

        final Router router = router(scorer, registry);
        final RoutingContext rc = router.newContext();
        for (int i = 0; i < 20; i++) {
            assertEquals(1, router.route(rc, prompt, prompt.length), "the longest matched prefix wins");
            assertFalse(rc.plan().isFallback());
        }
        assertEquals(22, client.lookups());
        assertEquals(0, client.timeouts() + client.errors() + client.unknownInstances() + scorer.fallbacks());
        assertEquals(0, selector(router).counters().fallbacks());
    }

    @Test
    void shouldFallBackWithinTheTimeoutWhenTheControllerIsSlow() {
        controller.admit("vllm-a", prompt);
        controller.delayMs = 3_000;
        // pod-1 holds the whole prompt but is the most loaded: power-of-two choices never picks it.
        registry.load(0, 0, 1, 0).load(1, 0, 9, 0).load(2, 0, 2, 0).load(3, 0, 3, 0);
        final LmCacheScorer scorer = LmCacheScorer.prefixLookup("lmcache", client(300), registry,
            LoadMetric.REQUESTS, 1.0);
        final Router router = router(scorer, registry);
        final RoutingContext rc = router.newContext();
        for (int i = 0; i < 3; i++) {
            final long t0 = System.nanoTime();
            final int pick = router.route(rc, prompt, prompt.length);
            final long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 1_000, "the decision waited " + ms + " ms with a 300 ms lookup timeout");
            assertNotEquals(1, pick, "power-of-two choices by load, not the cache");
            assertTrue(rc.plan().isFallback());
        }
        final LmCacheLookupClient client = scorer.lookupClient();
        assertEquals(3, client.lookups());
        assertEquals(3, client.timeouts());
        assertEquals(0, client.errors());
        assertEquals(3, scorer.fallbacks());
        assertEquals(3, selector(router).counters().fallbacks());
        assertEquals(3, selector(router).counters().scorerFallbacks());
        assertTrue(client.lastError().contains("300 ms") || client.lastError().contains("timed out"),
            client.lastError());

        controller.delayMs = 0;
        boolean cacheAware = false;
        for (int i = 0; i < 5 && !cacheAware; i++) {
            cacheAware = router.route(rc, prompt, prompt.length) == 1 && !rc.plan().isFallback();
        }
        assertTrue(cacheAware, "cache-aware again once the controller answers");
    }

    @Test
    void shouldCountAndFallBackOnErrorsMalformedAnswersAndUnknownInstances() throws IOException {
        controller.admit("vllm-a", prompt);
        registry.load(0, 0, 1, 0).load(1, 0, 9, 0).load(2, 0, 2, 0).load(3, 0, 3, 0);
        final LmCacheScorer scorer = LmCacheScorer.prefixLookup("lmcache", client(2_000), registry,
            LoadMetric.REQUESTS, 1.0);
        final LmCacheLookupClient client = scorer.lookupClient();
        final Router router = router(scorer, registry);
        final RoutingContext rc = router.newContext();
        final Runnable fallsBack = () -> {
            assertNotEquals(1, router.route(rc, prompt, prompt.length));
            assertTrue(rc.plan().isFallback());
        };

        controller.forcedStatus = 500;
        fallsBack.run();
        assertEquals(1, client.errors());
        assertTrue(client.lastError().contains("500"), client.lastError());
        controller.forcedStatus = 0;

        controller.forcedBody = "{\"event_id\": \"Lookup1\", \"layout_info\": {\"vllm-a\": [\"LocalCPUBackend\", 7";
        fallsBack.run();
        assertEquals(2, client.errors());
        assertTrue(client.lastError().contains("invalid JSON"), client.lastError());

        controller.forcedBody = "{\"event_id\": \"Lookup2\", \"layout_info\": {\"vllm-a\": 700}}";
        fallsBack.run();
        assertEquals(3, client.errors());
        assertTrue(client.lastError().contains("not [location, token count]"), client.lastError());

        controller.forcedBody = "{\"event_id\": \"Lookup3\", \"layout_info\": {\"vllm-a\": [\"LocalCPUBackend\"]}}";
        fallsBack.run();
        assertEquals(4, client.errors());
        assertTrue(client.lastError().contains("not [location, token count]"), client.lastError());

        controller.forcedBody = "{\"event_id\": \"Lookup4\", \"res\": \"vllm-a\"}";
        fallsBack.run();
        assertEquals(5, client.errors());
        assertTrue(client.lastError().contains("layout_info"), client.lastError());
        controller.forcedBody = null;

        // An instance no pod answers to: counted, ignored; nothing else matched, so the decision falls back.
        final LmCacheControllerServer other = new LmCacheControllerServer(CHUNK);
        try (other) {
            other.admit("vllm-ghost", prompt);
            final LmCacheScorer ghostly = LmCacheScorer.prefixLookup("lmcache",
                new LmCacheLookupClient(other.uri(), registry, WORKER_MAP, 2_000), registry, LoadMetric.REQUESTS, 1);
            final Router r2 = router(ghostly, registry);
            final RoutingContext c2 = r2.newContext();
            assertNotEquals(1, r2.route(c2, prompt, prompt.length));
            assertTrue(c2.plan().isFallback());
            assertEquals(1, ghostly.lookupClient().unknownInstances());
            assertEquals(1, ghostly.misses());
            assertEquals(0, ghostly.lookupClient().errors());
            // Known and unknown instances together: the unknown one is ignored, the known one scores.
            final int[] other300 = prompt(300, 60_000);
            other.admit("vllm-ghost", Arrays.copyOf(other300, 256));
            other.admit("vllm-b", other300);
            assertEquals(Map.of("vllm-ghost", List.of(LmCacheControllerServer.LOCATION, 256L),
                "vllm-b", List.of(LmCacheControllerServer.LOCATION, 300L)), other.lookup(other300));
            assertEquals(2, r2.route(c2, other300, other300.length), "vllm-b is pod 2 by its endpoint URL");
            assertFalse(c2.plan().isFallback());
            assertEquals(2, ghostly.lookupClient().unknownInstances());
            assertEquals(1, ghostly.fallbacks());
        } catch (final InterruptedException ex) {
            throw new AssertionError(ex);
        }

        // A request without tokens falls back without asking.
        final int asked = controller.lookups.get();
        router.route(rc, prompt, 0);
        assertTrue(rc.plan().isFallback());
        assertEquals(asked, controller.lookups.get());

        // A controller that is not listening: an error, counted, within the timeout.
        final int port;
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            port = s.getLocalPort();
        }
        final LmCacheScorer refused = LmCacheScorer.prefixLookup("lmcache", new LmCacheLookupClient(
            URI.create("http://127.0.0.1:" + port), registry, WORKER_MAP, 500), registry, LoadMetric.REQUESTS, 1);
        final Router r3 = router(refused, registry);
        final RoutingContext c3 = r3.newContext();
        assertNotEquals(1, r3.route(c3, prompt, prompt.length));
        assertTrue(c3.plan().isFallback());
        assertEquals(1, refused.lookupClient().errors() + refused.lookupClient().timeouts());

        assertEquals(5, client.errors(), "errors of the first controller");
        assertEquals(0, client.timeouts());
        assertEquals(6, scorer.fallbacks(), "5 failed lookups and the request without tokens");
        assertEquals(0, scorer.misses(), "failures are not misses");
        assertEquals(6, selector(router).counters().scorerFallbacks());
        assertEquals(6, selector(router).counters().fallbacks());
    }

    @Test
    void shouldBuildFromYamlAndRejectBadDefinitionsClearly() {
        controller.admit("vllm-a", Arrays.copyOf(prompt, 600));
        final YamlRouting.Environment env = new YamlRouting.Environment().registry(registry);
        final String yaml = """
            profiles:
              lm:
                score:
                  - type: lmcache
                    lookup-mode: prefix_lookup
                    controller: %s
                    timeout-ms: 5000
                    key-weight: 1.0
                    worker-map: {vllm-a: pod-1, vllm-b: "http://10.0.0.2:8000"}
                pick: max-score
            """.formatted(controller.uri());
        final YamlRouting.Loaded loaded = YamlRouting.parse(yaml, env);
        final LmCacheScorer scorer = (LmCacheScorer) loaded.profiles().get("lm").scorers().get(0);
        assertEquals(LmCacheScorer.LookupMode.PREFIX_LOOKUP, scorer.mode());
        assertEquals(Set.of(Slots.TOKENS), scorer.reads());
        final LmCacheLookupClient client = scorer.lookupClient();
        assertEquals(controller.uri().resolve("/lookup"), client.uri());
        assertEquals(5000, client.timeout().toMillis());
        assertEquals(Map.of("vllm-a", "pod-1", "vllm-b", "http://10.0.0.2:8000"), client.workerMap());
        final Router router = loaded.router();
        final RoutingContext rc = router.newContext();
        assertEquals(1, router.route(rc, prompt, prompt.length));
        assertEquals(1, client.lookups());

        final LmCacheScorer dflt = (LmCacheScorer) YamlRouting.parse("""
            profiles:
              lm:
                score: [{type: lmcache, lookup-mode: prefix-lookup, controller: "http://lmcache:9000/"}]
                pick: max-score
            """, env).profiles().get("lm").scorers().get(0);
        assertEquals(LmCacheLookupClient.TIMEOUT_MS_DEFAULT, dflt.lookupClient().timeout().toMillis());
        assertEquals(URI.create("http://lmcache:9000/lookup"), dflt.lookupClient().uri());
        assertEquals(Map.of(), dflt.lookupClient().workerMap());

        assertFails(env, "lookup-mode: sideways", "'lookup-mode' must be one of [occupancy, prefix-lookup]");
        assertFails(env, "lookup-mode: prefix-lookup", "needs 'controller'");
        assertFails(env, "{lookup-mode: prefix-lookup, controller: 'ftp://lmcache:9000'}", "http(s) URL");
        assertFails(env, "{lookup-mode: prefix-lookup, controller: 'http://[oops'}", "'controller' is not a URL");
        assertFails(env, "{lookup-mode: prefix-lookup, controller: 'http://c:9000', timeout-ms: 0}",
            "timeout must be in [1, 60000] ms, is 0");
        assertFails(env, "{lookup-mode: prefix-lookup, controller: 'http://c:9000', timeout-ms: 1.5}",
            "'timeout-ms' must be an integer");
        assertFails(env, "{lookup-mode: prefix-lookup, controller: 'http://c:9000', worker-map: [a, b]}",
            "'worker-map' must be a mapping");
        assertFails(env, "{lookup-mode: prefix-lookup, controller: 'http://c:9000', worker-map: {a: ''}}",
            "worker map entries need an instance id and a pod id or URL");
        assertFails(env, "{lookup-mode: prefix-lookup, controller: 'http://c:9000', time-out: 5}",
            "unknown parameter(s) [time-out]");
        assertFails(env, "{lookup-mode: occupancy, controller: 'http://c:9000'}",
            "'controller' applies to lookup-mode prefix-lookup only");
        assertFails(env, "{lookup-mode: occupancy}", "needs an LMCache poller");
    }

    private static void assertFails(final YamlRouting.Environment env, final String params, final String message) {
        final String def = params.startsWith("{") ? "{type: lmcache, " + params.substring(1)
            : "{type: lmcache, " + params + "}";
        final ProfileValidationException ex = assertThrows(ProfileValidationException.class,
            () -> YamlRouting.parse("profiles:\n  lm:\n    score: [" + def + "]\n    pick: max-score\n", env));
        assertEquals(ProfileValidationException.Kind.BAD_DEFINITION, ex.problem());
        assertEquals("lmcache", ex.plugin());
        assertTrue(ex.getMessage().contains(message), ex.getMessage());
    }

    @Test
    void shouldWriteTheRequestBodyAsLmCacheReadsIt() {
        assertEquals("{\"tokens\":[128000,849,-1,0]}",
            LmCacheLookupClient.requestBody(new int[] {7, 128000, 849, -1, 0}, 1, 4));
        assertEquals("{\"tokens\":[]}", LmCacheLookupClient.requestBody(new int[0], 0, 0));
    }
}
