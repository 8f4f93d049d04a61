package io.kvidx.bench.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TraceBenchTest {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldReplayATinyTraceThroughTheDaemonAndReportSaneFigures() throws Exception {
        replayTinyTrace(TransportChoice.ZMQ);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldReplayATinyTraceAsSbeOverAeron() throws Exception {
        replayTinyTrace(TransportChoice.AERON);
    }

    /**
     * {@code --no-replay}: the routing simulation only; the JSON line is printed and no report is drawn (drawing the
     * empty sweep failed with "Y-Axis data cannot be empty" before). Options reach nothing they should not: a daemon
     * option given with {@code --daemon-arg} is accepted and unused without a replay.
     */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldSimulateRoutingAloneWithNoReplay() throws Exception {
        final Path dir = Path.of("target", "trace-bench-test-no-replay");
        final Path trace = tinyTrace(dir, 60);
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        TraceBench.run(new String[] {"--trace", trace.toString(), "--pods", "8", "--no-replay", "--json",
            "--daemon-arg=--writers=2", "--out", dir.resolve("results").toString()},
            new PrintStream(bytes, true, StandardCharsets.UTF_8));
        final String out = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(out.lines().anyMatch(l -> l.startsWith("{\"valid\": false") && l.contains("\"routing\"")), out);
        assertTrue(out.contains("report: none"), out);
    }

    /** Writes a trace of {@code n} requests with shared prefixes, in Mooncake's format, into {@code dir}. */
    private static Path tinyTrace(final Path dir, final int n) throws Exception {
        Files.createDirectories(dir);
        final Path trace = dir.resolve("tiny.jsonl");
        final StringBuilder lines = new StringBuilder();
        for (final TraceRequest r : RoutingSimTest.sharedPrefixTrace(n)) {
            lines.append("{\"timestamp\": ").append(r.timestampMs()).append(", \"input_length\": ")
                .append(r.inputLength()).append(", \"output_length\": ").append(r.outputLength())
                .append(", \"hash_ids\": ").append(java.util.Arrays.toString(r.hashIds())).append("}\n");
        }
        Files.writeString(trace, lines);
        return trace;
    }

    private static void replayTinyTrace(final String transport) throws Exception {
        final Path dir = Path.of("target", "trace-bench-test-" + transport);
        final Path trace = tinyTrace(dir, 120);
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        TraceBench.run(new String[] {"--trace", trace.toString(), "--pods", "8", "--windows-ms", "3000",
            "--sockets", "2", "--transport", transport, "--json", "--out", dir.resolve("results").toString()},
            new PrintStream(bytes, true, StandardCharsets.UTF_8));
        final String out = bytes.toString(StandardCharsets.UTF_8);
        final List<String> outLines = out.lines().toList();
        // The JSON line comes before the report's path (a chart that fails to draw must not lose it).
        final String json = outLines.stream().filter(l -> l.startsWith("{\"valid\": ")).reduce((x, y) -> y)
            .orElse("");
        assertTrue(outLines.get(outLines.size() - 1).startsWith("report: "), out);
        assertTrue(json.startsWith("{\"valid\": ") && json.endsWith("}"), out);
        assertTrue(json.contains("\"transport\": \"" + transport + "\""), json);

        // Ops counted: the plan's totals add up, and the router queried every request's keys.
        final long queried = (long) TraceReport.num(json, "workload", "blocks_queried");
        final long stored = (long) TraceReport.num(json, "workload", "blocks_stored");
        final long removed = (long) TraceReport.num(json, "workload", "blocks_removed");
        assertEquals(120 * 6 * 32, queried, json);
        assertTrue(stored > 0, json);
        assertEquals(queried + stored + removed, (long) TraceReport.num(json, "workload", "block_ops"), json);
        // The daemon applied every block the plan sent (and the 8 end markers, maybe warm-up markers), no error.
        assertEquals(0, TraceReport.num(json, "daemon", "errors"), json);
        assertEquals(removed, (long) TraceReport.num(json, "daemon", "blocks_removed"), json);
        assertTrue(TraceReport.num(json, "daemon", "blocks_stored") >= stored + 8, json);
        assertEquals(queried, (long) TraceReport.num(json, "query", "keys"), json);
        assertTrue(TraceReport.num(json, "block_ops_per_s") > 0, json);

        // A light load (120 requests in 3 s) must be kept up with: valid, every end marker seen, probes timed.
        assertTrue(json.startsWith("{\"valid\": true"), out);
        assertTrue(TraceReport.num(json, "event_to_visible", "samples") > 0, json);
        assertEquals(0, TraceReport.num(json, "event_to_visible", "lost"), json);
        assertTrue(TraceReport.num(json, "query", "p50_ns") > 0, json);
        assertTrue(TraceReport.num(json, "event_to_visible", "p99_us")
            >= TraceReport.num(json, "event_to_visible", "p50_us"), json);

        // Routing: every policy present, hit rates in [0, 1], the index beats round robin on shared prefixes.
        final double[] rates = new double[RoutingSim.POLICIES.size()];
        for (int i = 0; i < rates.length; i++) {
            final String policy = RoutingSim.POLICIES.get(i);
            rates[i] = TraceReport.num(json, "routing", policy, "hit_rate");
            assertTrue(!Double.isNaN(rates[i]), policy + " missing: " + json);
            assertTrue(rates[i] >= 0 && rates[i] <= 1, policy + " " + rates[i]);
        }
        assertTrue(rates[0] > rates[2] + 0.1, "cache-aware " + rates[0] + " vs round robin " + rates[2]);
        assertTrue(Files.size(dir.resolve("results").resolve("trace-report.html")) > 10_000, "report written");
    }
}
