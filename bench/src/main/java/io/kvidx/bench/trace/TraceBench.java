package io.kvidx.bench.trace;

import io.kvidx.bench.BenchOptions;
import io.kvidx.bench.Json;
import io.kvidx.daemon.config.DaemonConfiguration;
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
 *
 * <p>{@code --transport inproc} applies the same plan in this process, to a writer pool with no transport, daemon or
 * router process ({@link InprocReplay}); {@code --writers N} sets the writer threads, of that pool or of the daemon
 * ({@code --writers=N}). {@code --scale K} replays K copies of the trace in disjoint hash spaces and pods
 * ({@link TracePlan}): K times the load in the same windows.
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
    /** Most pods a replay may have (the daemon's largest cell width), all copies of {@code --scale} together. */
    public static final int PODS_MAX = 256;
    /**
     * The reference of the goal (docs/perf.md, "Write path"): NVIDIA Dynamo's ConcurrentRadixTree with 8 event
     * threads, in process, sustained 19.8 M block ops/s on the full trace (2026-11-27, a 16-core Intel Xeon host).
     */
    public static final double GOAL_REFERENCE_OPS_PER_S = 19.8e6;
    /** Writers (and at least twice the cores) the goal is stated for. */
    public static final int GOAL_WRITERS = 8;
    /** Most requests of the default warm-up (a quarter of the trace when that is fewer). */
    public static final int WARM_UP_REQUESTS_MAX = 1_000;
    /** Routing replicas taking turns in the replicas' hit-rate runs ({@code --routing-replicas}; 1: none). */
    public static final int ROUTING_REPLICAS_DEFAULT = 3;
    /** Default writer threads (the daemon's default). */
    public static final int WRITERS_DEFAULT = DaemonConfiguration.WRITERS_DEFAULT;

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
        @Option(names = "--writers")
        int writers = WRITERS_DEFAULT;
        @Option(names = "--scale")
        int scale = 1;
        @Option(names = "--live-routing-window-ms")
        long liveRoutingWindowMs;
        @Option(names = "--no-live-routing")
        boolean noLiveRouting;
        @Option(names = "--warm-up-requests")
        int warmUpRequests = -1;
        @Option(names = "--routing-replicas")
        int routingReplicas = ROUTING_REPLICAS_DEFAULT;
        @Option(names = "--out")
        Path out = defaultResults();
        /** The router answers the previous request, untimed, before each timed query (its caches warm). */
        @Option(names = "--busy-router")
        boolean busyRouter;
        /** Queries the router process makes on a private index before the replay, to compile its query code. */
        @Option(names = "--router-warm-up-queries")
        long routerWarmUpQueries = TraceRouter.Options.WARM_UP_QUERIES_DEFAULT;
        /** Milliseconds by which each request's query comes before its events (a prefill's time); 0 by default. */
        @Option(names = "--query-lead-ms")
        long queryLeadMs;
        /** Where the run's index cells go (a huge-page tmpfs, e.g.); /dev/shm when the host has it. */
        @Option(names = "--scratch")
        Path scratch;
        @Option(names = {"-h", "--help"})
        boolean help;
        TransportChoice choice;

        static Options parse(final String[] args) {
            for (int i = 0; i < args.length; i++) {
                // Checked before parsing: picocli would refuse the value (it looks like this command's --writers).
                final String value = args[i].startsWith("--daemon-arg=") ? args[i].substring(13)
                    : args[i].equals("--daemon-arg") && i + 1 < args.length ? args[i + 1] : "";
                if (value.equals("--writers") || value.startsWith("--writers=")) {
                    throw new IllegalArgumentException("give the daemon's writers with --writers N, not --daemon-arg "
                        + value + " (--writers N reaches the daemon as --writers=N, or sizes the in-process pool)");
                }
            }
            final Options o = BenchOptions.parseInto(new Options(), args);
            if (o.help) {
                throw new IllegalArgumentException("options");
            }
            if (o.routerWarmUpQueries < 0 || o.queryLeadMs < 0) {
                throw new IllegalArgumentException("--router-warm-up-queries and --query-lead-ms must be 0 or more: "
                    + o.routerWarmUpQueries + ", " + o.queryLeadMs);
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
            if (o.routingReplicas < 1 || o.routingReplicas > 16) {
                throw new IllegalArgumentException("--routing-replicas must be in 1..16: " + o.routingReplicas);
            }
            if (o.writers < 1 || o.writers > DaemonConfiguration.WRITERS_MAX) {
                throw new IllegalArgumentException("--writers must be in 1.." + DaemonConfiguration.WRITERS_MAX + ": "
                    + o.writers);
            }
            if (o.liveRoutingWindowMs < 0 || o.liveRoutingWindowMs > 0 && o.liveRoutingWindowMs < 100) {
                throw new IllegalArgumentException("--live-routing-window-ms must be >= 100: " + o.liveRoutingWindowMs);
            }
            if (o.scale < 1 || (long) o.scale * o.pods > PODS_MAX) {
                throw new IllegalArgumentException("--scale must be >= 1 and --scale x --pods at most " + PODS_MAX
                    + " (copy c's pod p is pod c x pods + p): --scale " + o.scale + ", --pods " + o.pods);
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
            if (o.scratch != null && !Files.isDirectory(o.scratch)) {
                throw new IllegalArgumentException("--scratch must be an existing directory: " + o.scratch);
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
        return "usage: kvidx bench trace [--trace FILE] [--pods N] [--quick] [--json] [--transport zmq|aeron|inproc]"
            + " [--aeron-channel CHANNEL] [--block-size B] [--budget BLOCKS] [--requests N] [--windows-ms W,W,...]"
            + " [--sockets N] [--seed S] [--out DIR] [--no-replay] [--daemon-arg ARG]... [--writers N]"
            + " [--scale K] [--live-routing-window-ms W] [--no-live-routing] [--warm-up-requests N]"
            + " [--routing-replicas R] [--scratch DIR] [--busy-router]"
            + " [--router-warm-up-queries N] [--query-lead-ms L]";
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
                + "seed %d, events: %s, %d writer%s, scale %d, %d CPUs%n", traceName, trace.size(), o.pods,
            o.blockSize, o.budget, o.seed, o.choice.describe(), o.writers, o.writers == 1 ? "" : "s", o.scale,
            Runtime.getRuntime().availableProcessors());
        final Path scratch = Files.createTempDirectory(o.scratch != null ? o.scratch
            : Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm")
            : Path.of(System.getProperty("java.io.tmpdir")), "kvidx-trace-");
        try {
            final List<RoutingSim.Result> routing = new ArrayList<>();
            long liveWindowMs = 0;
            double livePublisherLagMs = 0;
            for (final String policy : RoutingSim.POLICIES) {
                final RoutingSim.Result r = RoutingSim.run(trace, o.pods, o.blockSize, o.budget, policy, scratch);
                routing.add(r);
                out.printf("routing %-12s hit rate %.4f  prefill tokens saved %,d  busiest pod %d requests (%.1f s)%n",
                    policy, r.hitRate(), r.tokensSaved(), r.maxPodRequests(), r.seconds());
            }
            if (o.routingReplicas > 1) {
                // Replicas taking turns: exact events lose nothing; an approximate tree per replica does.
                for (final String policy : List.of("cache_aware", "approximate")) {
                    final RoutingSim.Result r = RoutingSim.run(trace, o.pods, o.blockSize, o.budget, policy, scratch,
                        o.routingReplicas);
                    routing.add(r);
                    out.printf("routing %-12s hit rate %.4f  prefill tokens saved %,d  busiest pod %d requests (%d "
                            + "replicas taking turns, %.1f s)%n", r.policy(), r.hitRate(), r.tokensSaved(),
                        r.maxPodRequests(), o.routingReplicas, r.seconds());
                }
            }
            final TracePlan plan = TracePlan.build(trace, o.pods, o.blockSize, o.budget,
                IndexWriterContext.Configuration.MAX_CHAIN_LENGTH_DEFAULT, o.seed, o.choice.encoder(), o.scale);
            out.printf("replay plan (random split%s): %,d requests over %d pods, %,d block ops = %,d queried + %,d "
                    + "stored + %,d removed; %.1f MB of %s batches; trace span %.1f s%n", o.scale == 1 ? ""
                    : ", " + o.scale + " copies in disjoint hash spaces", plan.requests(), plan.pods(),
                plan.blockOps(), plan.blocksQueried(), plan.blocksStored(), plan.blocksRemoved(),
                plan.payloadBytes() / 1e6, TransportChoice.AERON.equals(o.transport) ? "SBE" : "vLLM",
                plan.spanMs() / 1e3);
            if (o.choice.inproc() && !o.daemonArgs.isEmpty()) {
                out.println("--transport inproc starts no daemon: --daemon-arg " + o.daemonArgs + " not used");
            }
            final int warmUp = o.warmUpRequests >= 0 ? o.warmUpRequests
                : Math.min(WARM_UP_REQUESTS_MAX, trace.size() / 4);
            final TracePlan warm = o.skipReplay ? null : TraceReplay.warmUpPlan(trace, warmUp, plan.pods(),
                o.blockSize, o.budget, IndexWriterContext.Configuration.MAX_CHAIN_LENGTH_DEFAULT, o.seed,
                o.choice.encoder());
            if (warm != null) {
                out.printf("warm-up before each point: the first %,d requests in a hash space of their own (%,d block"
                    + " ops), then every pod cleared; not timed%n", warm.requests(), warm.blockOps());
            }
            final List<String> daemonArgs = new ArrayList<>();
            daemonArgs.add("--writers=" + o.writers);
            daemonArgs.addAll(o.daemonArgs);
            final List<TraceReplay.Point> points = new ArrayList<>();
            if (!o.skipReplay) {
                int run = 0;
                for (final long w : o.windowsMs) {
                    final TraceReplay.Point p = o.choice.inproc()
                        ? InprocReplay.run(plan, w, o.writers, scratch, run++, out, warm)
                        : TraceReplay.run(plan, w, o.choice, scratch, run++, out, daemonArgs, warm,
                            new TraceRouter.Options(o.busyRouter, o.routerWarmUpQueries, o.queryLeadMs));
                    points.add(p);
                    out.printf("window %6d ms: offered %.2f M ops/s, achieved %.2f M ops/s, writer lag %.0f ms, "
                            + "publisher lag %.0f ms, %s; %s; %s %s%n", w, p.offeredOpsPerS() / 1e6,
                        p.blockOpsPerS() / 1e6, p.writerLagMs(), p.publisherLagMs(), p.valid() ? "valid" : "INVALID",
                        p.stages().describe(), o.choice.inproc() ? "in-process" : "router", p.router());
                }
            }
            if (!o.skipReplay && !o.noLiveRouting && !o.choice.inproc()) {
                long window = o.liveRoutingWindowMs;
                for (final long w : o.windowsMs) {
                    window = o.liveRoutingWindowMs > 0 ? window : Math.max(window, w);
                }
                final LiveRouting.Result live = LiveRouting.run(trace, o.pods, o.blockSize, o.budget, window,
                    o.choice, scratch, out, daemonArgs);
                routing.add(live.routing());
                liveWindowMs = live.windowMs();
                livePublisherLagMs = live.publisherLagMs();
                out.printf("routing %-12s hit rate %.4f  prefill tokens saved %,d  busiest pod %d requests (routed "
                        + "from the live index over %s, trace squeezed into %.1f s, routed up to %.1f ms late)%n",
                    LiveRouting.POLICY, live.routing().hitRate(), live.routing().tokensSaved(),
                    live.routing().maxPodRequests(), o.choice.kind(), window / 1e3, live.publisherLagMs());
            }
            final Json json = json(o, trace.size(), plan, points, routing);
            json.put("warm_up_requests", warm == null ? 0 : warm.requests());
            final Json goal = goal(o, points);
            json.put("goal", goal);
            out.println("goal: " + goalLine(goal));
            if (liveWindowMs > 0) {
                json.put("live_routing", new Json().put("window_ms", liveWindowMs)
                    .put("routed_late_max_ms", livePublisherLagMs).put("transport", o.choice.kind()));
            }
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
                + " pods" + (o.scale == 1 ? "" : ", scale " + o.scale + " (" + plan.requests() + " requests over "
                + plan.pods() + " pods)") + ", " + o.choice.describe() + ", " + o.writers + " writer"
                + (o.writers == 1 ? "" : "s") + ", " + LocalDate.now() + ", "
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
     * The goal the write path is held to: through the real path with {@value #GOAL_WRITERS} writers, at least the
     * reference's sustained rate; in process, at least twice it. Judged only where the host has the cores for it
     * ({@value #GOAL_WRITERS} writers, twice as many CPUs, so that the publisher, transport and router have theirs);
     * elsewhere the per-writer rate is given and the goal is reported as not measurable here.
     */
    static Json goal(final Options o, final List<TraceReplay.Point> points) {
        double best = 0;
        for (final TraceReplay.Point p : points) {
            if (p.valid()) {
                best = Math.max(best, p.blockOpsPerS());
            }
        }
        final double target = o.choice.inproc() ? 2 * GOAL_REFERENCE_OPS_PER_S : GOAL_REFERENCE_OPS_PER_S;
        final int cpus = Runtime.getRuntime().availableProcessors();
        final boolean measurable = o.writers >= GOAL_WRITERS && cpus >= 2 * GOAL_WRITERS;
        return new Json().put("reference", "Dynamo ConcurrentRadixTree, 8 event threads, in process, 19.8 M ops/s")
            .put("target_ops_per_s", Math.round(target)).put("sustained_ops_per_s", Math.round(best))
            .put("per_writer_ops_per_s", Math.round(best / o.writers)).put("writers", o.writers).put("cpus", cpus)
            .put("measurable", measurable).put("met", measurable ? (Object) (best >= target) : null);
    }

    private static String goalLine(final Json goal) {
        final String s = goal.toString();
        final double target = TraceReport.num(s, "target_ops_per_s");
        final double best = TraceReport.num(s, "sustained_ops_per_s");
        final double perWriter = TraceReport.num(s, "per_writer_ops_per_s");
        final boolean measurable = s.contains("\"measurable\": true");
        return String.format(java.util.Locale.ROOT, "%.1f M block ops/s sustained (%.2f M per writer) against a"
            + " target of %.1f M (%s): %s", best / 1e6, perWriter / 1e6, target / 1e6,
            "Dynamo ConcurrentRadixTree, 8 event threads, 19.8 M ops/s" + (target > 2.5e7 ? ", x2 in process" : ""),
            !measurable ? "not measurable on this host (needs " + GOAL_WRITERS + " writers and " + 2 * GOAL_WRITERS
                + " CPUs; docs/perf.md gives the scaling model)" : best >= target ? "met" : "NOT met");
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
        final boolean routed = !o.choice.inproc();
        final Json json = new Json().put("valid", valid).put("transport", o.choice.kind()).put("writers", o.writers)
            .put("scale", o.scale);
        if (head != null) {
            final String r = head.router();
            json.put("block_ops_per_s", Math.round(head.blockOpsPerS()))
                .put("offered_ops_per_s", Math.round(head.offeredOpsPerS()))
                .put("window_ms", head.windowMs())
                .put("index", new Json().put("entries_at_end", (long) TraceReport.num(r, "index_entries"))
                    .put("file_bytes", (long) TraceReport.num(r, "index_bytes")))
                // In-process: no router process, so no query or event-to-visible timing (null, not 0).
                .put("query", !routed ? null : new Json().put("p50_ns", (long) TraceReport.num(r, "query_p50_ns"))
                    .put("p99_ns", (long) TraceReport.num(r, "query_p99_ns"))
                    .put("busy", (long) TraceReport.num(r, "busy"))
                    .put("keys", (long) TraceReport.num(r, "keys_queried"))
                    .put("busy_router", o.busyRouter)
                    .put("router_warm_up_queries", (long) TraceReport.num(r, "warm_up_queries"))
                    .put("lead_ms", o.queryLeadMs)
                    .putRaw("by_length", TraceReport.raw(r, "query_by_length")))
                .put("event_to_visible", !routed ? null : new Json().put("p50_us", TraceReport.num(r, "e2v_p50_us"))
                    .put("p99_us", TraceReport.num(r, "e2v_p99_us"))
                    .put("samples", (long) TraceReport.num(r, "e2v_samples"))
                    .put("lost", (long) TraceReport.num(r, "probes_lost")))
                .put("daemon", head.daemon().json())
                .put("stages", head.stages().json());
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
            sweep.append(new Json().put("window_ms", p.windowMs()).put("transport", o.choice.kind())
                .put("writers", o.writers)
                .put("offered_ops_per_s", Math.round(p.offeredOpsPerS()))
                .put("block_ops_per_s", Math.round(p.blockOpsPerS()))
                .put("writer_lag_ms", p.writerLagMs()).put("publisher_lag_ms", p.publisherLagMs())
                .put("valid", p.valid())
                .put("query_p99_ns", routed ? (Object) (long) TraceReport.num(p.router(), "query_p99_ns") : null)
                .put("e2v_p99_us", routed ? TraceReport.num(p.router(), "e2v_p99_us") : null)
                .put("daemon", p.daemon().json()).put("stages", p.stages().json()));
        }
        json.putRaw("sweep", sweep.append(']').toString());
        json.put("workload", new Json().put("requests", plan.requests()).put("trace_requests", requests)
            .put("scale", plan.copies()).put("pods", plan.pods()).put("pods_per_copy", plan.podsPerCopy())
            .put("block_size", o.blockSize)
            .put("budget_blocks", o.budget).put("seed", o.seed).put("blocks_queried", plan.blocksQueried())
            .put("blocks_stored", plan.blocksStored()).put("blocks_removed", plan.blocksRemoved())
            .put("block_ops", plan.blockOps())
            .put("blocks_reused_random_split", plan.blocksReused()).put("batch_bytes", plan.payloadBytes()));
        return json;
    }
}
