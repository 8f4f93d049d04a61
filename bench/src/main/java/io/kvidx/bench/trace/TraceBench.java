package io.kvidx.bench.trace;

import io.kvidx.bench.BenchOptions;
import io.kvidx.bench.Json;
import io.kvidx.daemon.index.IndexWriterContext;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * {@code kvidx bench trace [--trace FILE] [--pods N] [--quick] [--json]}: a request trace replayed through
 * simulated engines, the real daemon and a router process ({@link TraceReplay}, swept over replay windows to find
 * the knee), plus the routing policies' hit rates on the same trace ({@link RoutingSim}); writes a report under
 * {@code bench/results/} ({@link TraceReport}) and, with {@code --json}, ends with one JSON line.
 */
public final class TraceBench {
    /** Default simulated engines. */
    public static final int PODS_DEFAULT = 128;
    /** Default engine block budget (LRU). */
    public static final int BUDGET_DEFAULT = 16_384;
    /** Default engine block size. */
    public static final int BLOCK_SIZE_DEFAULT = 16;
    /** Seed of the random split. */
    public static final long SEED_DEFAULT = 42;
    /** Requests of the trace a --quick run replays (its first ones by time). */
    public static final int QUICK_REQUESTS = 1_500;
    /** Replay windows of a full run, ms. */
    public static final long[] WINDOWS_MS_DEFAULT = {120_000, 60_000, 30_000, 15_000, 10_000, 7_500};
    /** Replay windows of a --quick run, ms. */
    public static final long[] WINDOWS_MS_QUICK = {8_000, 4_000, 2_000, 1_000};
    /** PUB sockets the pods are spread over. */
    public static final int SOCKETS_DEFAULT = 4;
    /** Most pods a replay may have (the daemon's largest cell width). */
    public static final int PODS_MAX = 256;

    private TraceBench() {
    }

    /** Parsed options (picocli; {@link #usage()} lists them). */
    @Command(name = "trace")
    static final class Options {
        @Option(names = "--trace")
        Path trace;
        @Option(names = "--pods")
        int pods = PODS_DEFAULT;
        @Option(names = "--budget")
        int budget = BUDGET_DEFAULT;
        @Option(names = "--block-size")
        int blockSize = BLOCK_SIZE_DEFAULT;
        @Option(names = "--seed")
        long seed = SEED_DEFAULT;
        @Option(names = "--requests")
        int requests;
        @Option(names = "--sockets")
        int sockets = SOCKETS_DEFAULT;
        @Option(names = "--transport")
        String transport = TransportChoice.ZMQ;
        @Option(names = "--aeron-channel")
        String aeronChannel = TransportChoice.AERON_CHANNEL_DEFAULT;
        @Option(names = "--windows-ms", split = ",")
        long[] windowsMs;
        @Option(names = "--quick")
        boolean quick;
        @Option(names = "--json")
        boolean json;
        @Option(names = "--no-replay")
        boolean skipReplay;
        @Option(names = "--daemon-arg")
        List<String> daemonArgs = new ArrayList<>();
        @Option(names = "--out")
        Path out = defaultResults();
        @Option(names = {"-h", "--help"})
        boolean help;
        TransportChoice choice;

        static Options parse(final String[] args) {
            final Options o = BenchOptions.parseInto(new Options(), args);
            if (o.help) {
                throw new IllegalArgumentException("options");
            }
            if (o.pods < 1 || o.pods > PODS_MAX) {
                throw new IllegalArgumentException("--pods must be in 1.." + PODS_MAX + ": " + o.pods);
            }
            if (o.budget < 1 || o.blockSize < 1 || TraceRequest.TRACE_BLOCK_TOKENS % o.blockSize != 0) {
                throw new IllegalArgumentException("--budget must be >= 1 and --block-size must divide 512");
            }
            if (o.requests < 0) {
                throw new IllegalArgumentException("--requests must be >= 0: " + o.requests);
            }
            o.choice = new TransportChoice(o.transport, Math.min(o.sockets, o.pods), o.aeronChannel);
            if (o.windowsMs == null) {
                o.windowsMs = o.quick ? WINDOWS_MS_QUICK : WINDOWS_MS_DEFAULT;
            }
            for (final long w : o.windowsMs) {
                if (w < 100) {
                    throw new IllegalArgumentException("replay windows must be >= 100 ms: " + w);
                }
            }
            if (o.requests == 0 && o.quick) {
                o.requests = QUICK_REQUESTS;
            }
            return o;
        }
    }

    /**
     * @return {@code bench/results} of the checkout the bench jar was built in (the jar lives in
     * {@code bench/target/}), else {@code bench/results} under the working directory.
     */
    static Path defaultResults() {
        final Path jar = Path.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator)[0])
            .toAbsolutePath();
        final Path target = jar.getParent();
        if (jar.toString().endsWith(".jar") && target != null && target.getFileName().toString().equals("target")
            && target.getParent() != null) {
            return target.getParent().resolve("results");
        }
        return Path.of("bench", "results");
    }

    /** @return usage text. */
    public static String usage() {
        return "usage: kvidx bench trace [--trace FILE] [--pods N] [--quick] [--json] [--transport zmq|aeron]"
            + " [--aeron-channel CHANNEL] [--block-size B] [--budget BLOCKS] [--requests N] [--windows-ms W,W,...]"
            + " [--sockets N] [--seed S] [--out DIR] [--no-replay] [--daemon-arg ARG]...";
    }

    /**
     * @param args command arguments (after {@code trace}).
     * @param out  where progress, the table and the JSON line go.
     * @return the JSON report.
     * @throws Exception when the trace cannot be read or a process fails.
     */
    public static Json run(final String[] args, final PrintStream out) throws Exception {
        final Options o = Options.parse(args);
        final long started = System.nanoTime();
        List<TraceRequest> trace = o.trace == null ? TraceFile.loadDefault() : TraceFile.load(o.trace);
        if (trace.isEmpty()) {
            throw new IllegalArgumentException("the trace holds no request");
        }
        if (o.requests > 0 && o.requests < trace.size()) {
            trace = trace.subList(0, o.requests);
        }
        final String traceName = o.trace == null ? "mooncake-conversation (committed)" : o.trace.toString();
        out.printf("kvidx bench trace: %s, %d requests, %d pods, engine block %d tokens, budget %d blocks/pod, "
                + "seed %d, events: %s, %d CPUs%n", traceName, trace.size(), o.pods, o.blockSize, o.budget, o.seed,
            o.choice.describe(), Runtime.getRuntime().availableProcessors());
        final Path scratch = Files.createTempDirectory(Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm")
            : Path.of(System.getProperty("java.io.tmpdir")), "kvidx-trace-");
        try {
            final List<RoutingSim.Result> routing = new ArrayList<>();
            for (final String policy : RoutingSim.POLICIES) {
                final RoutingSim.Result r = RoutingSim.run(trace, o.pods, o.blockSize, o.budget, policy, scratch);
                routing.add(r);
                out.printf("routing %-12s hit rate %.4f  prefill tokens saved %,d  busiest pod %d requests (%.1f s)%n",
                    policy, r.hitRate(), r.tokensSaved(), r.maxPodRequests(), r.seconds());
            }
            final TracePlan plan = TracePlan.build(trace, o.pods, o.blockSize, o.budget,
                IndexWriterContext.Configuration.MAX_CHAIN_LENGTH_DEFAULT, o.seed, o.choice.encoder());
            out.printf("replay plan (random split): %,d block ops = %,d queried + %,d stored + %,d removed; "
                    + "%.1f MB of %s batches; trace span %.1f s%n", plan.blockOps(), plan.blocksQueried(),
                plan.blocksStored(), plan.blocksRemoved(), plan.payloadBytes() / 1e6,
                TransportChoice.AERON.equals(o.transport) ? "SBE" : "vLLM", plan.spanMs() / 1e3);
            final List<TraceReplay.Point> points = new ArrayList<>();
            if (!o.skipReplay) {
                int run = 0;
                for (final long w : o.windowsMs) {
                    final TraceReplay.Point p = TraceReplay.run(plan, w, o.choice, scratch, run++, out,
                        o.daemonArgs);
                    points.add(p);
                    out.printf("window %6d ms: offered %.2f M ops/s, achieved %.2f M ops/s, writer lag %.0f ms, "
                            + "publisher lag %.0f ms, %s; router %s%n", w, p.offeredOpsPerS() / 1e6,
                        p.blockOpsPerS() / 1e6, p.writerLagMs(), p.publisherLagMs(), p.valid() ? "valid" : "INVALID",
                        p.router());
                }
            }
            final Json json = json(o, trace.size(), plan, points, routing);
            json.put("seconds", Math.round((System.nanoTime() - started) / 1e8) / 10.0);
            // The JSON line first: a chart that fails to draw must not lose the figures.
            if (o.json) {
                out.println(json);
                out.flush();
            }
            if (points.isEmpty()) {
                out.println("report: none (--no-replay: no sweep to chart)");
                return json;
            }
            final Path report = TraceReport.write(o.out, traceName + ", " + trace.size() + " requests, " + o.pods
                + " pods, " + o.choice.kind() + ", " + LocalDate.now() + ", "
                + Runtime.getRuntime().availableProcessors() + " CPUs", points, routing, json.toString());
            out.println("report: " + report.toAbsolutePath());
            return json;
        } finally {
            try (var files = Files.walk(scratch)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    /**
     * The headline is the fastest valid point (the knee: the highest offered load the writer kept up with); with
     * no valid point, the slowest one, and valid false.
     */
    static Json json(final Options o, final int requests, final TracePlan plan, final List<TraceReplay.Point> points,
        final List<RoutingSim.Result> routing) {
        TraceReplay.Point head = null;
        for (final TraceReplay.Point p : points) {
            if (p.valid() && (head == null || p.offeredOpsPerS() > head.offeredOpsPerS())) {
                head = p;
            }
        }
        final boolean valid = head != null;
        if (head == null) {
            for (final TraceReplay.Point p : points) {
                if (head == null || p.offeredOpsPerS() < head.offeredOpsPerS()) {
                    head = p;
                }
            }
        }
        final Json json = new Json().put("valid", valid).put("transport", o.choice.kind());
        if (head != null) {
            final String r = head.router();
            json.put("block_ops_per_s", Math.round(head.blockOpsPerS()))
                .put("offered_ops_per_s", Math.round(head.offeredOpsPerS()))
                .put("window_ms", head.windowMs())
                .put("index", new Json().put("entries_at_end", (long) TraceReport.num(r, "index_entries"))
                    .put("file_bytes", (long) TraceReport.num(r, "index_bytes")))
                .put("query", new Json().put("p50_ns", (long) TraceReport.num(r, "query_p50_ns"))
                    .put("p99_ns", (long) TraceReport.num(r, "query_p99_ns"))
                    .put("busy", (long) TraceReport.num(r, "busy"))
                    .put("keys", (long) TraceReport.num(r, "keys_queried")))
                .put("event_to_visible", new Json().put("p50_us", TraceReport.num(r, "e2v_p50_us"))
                    .put("p99_us", TraceReport.num(r, "e2v_p99_us"))
                    .put("samples", (long) TraceReport.num(r, "e2v_samples"))
                    .put("lost", (long) TraceReport.num(r, "probes_lost")))
                .put("daemon", head.daemon().json());
        }
        final Json policies = new Json();
        for (final RoutingSim.Result r : routing) {
            policies.put(r.policy(), r.json());
        }
        json.put("routing", policies);
        final StringBuilder sweep = new StringBuilder("[");
        for (final TraceReplay.Point p : points) {
            if (sweep.length() > 1) {
                sweep.append(", ");
            }
            sweep.append(new Json().put("window_ms", p.windowMs())
                .put("offered_ops_per_s", Math.round(p.offeredOpsPerS()))
                .put("block_ops_per_s", Math.round(p.blockOpsPerS()))
                .put("writer_lag_ms", p.writerLagMs()).put("publisher_lag_ms", p.publisherLagMs())
                .put("valid", p.valid())
                .put("query_p99_ns", (long) TraceReport.num(p.router(), "query_p99_ns"))
                .put("e2v_p99_us", TraceReport.num(p.router(), "e2v_p99_us"))
                .put("daemon", p.daemon().json()));
        }
        json.putRaw("sweep", sweep.append(']').toString());
        json.put("workload", new Json().put("requests", requests).put("pods", o.pods).put("block_size", o.blockSize)
            .put("budget_blocks", o.budget).put("seed", o.seed).put("blocks_queried", plan.blocksQueried())
            .put("blocks_stored", plan.blocksStored()).put("blocks_removed", plan.blocksRemoved())
            .put("block_ops", plan.blockOps())
            .put("blocks_reused_random_split", plan.blocksReused()).put("batch_bytes", plan.payloadBytes()));
        return json;
    }
}
