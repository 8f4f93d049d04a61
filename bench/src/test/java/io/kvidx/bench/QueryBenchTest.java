package io.kvidx.bench;

import io.kvidx.client.json.MiniJson;
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
import static org.junit.jupiter.api.Assertions.assertThrows;
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
        for (final String store : List.of("kvidx", "naive", "chronicle", "kvidx_cell256", "naive_cell256",
            "chronicle_cell256")) {
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
        // Both cells are measured and named by cell; each baseline holds bitmaps as wide as its cell.
        for (final String store : List.of("kvidx", "kvidx_exact", "naive", "chronicle", "naive_per_pod_scan")) {
            assertEquals(64.0, number(object(json, store), "cell_pods"), store);
        }
        for (final String store : List.of("kvidx_cell256", "naive_cell256", "chronicle_cell256")) {
            assertEquals(256.0, number(object(json, store), "cell_pods"), store);
        }
        assertTrue(number(object(json, "chronicle_cell256"), "footprint_bytes")
                > number(object(json, "chronicle"), "footprint_bytes"),
            "Chronicle Map's 256-pod values (4 words) must take more room than its 64-pod values (1 word)");
        assertTrue(number(object(json, "kvidx_cell256"), "footprint_bytes")
                > number(object(json, "kvidx"), "footprint_bytes"),
            "the 256-pod cell's file must be the general layout, larger than the 64-pod cell's");
        // The per-pod scan is an extra row, timed like the others; ratios are against the same cell's naive row.
        final Map<String, Object> perPod = object(json, "naive_per_pod_scan");
        assertTrue(number(perPod, "queries") > 100 && number(perPod, "p50_ns") > 0, "per-pod scan: " + perPod);
        assertEquals(1.0, number(object(json, "naive"), "ratio_vs_naive_p50"), 0.006);
        assertEquals(1.0, number(object(json, "naive_cell256"), "ratio_vs_naive_p50"), 0.006);
        final Map<String, Object> kvidx256 = object(json, "kvidx_cell256");
        assertEquals(number(object(json, "naive_cell256"), "p50_ns") / number(kvidx256, "p50_ns"),
            number(kvidx256, "ratio_vs_naive_p50"), 0.006, "kvidx_cell256's ratio must be against naive_cell256");
        // The load rate counts the stores that were new for a pod: the workload re-stores shared prefixes a pod
        // already holds, which must not count.
        final double podBlocks = number(object(json, "workload"), "pod_blocks");
        final double loaded = number(kvidx, "load_stores");
        assertTrue(loaded > 0 && loaded < podBlocks, "load counted " + loaded + " of " + podBlocks + " pod-blocks");
        assertTrue(number(kvidx, "churn_removes_per_s") > 0, "churn removes: " + kvidx);
        for (final String floor : List.of("floor_1line", "floor_lines")) {
            final Map<String, Object> f = object(json, floor);
            assertTrue(number(f, "p50_ns") > 0 && number(f, "p99_ns") >= number(f, "p50_ns"), floor + ": " + f);
            assertTrue(number(f, "alloc_bytes_per_op") < 1.0, floor + " allocates: " + f);
        }
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("floor: one cold line p50 ")), "floor line missing");
        // Issue 14's measure: each kvidx row over the same run's floor_lines, at p50 and at p99.
        final Map<String, Object> chainLines = object(json, "floor_lines");
        for (final String store : List.of("kvidx", "kvidx_cell256")) {
            final Map<String, Object> k = object(json, store);
            for (final String q : List.of("p50", "p99")) {
                assertEquals(number(k, q + "_ns") / number(chainLines, q + "_ns"),
                    number(k, "ratio_vs_floor_lines_" + q), 0.006, store + " over floor_lines at " + q);
            }
        }
        assertTrue(!object(json, "naive").containsKey("ratio_vs_floor_lines_p50"), "only kvidx rows carry it");
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("x floor_lines (p50 / p99): kvidx ")
            && l.contains(", kvidx_cell256 ")), "floor ratio line missing");
        assertTrue(!json.containsKey("floor_full_lines") && !json.containsKey("kvidx_noprefetch")
                && !json.containsKey("group4") && !json.containsKey("group4_bound")
                && !json.containsKey("kvidx_cached16") && !json.containsKey("floor_lines_cached16"),
            "experiment rows are timed only with --experiments: " + json.keySet());
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void shouldTimeTheExperimentRowsInTheSameRoundsWhenAsked() {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        QueryBench.run(BenchOptions.parse(new String[] {
            "--blocks", "4000", "--warmup-ms", "100", "--measure-ms", "200", "--rounds", "1", "--experiments",
            "--json"}), out);

        final List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        final Map<String, Object> json = parseObject(lines.getLast());
        for (final String row : List.of("kvidx_noprefetch", "floor_full_lines", "group4", "group4_pf",
            "group4_bound", "kvidx_cached16", "floor_lines_cached16", "kvidx_cell256_cached16")) {
            final Map<String, Object> r = object(json, row);
            assertTrue(number(r, "queries") > 100 && number(r, "p50_ns") > 0
                && number(r, "p99_ns") >= number(r, "p50_ns"), row + ": " + r);
            assertTrue(number(r, "alloc_bytes_per_op") < 1.0, row + " allocates: " + r);
        }
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("experiments: ")), "experiments line missing");
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("in cache (16 chains cycling): kvidx p50 ")
            && l.contains("; kvidx_cell256 p50 ")), "in-cache line missing");
        assertEquals(256.0, number(object(json, "kvidx_cell256_cached16"), "cell_pods"), "the wide cell's row");
        assertTrue(!object(json, "floor_lines_cached16").containsKey("cell_pods")
            && number(object(json, "kvidx_cached16"), "cell_pods") == 64, "cell_pods only on answering rows");
        assertTrue(!object(json, "kvidx_cached16").containsKey("ratio_vs_naive_p50")
            && object(json, "kvidx_noprefetch").containsKey("ratio_vs_naive_p50"),
            "no naive ratio for a row timed in cache, where the naive row is not");
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("kvidx_cached16 ") && l.trim().endsWith("-")),
            "the table prints no naive ratio for a row timed in cache");
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
        assertTrue(number(x, "writer_removes_per_s") > 0, "writer remove rate: " + x);
        // Every chain stored is removed churn-window steps later: the removes the writer reports trail its stores
        // by exactly the window, which a remove count copied from the stores cannot do.
        final double window = number(object(parseObject(lines.getLast()), "workload"), "churn_window_chains");
        final double chain = number(object(parseObject(lines.getLast()), "workload"), "churn_chain_blocks");
        assertEquals(window * chain, number(x, "writer_stores") - number(x, "writer_removes"),
            "stores minus removes must be the churn window's keys: " + x);
        assertTrue(number(x, "reader_pid") != ProcessHandle.current().pid(), "reader ran in this JVM");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldQueryTheTracePromptsFromASecondJvmAndReportThemByLength() {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        XprocBench.run(BenchOptions.parse(new String[] {
            "--workload", "trace", "--pods", "32", "--chain", "1024", "--warmup-ms", "300", "--measure-ms", "600",
            "--churn-window", "256", "--evict-mib", "1", "--json"}), out);

        final List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        final Map<String, Object> json = parseObject(lines.getLast());
        final Map<String, Object> x = object(json, "xproc");
        assertEquals(0.0, number(x, "mismatches"), "answers on the trace's prompts: " + x);
        assertEquals(1.0, number(object(json, "workload"), "evict_mib_per_query"));
        assertTrue(number(x, "queries") > 100, "reader timed too few queries: " + x);
        final Map<String, Object> workload = object(json, "workload");
        assertEquals("trace", workload.get("kind"));
        assertEquals(1024.0, number(workload, "chain"), "the longest prompt kept: " + workload);
        assertTrue(String.valueOf(workload.get("chains_queried")).startsWith("Mooncake prompts of "),
            workload.toString());
        // The prompts are 55 to 1,024 blocks here: three length buckets, each timed, their counts adding up.
        final List<?> byLength = assertInstanceOf(List.class, x.get("query_by_length"), x.toString());
        assertEquals(3, byLength.size(), byLength.toString());
        double counted = 0;
        for (final Object b : byLength) {
            @SuppressWarnings("unchecked")
            final Map<String, Object> bucket = (Map<String, Object>) b;
            assertTrue(number(bucket, "p50_ns") > 0 && number(bucket, "p99_ns") >= number(bucket, "p50_ns"),
                bucket.toString());
            counted += number(bucket, "queries");
        }
        assertEquals(number(x, "queries"), counted, "every timed query is in one bucket");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldCompareTheStoresOnTheTracePrompts() {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        QueryBench.run(BenchOptions.parse(new String[] {
            "--workload", "trace", "--pods", "16", "--chain", "256", "--warmup-ms", "200", "--measure-ms", "300",
            "--rounds", "1", "--json"}), out);

        final List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        final Map<String, Object> json = parseObject(lines.getLast());
        for (final String store : List.of("kvidx", "naive", "chronicle")) {
            final Map<String, Object> s = object(json, store);
            assertTrue(number(s, "queries") > 100, store + ": " + s);
            assertInstanceOf(List.class, s.get("query_by_length"), store + ": " + s);
        }
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("every figure below: Mooncake prompts of ")),
            "the chains are named with every figure");
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("kvidx by prompt length:")), "per-length table");
    }

    @Test
    void shouldRefuseAnUnknownWorkloadAndTheExperimentsOnTheTrace() {
        assertThrows(IllegalArgumentException.class, () -> BenchOptions.parse(new String[] {"--workload", "b"}));
        assertThrows(IllegalArgumentException.class, () -> BenchOptions.parse(new String[] {"--evict-mib", "-1"}));
        final BenchOptions trace = BenchOptions.parse(new String[] {"--workload", "trace"});
        assertEquals(128, trace.pods(), "the trace bench's fleet");
        assertEquals(Workload.MAX_CHAIN, trace.chain(), "whole prompts");
        assertEquals(Workload.CHAIN_DEFAULT, trace.churnChain());
        assertThrows(IllegalArgumentException.class, () -> QueryBench.run(BenchOptions.parse(new String[] {
            "--workload", "trace", "--experiments"}), System.out));
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
