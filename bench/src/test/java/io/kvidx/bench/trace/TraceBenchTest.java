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
     * option given with {@code --daemon-arg} is accepted and unused without a replay, and so is {@code --writers};
     * the daemon's writers given as {@code --daemon-arg=--writers=N} are refused with a message naming
     * {@code --writers N}.
     */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldSimulateRoutingAloneWithNoReplay() throws Exception {
        final Path dir = Path.of("target", "trace-bench-test-no-replay");
        final Path trace = tinyTrace(dir, 60);
        final String out = run("--trace", trace.toString(), "--pods", "8", "--no-replay", "--json",
            "--daemon-arg=--idle=busy-spin", "--writers", "2", "--out", dir.resolve("results").toString());
        assertTrue(out.lines().anyMatch(l -> l.startsWith("{\"valid\": false") && l.contains("\"routing\"")), out);
        assertTrue(out.contains("report: none"), out);
        final IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, () -> TraceBench.run(new String[] {"--trace", trace.toString(),
                "--no-replay", "--daemon-arg=--writers=2"}, new PrintStream(new ByteArrayOutputStream(), true,
                StandardCharsets.UTF_8)));
        assertTrue(refused.getMessage().contains("--writers N"), refused.getMessage());
        final IllegalArgumentException noScratch = org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, () -> TraceBench.run(new String[] {"--trace", trace.toString(),
                "--no-replay", "--scratch", dir.resolve("no-such-dir").toString()}, new PrintStream(
                new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)));
        assertTrue(noScratch.getMessage().contains("--scratch must be an existing directory"), noScratch.getMessage());
        final IllegalArgumentException negativeLead = org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, () -> TraceBench.run(new String[] {"--trace", trace.toString(),
                "--no-replay", "--query-lead-ms", "-1"}, new PrintStream(new ByteArrayOutputStream(), true,
                StandardCharsets.UTF_8)));
        assertTrue(negativeLead.getMessage().contains("--query-lead-ms"), negativeLead.getMessage());
    }

    /**
     * {@code --transport inproc}: the plan's vLLM batches offered to a writer pool in the test's own process (2
     * writers), with a small engine budget so that the plan evicts too. Every store and removal of the plan must be
     * counted applied (exactly: no warm-up or end markers in this mode), with no error, and the light load kept up
     * with; no router, so no query or event-to-visible figures.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldApplyEveryBlockOfThePlanInProcess() throws Exception {
        final Path dir = Path.of("target", "trace-bench-test-inproc");
        final Path trace = tinyTrace(dir, 120);
        final String out = run("--trace", trace.toString(), "--pods", "8", "--budget", "512", "--windows-ms",
            "3000,1000", "--transport", "inproc", "--writers", "2", "--json", "--out",
            dir.resolve("results").toString());
        final String json = out.lines().filter(l -> l.startsWith("{\"valid\": ")).reduce((x, y) -> y).orElse("");
        assertTrue(json.startsWith("{\"valid\": true, \"transport\": \"inproc\", \"writers\": 2, \"scale\": 1"),
            out);
        final long queried = (long) TraceReport.num(json, "workload", "blocks_queried");
        final long stored = (long) TraceReport.num(json, "workload", "blocks_stored");
        final long removed = (long) TraceReport.num(json, "workload", "blocks_removed");
        assertEquals(120 * 6 * 32, queried, json);
        assertTrue(stored > 120 * 2 * 32 && removed > 0, "the plan stores and evicts: " + json);
        assertEquals(queried + stored + removed, (long) TraceReport.num(json, "workload", "block_ops"), json);
        // The pool's counters: exactly the plan, no error (the headline point and both sweep points).
        assertEquals(stored, (long) TraceReport.num(json, "daemon", "blocks_stored"), json);
        assertEquals(removed, (long) TraceReport.num(json, "daemon", "blocks_removed"), json);
        assertEquals(0, TraceReport.num(json, "daemon", "errors"), json);
        final String sweep = json.substring(json.indexOf("\"sweep\": ["), json.indexOf("\"workload\""));
        final String point = "\"transport\": \"inproc\", \"writers\": 2, ";
        assertEquals(2, sweep.split(java.util.regex.Pattern.quote(point), -1).length - 1, sweep);
        assertEquals(2, sweep.split(java.util.regex.Pattern.quote("\"daemon\": {\"blocks_stored\": " + stored
            + ", \"blocks_removed\": " + removed + ", \"errors\": 0}"), -1).length - 1, sweep);
        assertTrue(TraceReport.num(json, "index", "entries_at_end") > 0, json);
        assertEquals((double) 1000, TraceReport.num(json, "window_ms"), "1 s (0.6 M ops/s) is kept up with: " + json);
        assertTrue(TraceReport.num(json, "block_ops_per_s") > 0.9 * TraceReport.num(json, "offered_ops_per_s"), json);
        // No router process: no query or event-to-visible timing, and the report says so.
        assertTrue(json.contains("\"query\": null, \"event_to_visible\": null"), json);
        // The goal line: 2 writers cannot judge the 8-writer goal; the per-writer rate is the sustained one / 2.
        assertTrue(json.contains("\"measurable\": false, \"met\": null"), json);
        assertEquals(Math.round(TraceReport.num(json, "goal", "sustained_ops_per_s") / 2),
            TraceReport.num(json, "goal", "per_writer_ops_per_s"), 1.0, json);
        assertEquals(2 * TraceBench.GOAL_REFERENCE_OPS_PER_S, TraceReport.num(json, "goal", "target_ops_per_s"),
            1.0, json);
        assertStages(json, 0);
        assertTrue(sweep.contains("\"query_p99_ns\": null, \"e2v_p99_us\": null"), sweep);
        assertTrue(Files.readString(dir.resolve("results").resolve("trace-report.html")).contains("no router process"));
    }

    /**
     * {@code --scale 2}: two copies of the trace in disjoint hash spaces and pods, interleaved by timestamp: twice
     * the pods and twice every block count of {@code --scale 1}, copy 0 the unscaled plan itself, copy 1 on pods
     * 8..15 with router keys no request of copy 0 has. Then replayed in-process: every block of both copies applied.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldScaleTheTraceIntoDisjointCopies() throws Exception {
        final List<TraceRequest> requests = RoutingSimTest.sharedPrefixTrace(120);
        final TracePlan one = TracePlan.build(requests, 8, 16, 512, 4_096, 42, new VllmEventEncoder(), 1);
        final TracePlan two = TracePlan.build(requests, 8, 16, 512, 4_096, 42, new VllmEventEncoder(), 2);
        assertEquals(2 * one.pods(), two.pods());
        assertEquals(2 * one.requests(), two.requests());
        assertEquals(2 * one.blockOps(), two.blockOps());
        assertEquals(2 * one.blocksStored(), two.blocksStored());
        assertEquals(2 * one.blocksRemoved(), two.blocksRemoved());
        assertTrue(one.blocksRemoved() > 0, "the plan evicts");
        // Same work; other token ids (msgpack writes small ones shorter), so about the same bytes.
        assertEquals(2.0 * one.payloadBytes(), two.payloadBytes(), 0.01 * two.payloadBytes());
        final org.agrona.collections.LongHashSet copy0 = new org.agrona.collections.LongHashSet();
        final org.agrona.collections.LongHashSet copy1 = new org.agrona.collections.LongHashSet();
        for (int m = 0; m < two.requests(); m++) {
            final int copy = m % 2;
            final int r = m / 2;
            assertEquals(one.offsetMs(r), two.offsetMs(m), "interleaved by timestamp");
            assertEquals(copy * 8 + one.pod(r), two.pod(m), "copy c's pod p is pod c x 8 + p");
            final long[] keys = two.routerKeys(m);
            assertEquals(one.routerKeys(r).length, keys.length);
            if (copy == 0) {
                assertTrue(java.util.Arrays.equals(one.routerKeys(r), keys), "copy 0 is the unscaled plan");
                assertTrue(java.util.Arrays.equals(one.payload(r), two.payload(m)), "copy 0 is the unscaled plan");
            }
            for (final long k : keys) {
                (copy == 0 ? copy0 : copy1).add(k);
            }
        }
        assertTrue(copy0.size() > 1_000 && copy1.size() == copy0.size(), copy0.size() + " / " + copy1.size());
        for (final long k : copy1) {
            assertTrue(!copy0.contains(k), "router key " + k + " in both copies");
        }

        final Path dir = Path.of("target", "trace-bench-test-scale");
        final Path trace = tinyTrace(dir, 120);
        final String out = run("--trace", trace.toString(), "--pods", "8", "--budget", "512", "--windows-ms",
            "3000", "--transport", "inproc", "--scale", "2", "--json", "--out", dir.resolve("results").toString());
        final String json = out.lines().filter(l -> l.startsWith("{\"valid\": ")).reduce((x, y) -> y).orElse("");
        assertTrue(json.startsWith("{\"valid\": true, \"transport\": \"inproc\", \"writers\": 1, \"scale\": 2"),
            out);
        assertEquals(16, TraceReport.num(json, "workload", "pods"), json);
        assertEquals(240, TraceReport.num(json, "workload", "requests"), json);
        assertEquals(two.blockOps(), (long) TraceReport.num(json, "workload", "block_ops"), json);
        assertEquals(two.blocksStored(), (long) TraceReport.num(json, "daemon", "blocks_stored"), json);
        assertEquals(two.blocksRemoved(), (long) TraceReport.num(json, "daemon", "blocks_removed"), json);
        assertEquals(0, TraceReport.num(json, "daemon", "errors"), json);
        assertTrue(TraceReport.num(json, "index", "entries_at_end") > 0, json);
    }

    /** A scaled plan that cannot fit the heap fails with a clear message, before it is built, not out of memory. */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldRefuseAScaleThatDoesNotFitTheHeap() {
        final List<TraceRequest> requests = RoutingSimTest.sharedPrefixTrace(120);
        final long copy = TracePlan.build(requests, 8, 16, 512, 4_096, 42, new VllmEventEncoder(), 1).payloadBytes();
        // More copies than the whole heap holds in batches alone.
        final int copies = (int) (Runtime.getRuntime().maxMemory() / copy + 2);
        final IllegalArgumentException ex = org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, () -> TracePlan.build(requests, 8, 16, 512, 4_096, 42,
                new VllmEventEncoder(), copies));
        assertTrue(ex.getMessage().startsWith("--scale " + copies + " does not fit the heap"), ex.getMessage());
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
        // Over Aeron the router process is a busy one: it answers the request before each timed query first.
        final boolean busyRouter = "aeron".equals(transport);
        final List<String> args = new java.util.ArrayList<>(List.of("--trace", trace.toString(), "--pods", "8",
            "--windows-ms", "3000", "--sockets", "2", "--transport", transport, "--json", "--out",
            dir.resolve("results").toString()));
        if (busyRouter) {
            // ... which also warms up less than by default and queries each request 20 ms before its events.
            args.addAll(List.of("--busy-router", "--router-warm-up-queries", "3000", "--query-lead-ms", "20"));
        }
        final String out = run(args.toArray(String[]::new));
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
        // Each point's daemon was warmed up first (a quarter of the trace in its own hash space, then cleared):
        // the counts below are the replay's alone.
        assertEquals(30, TraceReport.num(json, "warm_up_requests"), json);
        // The daemon applied every block the plan sent (and the 8 end markers), no error.
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
        // What the search met, per prompt length: the tiny trace's 192-block prompts make probes, and their pods
        // hold at most as many distinct depths as there are pods.
        final java.util.regex.Matcher met = java.util.regex.Pattern.compile("\"max_blocks\": ?512,.*?\"probes_p50\": ?"
            + "(\\d+), ?\"holders_p50\": ?(\\d+), ?\"depths_p50\": ?(\\d+)").matcher(json);
        assertTrue(met.find(), json);
        assertTrue(json.contains("\"busy_router\": " + busyRouter), json);
        // The router process compiled its query code on a private index before the replay (bounded by time, so the
        // default's count may end early on a slow host).
        final double warmUps = TraceReport.num(json, "query", "router_warm_up_queries");
        assertTrue(busyRouter ? warmUps == 3000 : warmUps > 0, json);
        assertEquals(busyRouter ? 20 : 0, TraceReport.num(json, "query", "lead_ms"), json);
        assertTrue(Long.parseLong(met.group(1)) >= 1, json);
        assertTrue(Long.parseLong(met.group(3)) <= Long.parseLong(met.group(2)), json);
        assertTrue(TraceReport.num(json, "event_to_visible", "p99_us")
            >= TraceReport.num(json, "event_to_visible", "p50_us"), json);
        // The daemon's stage histograms cover the replay's batches (the warm-up's subtracted): one observation per
        // batch sent (requests that stored or evicted nothing send none) plus the 8 end markers.
        assertStages(json, 8);

        // Routing: every policy present, hit rates in [0, 1], the index beats round robin on shared prefixes.
        final double[] rates = new double[RoutingSim.POLICIES.size()];
        for (int i = 0; i < rates.length; i++) {
            final String policy = RoutingSim.POLICIES.get(i);
            rates[i] = TraceReport.num(json, "routing", policy, "hit_rate");
            assertTrue(!Double.isNaN(rates[i]), policy + " missing: " + json);
            assertTrue(rates[i] >= 0 && rates[i] <= 1, policy + " " + rates[i]);
        }
        assertTrue(rates[0] > rates[2] + 0.1, "cache-aware " + rates[0] + " vs round robin " + rates[2]);
        // The same policy routed from the daemon's live index (events delayed by the real path) still beats round
        // robin by far, and cannot beat the zero-delay simulation by more than noise.
        final double live = TraceReport.num(json, "routing", LiveRouting.POLICY, "hit_rate");
        assertTrue(live > rates[2] + 0.1 && live <= rates[0] + 0.05, "live " + live + " vs simulated " + rates[0]
            + " and round robin " + rates[2] + ": " + json);
        assertEquals(3000, TraceReport.num(json, "live_routing", "window_ms"), json);
        assertTrue(Files.size(dir.resolve("results").resolve("trace-report.html")) > 10_000, "report written");
    }

    /** The stage histograms of the headline point observed each applied batch, and their quantiles are ordered. */
    private static void assertStages(final String json, final int markers) {
        final double batches = TraceReport.num(json, "stages", "batch_apply", "batches");
        assertTrue(batches > 60 + markers && batches <= 120 + markers, "one per batch: " + json);
        for (final String stage : List.of("batch_ingest", "batch_queue", "batch_apply")) {
            assertEquals(batches, TraceReport.num(json, "stages", stage, "batches"), stage + ": " + json);
            final double p50 = TraceReport.num(json, "stages", stage, "p50_us");
            final double p99 = TraceReport.num(json, "stages", stage, "p99_us");
            assertTrue(p50 >= 0 && p99 >= p50 && p99 < 1e6, stage + " " + p50 + "/" + p99 + ": " + json);
        }
    }

    /** Runs the bench in this JVM and returns what it printed. */
    private static String run(final String... args) throws Exception {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        TraceBench.run(args, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
