package io.kvidx.bench.epp;

import io.kvidx.client.json.MiniJson;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code bench epp --smoke} end to end at a low rate: a real {@code kvidx epp} child process picks every prompt's
 * deepest holder as the decision layer does (token ids, a text prompt through the bundled tokenizer), every request
 * of each mode is answered with a pick, and the report carries the figures. Checks the harness, not the latency.
 */
class EppBenchTest {
    /** About 22 s (two JVMs, a gRPC load at several points): run by {@code ./kvidx test-slow}. */
    @Test
    @Tag("slow")
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void shouldPickAsTheDecisionLayerAndReportEachPoint() throws Exception {
        final Map<?, ?> json = run("--smoke", "--pods", "16", "--prompts", "2", "--lengths", "1000,4000",
            "--rates", "100", "--variant", "streamed", "--variant-tokens", "4000", "--variant-rate", "100",
            "--text-tokens", "200", "--text-rate", "50", "--chunk-bytes", "8192", "--jit-warmup-s", "0.2",
            "--json");
        for (final String set : List.of("1000_ids", "4000_ids", "200_text")) {
            final Map<?, ?> c = map(map(json, "checks"), set);
            assertEquals(2L, num(c, "prompts"), set + ": " + json);
            assertEquals(2L, num(c, "picker_as_deepest_holder"), set + ": " + json);
            assertEquals(2L, num(c, "picker_as_decision_layer"), set + ": " + json);
            final Map<?, ?> d = map(map(json, "decision_layer"), set);
            assertTrue(num(d, "requests") > 0, set + ": " + json);
            assertTrue(((Number) map(d, "decide_us").get("p50")).doubleValue() > 0, set + ": " + json);
        }
        final Map<?, ?> points = map(json, "points");
        for (final String p : List.of("1000_ids_buffered_100", "4000_ids_buffered_100", "4000_ids_streamed_100",
            "200_text_buffered_50")) {
            final Map<?, ?> point = map(points, p);
            assertEquals(0L, num(point, "errors"), p + ": " + json);
            assertTrue(num(point, "picked") > 0, p + ": " + json);
            assertEquals(num(point, "offered"), num(point, "picked"), p + ": " + json);
            final Map<?, ?> latency = map(point, "latency_us");
            assertTrue(((Number) latency.get("p50")).doubleValue() > 0, p + ": " + json);
            assertTrue(((Number) latency.get("p99")).doubleValue() >= ((Number) latency.get("p50")).doubleValue(),
                p + ": " + json);
        }
        // 4,000 token ids are about 23 KB: three messages of at most 8 KiB when streamed, one when buffered.
        assertEquals(1L, num(map(points, "4000_ids_buffered_100"), "body_messages"), json.toString());
        assertTrue(num(map(points, "4000_ids_streamed_100"), "body_messages") >= 2, json.toString());
        assertEquals(0L, num(json, "epp_fallbacks"), json.toString());
        assertTrue(num(json, "epp_picked") > 0, json.toString());
    }

    private static Map<?, ?> run(final String... args) throws Exception {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            EppBench.run(args, out);
        }
        final String text = bytes.toString(StandardCharsets.UTF_8);
        final List<String> lines = text.lines().toList();
        final String last = lines.get(lines.size() - 1);
        assertTrue(last.startsWith("{\"bench\": \"epp\"") && last.endsWith("}"), text);
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
}
