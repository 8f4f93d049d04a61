package io.kvidx.bench;

import io.kvidx.client.routing.lmcache.MiniJson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

class QueryBenchTest {
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldPrintOneJsonObjectWithThreeMeasuredStoresAsLastLine() {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        QueryBench.run(BenchOptions.parse(new String[] {
            "--blocks", "4000", "--warmup-ms", "200", "--measure-ms", "300", "--rounds", "1", "--json"}), out);

        final List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        final Map<String, Object> json = parseObject(lines.getLast());
        for (final String store : List.of("kvidx", "naive", "chronicle")) {
            final Map<String, Object> s = object(json, store);
            final double p50 = number(s, "p50_ns");
            final double p99 = number(s, "p99_ns");
            assertTrue(p50 > 0, store + " p50 " + p50);
            assertTrue(p99 >= p50, store + " p99 " + p99 + " < p50 " + p50);
            assertTrue(number(s, "queries") > 1000, store + " timed too few queries");
            assertTrue(number(s, "alloc_bytes_per_op") >= 0, store + " allocation");
            assertTrue(number(s, "bytes_per_block") > 0, store + " footprint");
        }
        final Map<String, Object> kvidx = object(json, "kvidx");
        assertTrue(number(kvidx, "alloc_bytes_per_op") < 1.0, "kvidx query allocates: " + kvidx);
        assertTrue(number(kvidx, "load_stores_per_s") > 0, "load rate");
        assertTrue(number(kvidx, "churn_stores_per_s") > 0, "churn rate");
        assertTrue(number(object(json, "naive"), "alloc_bytes_per_op") > 0,
            "the boxed naive baseline must show its allocation, else the allocation probe is broken");
        assertEquals(64.0, number(object(json, "workload"), "pods"));
        for (final String floor : List.of("floor_1line", "floor_lines")) {
            final Map<String, Object> f = object(json, floor);
            assertTrue(number(f, "p50_ns") > 0 && number(f, "p99_ns") >= number(f, "p50_ns"), floor + ": " + f);
            assertTrue(number(f, "alloc_bytes_per_op") < 1.0, floor + " allocates: " + f);
        }
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("floor: one cold line p50 ")), "floor line missing");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldQueryFromASecondJvmUnderChurnWithoutWrongAnswers() {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        XprocBench.run(BenchOptions.parse(new String[] {
            "--blocks", "4000", "--warmup-ms", "300", "--measure-ms", "500", "--churn-window", "256", "--json"}), out);

        final List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        final Map<String, Object> x = object(parseObject(lines.getLast()), "xproc");
        assertTrue(number(x, "queries") > 100, "reader timed too few queries: " + x);
        assertTrue(number(x, "p50_ns") > 0, "p50: " + x);
        assertEquals(0.0, number(x, "mismatches"), "answers changed under churn of other keys: " + x);
        assertEquals(0.0, number(x, "writer_evictions"), "the churn must not evict: " + x);
        assertTrue(number(x, "writer_stores_per_s") > 0, "writer rate: " + x);
        assertTrue(number(x, "reader_pid") != ProcessHandle.current().pid(), "reader ran in this JVM");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> parseObject(final String line) {
        return (Map<String, Object>) assertInstanceOf(Map.class, MiniJson.parse(line), line);
    }

    private static Map<String, Object> object(final Map<String, Object> json, final String key) {
        @SuppressWarnings("unchecked")
        final Map<String, Object> m = (Map<String, Object>) assertInstanceOf(Map.class, json.get(key), key);
        return m;
    }

    private static double number(final Map<String, Object> json, final String key) {
        return assertInstanceOf(Number.class, json.get(key), key + " in " + json).doubleValue();
    }
}
