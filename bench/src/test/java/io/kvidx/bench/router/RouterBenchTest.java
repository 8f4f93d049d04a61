package io.kvidx.bench.router;

import io.kvidx.client.json.MiniJson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class RouterBenchTest {
    /** {@code --router-jvm-arg} is repeatable and keeps its order: the router processes' flags after -Xmx1g. */
    @Test
    void shouldTakeTheRouterJvmFlagsInOrder() {
        final RouterBench.Options o = RouterBench.Options.parse(new String[] {"--skip-e2e",
            "--router-jvm-arg=-XX:+UseZGC", "--router-jvm-arg=-Xms1g"}, 2);
        assertEquals(java.util.List.of("-XX:+UseZGC", "-Xms1g"), o.routerJvmArgs);
    }

    private static final String PYTHON = "/usr/bin/python3";

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void shouldRouteSharedPrefixesToTheirCacheAndPredictTheHits() throws Exception {
        assumePythonPeers();
        final Path dir = Files.createDirectories(Path.of("target", "router-bench-test"));
        final Path trace = dir.resolve("shared-prefix.jsonl");
        final StringBuilder lines = new StringBuilder();
        long unique = 1_000;
        for (int i = 0; i < 24; i++) {
            // Seven conversations in turn: four shared trace blocks (2,048 tokens), then two of the request's own;
            // the length is not a multiple of the block size, so vLLM's last-token rule never hides a full hit.
            // Seven is odd: round robin over two pods sends a conversation's requests to alternate pods.
            final int c = i % 7;
            lines.append("{\"timestamp\": ").append(i * 100).append(", \"input_length\": ").append(6 * 512 - 5)
                .append(", \"output_length\": 1, \"hash_ids\": [").append(c * 10).append(", ").append(c * 10 + 1)
                .append(", ").append(c * 10 + 2).append(", ").append(c * 10 + 3).append(", ").append(unique++)
                .append(", ").append(unique++).append("]}\n");
        }
        Files.writeString(trace, lines);
        final Map<?, ?> json = run("--engines", "2", "--requests", "24", "--speedup", "1", "--policies",
            "cache-aware,round-robin", "--num-blocks", "4096", "--prefill-us-per-token", "5", "--trace",
            trace.toString(), "--skip-overhead");
        final Map<?, ?> e2e = map(json, "e2e");
        assertEquals(24L, num(e2e, "requests"));
        assertEquals(2L, num(e2e, "engines"));
        final Map<?, ?> cacheAware = map(map(e2e, "policies"), "cache-aware");
        final Map<?, ?> roundRobin = map(map(e2e, "policies"), "round-robin");
        for (final Map<?, ?> p : List.of(cacheAware, roundRobin)) {
            assertEquals(0L, num(p, "errors"), p.toString());
            assertEquals(24L * (6 * 512 - 5), num(p, "prompt_tokens"), p.toString());
            final double hit = ((Number) p.get("hit_rate")).doubleValue();
            assertTrue(hit >= 0 && hit <= 1, p.toString());
            assertTrue(((Number) map(p, "ttft_ms").get("p50")).doubleValue() > 0, p.toString());
            assertTrue(((Number) map(p, "ttft_ms").get("p99")).doubleValue()
                >= ((Number) map(p, "ttft_ms").get("p50")).doubleValue(), p.toString());
            final Map<?, ?> pred = map(p, "prediction");
            final double sum = ((Number) pred.get("exact_pct")).doubleValue()
                + ((Number) pred.get("over_pct")).doubleValue() + ((Number) pred.get("under_pct")).doubleValue();
            assertEquals(100, sum, 0.1, p.toString());
            // A decision racing the other event loop's first pod-table sync falls back by design (never waits).
            assertTrue(num(p, "fallbacks") <= 1, p.toString());
        }
        // 17 of the 24 requests can hit their conversation's 2,048 shared tokens (0.47 of all prompt tokens) when
        // routed to the pod that has them; round robin misses each conversation once per pod (10 hits, 0.28).
        final double cacheAwareHit = ((Number) cacheAware.get("hit_rate")).doubleValue();
        final double roundRobinHit = ((Number) roundRobin.get("hit_rate")).doubleValue();
        assertTrue(cacheAwareHit > roundRobinHit, cacheAwareHit + " vs " + roundRobinHit);
        assertTrue(cacheAwareHit > 0.4, json.toString());
        // The index saw every stored block before the next request of the conversation: predictions are exact.
        assertTrue(((Number) map(cacheAware, "prediction").get("exact_pct")).doubleValue() >= 80, json.toString());
        assertTrue(num(cacheAware, "indexed_decisions") >= 24, json.toString());
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void shouldMeasureTheAddedLatencyOfTheRouterAndTheJdkProxy() throws Exception {
        assumePythonPeers();
        final Map<?, ?> json = run("--engines", "2", "--skip-e2e", "--proxies", "kvidx,jdk", "--rates", "200",
            "--duration-s", "1", "--rounds", "1");
        final Map<?, ?> overhead = map(json, "overhead");
        assertNotNull(overhead.get("upstream"), json.toString());
        final Map<?, ?> rate = map(map(overhead, "rates"), "200");
        for (final String t : List.of("direct", "kvidx", "jdk")) {
            final Map<?, ?> p = map(rate, t);
            assertEquals(0L, num(p, "errors"), t + ": " + json);
            assertEquals(200L, num(p, "offered"), t + ": " + json);
            assertTrue(num(p, "achieved_per_s") >= 180, t + ": " + json);
            assertTrue(((Number) p.get("p50_us")).doubleValue() > 0, t + ": " + json);
            assertTrue(((Number) p.get("p99_us")).doubleValue() >= ((Number) p.get("p50_us")).doubleValue(),
                t + ": " + json);
            if (!"direct".equals(t)) {
                assertNotNull(p.get("added_p50_us"), t + ": " + json);
                assertNotNull(p.get("added_p99_us"), t + ": " + json);
            }
        }
        // The router decided with the index (which holds every body's blocks): at most a decision or two that raced
        // the other event loop's first pod-table sync fell back (by design, rather than wait).
        assertTrue(num(overhead, "kvidx_fallbacks") >= 0 && num(overhead, "kvidx_fallbacks") <= 2, json.toString());
        assertTrue(num(overhead, "kvidx_indexed_decisions") >= 198, json.toString());
        assertNotNull(map(overhead, "goal").get("p50_added_le_100us"), json.toString());
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldMeasureNginxAsAReverseProxyWhenInstalled() throws Exception {
        assumeTrue(Nginx.find(null) != null, "nginx is not installed");
        final Map<?, ?> json = run("--engines", "2", "--skip-e2e", "--proxies", "nginx", "--rates", "200",
            "--duration-s", "1", "--rounds", "1");
        final Map<?, ?> overhead = map(json, "overhead");
        assertEquals("nginx return 200", overhead.get("upstream"), json.toString());
        final Map<?, ?> nginx = map(map(map(overhead, "rates"), "200"), "nginx");
        assertEquals(0L, num(nginx, "errors"), json.toString());
        assertTrue(num(nginx, "achieved_per_s") >= 180, json.toString());
        assertNotNull(nginx.get("added_p99_us"), json.toString());
    }

    private static Map<?, ?> run(final String... args) throws Exception {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            RouterBench.run(RouterBench.Options.parse(args, 2), out);
        }
        final String text = bytes.toString(StandardCharsets.UTF_8);
        final List<String> lines = text.lines().toList();
        final String last = lines.get(lines.size() - 1);
        assertTrue(last.startsWith("{\"bench\": \"router\"") && last.endsWith("}"), text);
        return (Map<?, ?>) MiniJson.parse(last);
    }

    private static Map<?, ?> map(final Map<?, ?> m, final String key) {
        final Object v = m.get(key);
        assertTrue(v instanceof Map<?, ?>, key + " in " + m);
        return (Map<?, ?>) v;
    }

    private static long num(final Map<?, ?> m, final String key) {
        final Object v = m.get(key);
        assertTrue(v instanceof Number, key + " in " + m);
        return ((Number) v).longValue();
    }

    /** The mock engines need Debian's Python with zmq, msgpack and xxhash: CI must have them (.ci/run installs). */
    private static void assumePythonPeers() throws Exception {
        boolean ok = Files.isExecutable(Path.of(PYTHON));
        if (ok) {
            final Process p = new ProcessBuilder(PYTHON, "-c", "import zmq, msgpack, xxhash").redirectErrorStream(true)
                .start();
            ok = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        }
        assertTrue(ok || System.getenv("CI") == null, "CI needs " + PYTHON + " with python3-zmq, python3-msgpack and"
            + " python3-xxhash");
        assumeTrue(ok, PYTHON + " with zmq, msgpack and xxhash is not available");
    }
}
