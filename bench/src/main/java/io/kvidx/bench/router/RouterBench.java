package io.kvidx.bench.router;

import io.kvidx.bench.BenchOptions;
import io.kvidx.bench.Json;
import io.kvidx.bench.trace.TraceFile;
import io.kvidx.bench.trace.TraceRequest;
import io.kvidx.router.RouterConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code kvidx bench router}: {@code kvidx router} measured end to end.
 *
 * <ul>
 *   <li><b>A. Hit rate, prediction, TTFT</b> ({@link E2eBench}): the Mooncake conversation trace replayed as token-id
 *   completions through the router in front of mock vLLM engines that keep real LRU prefix caches and publish real
 *   KV events to a kvidx daemon; per policy: the engines' prefix hit rate, the router's predicted cached prefix
 *   against the engines' actual one, client-side TTFT, fallback decisions.</li>
 *   <li><b>B. Overhead</b> ({@link OverheadBench}): latency added by the router over a direct call, at fixed offered
 *   rates, next to nginx and a JDK-only proxy in front of the same fast upstream.</li>
 * </ul>
 * Prints a table and, last, one JSON line. Every process it starts is stopped when it ends (or is killed).
 */
public final class RouterBench {
    /** Default mock engines. */
    public static final int ENGINES_DEFAULT = 16;
    /** Fewest engines a run may have (tests may use fewer through {@link Options#parse(String[], int)}). */
    public static final int ENGINES_MIN = 16;
    /** Most engines. */
    public static final int ENGINES_MAX = 32;
    /** Default trace requests replayed (the first ones by time): 265 s of trace, about 35 s per policy at 8x. */
    public static final int REQUESTS_DEFAULT = 800;
    /** Default trace time / replay time. */
    public static final double SPEEDUP_DEFAULT = 8;
    /**
     * Default prefix-cache capacity per engine, blocks: 8,192 blocks of 16 tokens (131,072 tokens). The default
     * replay's distinct blocks need about 29,000 per engine when spread evenly, so the LRU evicts.
     */
    public static final int NUM_BLOCKS_DEFAULT = 8_192;
    /** Default engine (and index) block size, tokens. */
    public static final int BLOCK_SIZE_DEFAULT = 16;
    /** Default simulated prefill time per uncached token, microseconds. */
    public static final int PREFILL_US_PER_TOKEN_DEFAULT = 20;
    /** Default longest prompt sent (longer trace prompts are cut, as a max model length would). */
    public static final int MAX_PROMPT_TOKENS_DEFAULT = 32_768;
    /** Default most requests in flight in part A. */
    public static final int CONCURRENCY_DEFAULT = 64;
    /** Default offered rates of part B, requests/s. */
    public static final double[] RATES_DEFAULT = {1_000, 10_000};
    /** Default measurement per target, rate and round in part B, seconds. */
    public static final double DURATION_S_DEFAULT = 4;
    /** Default rounds of part B. */
    public static final int ROUNDS_DEFAULT = 3;
    /** The router's event loops ({@link RouterConfig#THREADS_DEFAULT}); nginx gets as many workers. */
    static final int ROUTER_THREADS = RouterConfig.THREADS_DEFAULT;
    /** Goal: the router's added p50 at 1,000 requests/s, microseconds. */
    static final double GOAL_P50_ADDED_US = 100;
    /** Goal: the router's added p99 at most nginx's added p99 plus this, microseconds. */
    static final double GOAL_P99_OVER_NGINX_US = 100;
    /** The fast upstream's answer (a vLLM-shaped completion; no single quote or dollar: nginx quotes it). */
    static final String ANSWER = "{\"id\":\"cmpl-bench\",\"object\":\"text_completion\",\"created\":0,\"model\":\""
        + Fleet.MODEL + "\",\"choices\":[{\"index\":0,\"text\":\" tok0\",\"logprobs\":null,\"finish_reason\":"
        + "\"length\",\"stop_reason\":null}],\"usage\":{\"prompt_tokens\":2500,\"total_tokens\":2501,"
        + "\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":0}}}";

    private RouterBench() {
    }

    /** Parsed options (picocli; {@link #usage()} lists them). */
    @Command(name = "router")
    static final class Options {
        @Option(names = "--engines")
        int engines = ENGINES_DEFAULT;
        @Option(names = "--requests")
        int requests = REQUESTS_DEFAULT;
        @Option(names = "--speedup")
        double speedup = SPEEDUP_DEFAULT;
        @Option(names = "--policies", split = ",")
        List<String> policies = new ArrayList<>(RouterConfig.POLICIES);
        @Option(names = "--rates", split = ",")
        double[] rates = RATES_DEFAULT;
        @Option(names = "--duration-s")
        double durationS = DURATION_S_DEFAULT;
        @Option(names = "--rounds")
        int rounds = ROUNDS_DEFAULT;
        @Option(names = "--proxies", split = ",")
        List<String> proxies = new ArrayList<>(OverheadBench.PROXIES);
        @Option(names = "--skip-e2e")
        boolean skipE2e;
        @Option(names = "--skip-overhead")
        boolean skipOverhead;
        @Option(names = "--trace")
        Path trace;
        @Option(names = "--num-blocks")
        int numBlocks = NUM_BLOCKS_DEFAULT;
        @Option(names = "--block-size")
        int blockSize = BLOCK_SIZE_DEFAULT;
        @Option(names = "--prefill-us-per-token")
        int prefillUsPerToken = PREFILL_US_PER_TOKEN_DEFAULT;
        @Option(names = "--max-prompt-tokens")
        int maxPromptTokens = MAX_PROMPT_TOKENS_DEFAULT;
        @Option(names = "--concurrency")
        int concurrency = CONCURRENCY_DEFAULT;
        @Option(names = "--mock-engine")
        Path mockEngine;
        @Option(names = "--python")
        String python;
        @Option(names = "--nginx")
        String nginx;
        /** JVM flags for the kvidx router processes, after the bench's own ({@code -Xmx1g}): a collector, a heap. */
        @Option(names = "--router-jvm-arg")
        List<String> routerJvmArgs = new ArrayList<>();
        @Option(names = {"-h", "--help"})
        boolean help;

        /**
         * @param args       command arguments (after {@code router}).
         * @param minEngines fewest engines allowed ({@link #ENGINES_MIN}; tests pass fewer).
         * @return the options.
         * @throws IllegalArgumentException on a bad option.
         */
        static Options parse(final String[] args, final int minEngines) {
            final Options o = BenchOptions.parseInto(new Options(), args);
            if (o.help) {
                throw new IllegalArgumentException("options");
            }
            if (o.engines < minEngines || o.engines > ENGINES_MAX) {
                throw new IllegalArgumentException("--engines must be in " + minEngines + ".." + ENGINES_MAX + ": "
                    + o.engines);
            }
            if (o.requests < 1 || o.speedup <= 0 || o.concurrency < 1 || o.numBlocks < 16 || o.rounds < 1
                || o.durationS <= 0 || o.prefillUsPerToken < 0) {
                throw new IllegalArgumentException("--requests, --speedup, --concurrency, --rounds, --duration-s must"
                    + " be > 0, --num-blocks >= 16, --prefill-us-per-token >= 0");
            }
            if (o.blockSize < 1 || TraceRequest.TRACE_BLOCK_TOKENS % o.blockSize != 0
                || o.maxPromptTokens < o.blockSize) {
                throw new IllegalArgumentException("--block-size must divide 512 and --max-prompt-tokens must be at"
                    + " least one block");
            }
            for (final String p : o.policies) {
                if (!RouterConfig.POLICIES.contains(p)) {
                    throw new IllegalArgumentException("unknown policy '" + p + "' (" + RouterConfig.POLICIES + ")");
                }
            }
            for (final String p : o.proxies) {
                if (!OverheadBench.PROXIES.contains(p)) {
                    throw new IllegalArgumentException("unknown proxy '" + p + "' (" + OverheadBench.PROXIES + ")");
                }
            }
            for (final double r : o.rates) {
                if (r <= 0) {
                    throw new IllegalArgumentException("--rates must be > 0: " + r);
                }
            }
            if (o.python == null) {
                o.python = Files.isExecutable(Path.of("/usr/bin/python3")) ? "/usr/bin/python3" : "python3";
            }
            if (o.mockEngine == null) {
                o.mockEngine = findMockEngine();
            }
            if (o.mockEngine == null || !Files.isRegularFile(o.mockEngine)) {
                throw new IllegalArgumentException("cannot find router/mock-engine/kvidx_mock_engine.py (run from the"
                    + " checkout or give --mock-engine PATH)");
            }
            return o;
        }
    }

    /** @return the mock engine of the checkout the bench jar or the working directory is in, or null. */
    static Path findMockEngine() {
        final Path rel = Path.of("router", "mock-engine", "kvidx_mock_engine.py");
        final List<Path> roots = new ArrayList<>();
        final Path jar = Path.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator)[0])
            .toAbsolutePath();
        for (Path p = jar.getParent(); p != null; p = p.getParent()) {
            roots.add(p);
        }
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            roots.add(p);
        }
        for (final Path root : roots) {
            if (Files.isRegularFile(root.resolve(rel))) {
                return root.resolve(rel);
            }
        }
        return null;
    }

    /** @return usage text. */
    public static String usage() {
        return """
            usage: kvidx bench router [options]
              A. the Mooncake trace through kvidx router in front of mock vLLM engines, per policy: prefix hit rate,
                 predicted vs actual cached tokens, TTFT, fallbacks (fresh engines, daemon cell and router per policy)
              B. latency added by kvidx router, nginx and a JDK proxy over a direct call, open loop at fixed rates
            options: --engines N (16; 16..32)  --requests N (800, the trace's first)  --speedup X (8)
                     --policies cache-aware,approximate,round-robin,least-load  --concurrency N (64)
                     --num-blocks BLOCKS (8192 per engine: the default replay evicts)  --block-size B (16)
                     --prefill-us-per-token US (20)  --max-prompt-tokens N (32768)  --trace FILE (Mooncake format)
                     --rates R,R (1000,10000 requests/s)  --duration-s S (4, per target, rate and round)
                     --rounds N (3)  --proxies kvidx,nginx,jdk  --skip-e2e  --skip-overhead
                     --router-jvm-arg FLAG (repeatable: the router processes' JVM flags after -Xmx1g, e.g.
                     --router-jvm-arg=-XX:+UseZGC)
                     --mock-engine PATH (router/mock-engine/kvidx_mock_engine.py)  --python PATH (/usr/bin/python3:
                     needs zmq, msgpack, xxhash)  --nginx PATH (/usr/sbin/nginx; without nginx the upstream is a
                     Netty one and the nginx proxy is left out)""";
    }

    /**
     * @param args command arguments (after {@code router}).
     * @param out  where progress, the table and the JSON line go.
     * @return the JSON report.
     * @throws IOException when the trace cannot be read or a process does not come up.
     * @throws InterruptedException when interrupted.
     */
    public static Json run(final String[] args, final PrintStream out) throws IOException, InterruptedException {
        return run(Options.parse(args, ENGINES_MIN), out);
    }

    static Json run(final Options o, final PrintStream out) throws IOException, InterruptedException {
        final long started = System.nanoTime();
        final double load = loadAverage();
        final int cpus = Runtime.getRuntime().availableProcessors();
        out.printf(Locale.ROOT, "kvidx bench router: %d CPUs, load average %.2f at start%n", cpus, load);
        final Path scratch = Files.createTempDirectory(Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm")
            : Path.of(System.getProperty("java.io.tmpdir")), "kvidx-router-bench-");
        final Json json = new Json().put("bench", "router").put("cpus", cpus).put("load_average_at_start", load)
            .put("router_jvm_args", String.join(" ", o.routerJvmArgs));
        if (!o.routerJvmArgs.isEmpty()) {
            out.printf(Locale.ROOT, "router JVM flags: -Xmx1g %s%n", String.join(" ", o.routerJvmArgs));
        }
        final StringBuilder table = new StringBuilder();
        final List<Exception> failures = new ArrayList<>();
        // Killed before the end: the child processes' own hook stops them; this one removes the scratch files.
        final Thread cleanup = new Thread(() -> deleteTree(scratch), "kvidx-bench-router-scratch");
        Runtime.getRuntime().addShutdownHook(cleanup);
        try {
            if (!o.skipE2e) {
                json.put("e2e", e2e(o, scratch, out, table, failures));
            }
            if (!o.skipOverhead) {
                out.printf(Locale.ROOT, "B. overhead: targets direct,%s; rates %s/s; %d round(s) of %.1f s%n",
                    String.join(",", o.proxies), rates(o.rates), o.rounds, o.durationS);
                try {
                    final OverheadBench.Result r = OverheadBench.run(o, scratch.resolve("overhead"), out);
                    final Json j = OverheadBench.json(r).put("rounds", o.rounds).put("duration_s", o.durationS);
                    overheadTable(r, o, table, j);
                    json.put("overhead", j);
                } catch (final IOException | RuntimeException ex) {
                    failures.add(ex);
                    json.put("overhead", new Json().put("error", ex.toString()));
                }
            }
        } finally {
            Runtime.getRuntime().removeShutdownHook(cleanup);
            deleteTree(scratch);
        }
        json.put("seconds", Math.round((System.nanoTime() - started) / 1e8) / 10.0);
        // What was measured is printed even when a part failed; the failure is thrown after.
        out.print(table);
        out.println(json);
        if (!failures.isEmpty()) {
            throw new IOException("a part of the bench failed: " + failures.get(0).getMessage(), failures.get(0));
        }
        return json;
    }

    private static Json e2e(final Options o, final Path scratch, final PrintStream out, final StringBuilder table,
        final List<Exception> failures) throws IOException, InterruptedException {
        List<TraceRequest> trace = o.trace == null ? TraceFile.loadDefault() : TraceFile.load(o.trace);
        if (trace.size() > o.requests) {
            trace = trace.subList(0, o.requests);
        }
        final List<E2eBench.Prompt> prompts = E2eBench.prompts(trace, o.blockSize, o.maxPromptTokens, o.speedup);
        if (prompts.isEmpty()) {
            throw new IllegalArgumentException("the trace holds no request with a prompt");
        }
        long tokens = 0;
        for (final E2eBench.Prompt p : prompts) {
            tokens += p.tokens();
        }
        final String traceName = o.trace == null ? "mooncake-conversation" : o.trace.getFileName().toString();
        out.printf(Locale.ROOT, "A. end to end: %s, %d requests (%,d prompt tokens), %.1f s at speed-up %.1f; %d mock"
                + " engines of %d blocks x %d tokens, %d us/uncached token; at most %d in flight%n", traceName,
            prompts.size(), tokens, prompts.get(prompts.size() - 1).atNs() / 1e9, o.speedup, o.engines, o.numBlocks,
            o.blockSize, o.prefillUsPerToken, o.concurrency);
        final Json policies = new Json();
        final List<E2eBench.PolicyResult> results = new ArrayList<>();
        for (final String policy : o.policies) {
            final E2eBench.PolicyResult r;
            try {
                r = E2eBench.run(policy, prompts, o, scratch.resolve("e2e-" + policy), out);
            } catch (final IOException | RuntimeException ex) {
                out.println("  " + policy + " failed: " + ex.getMessage());
                failures.add(ex);
                policies.put(policy, new Json().put("error", ex.toString()));
                continue;
            }
            results.add(r);
            policies.put(policy, r.json());
            out.printf(Locale.ROOT, "  %-12s hit rate %.4f, TTFT p50 %.1f ms, %d error(s), %.1f s%n", policy,
                r.hitRate(), r.ttftP50Ms(), r.errors(), r.seconds());
        }
        table.append(String.format(Locale.ROOT, "%nA. end to end (%s, %d requests, %d engines x %d blocks, speed-up"
                + " %.1f): actual hits = engines' cached_tokens; predicted = router's x-kvidx-predicted-tokens%n",
            traceName, prompts.size(), o.engines, o.numBlocks, o.speedup));
        table.append(String.format(Locale.ROOT, "%-12s %8s %9s %7s %7s %7s %8s %10s %10s %9s %8s %9s %6s%n",
            "policy", "hit rate", "MAE tok", "exact%", "over%", "under%", "capped%", "TTFT p50", "TTFT p99",
            "fallback", "busiest", "evicted", "errors"));
        for (final E2eBench.PolicyResult r : results) {
            table.append(String.format(Locale.ROOT, "%-12s %8.4f %9.1f %7.1f %7.1f %7.1f %8.1f %8.1fms %8.1fms %9d"
                    + " %7.1f%% %9d %6d%n", r.policy(), r.hitRate(), r.maeTokens(), r.exactPct(), r.overPct(),
                r.underPct(), r.cappedExactPct(), r.ttftP50Ms(), r.ttftP99Ms(), r.fallbacks(),
                100 * r.busiestShare(), r.evicted(), r.errors()));
        }
        table.append("""
              capped%: exact once the prediction is capped at vLLM's largest possible hit (the full blocks before the
                last prompt token). The prediction is the index's depth for the chosen pod when it was called,
                whatever the policy: approximate routes on the router's own pick overlay, not the index, but its
                header still comes from the index; round-robin and least-load compute no keys, so they predict 0.
              busiest: share of requests on the busiest pod; evicted: blocks the engines evicted (daemon's count).
            """);
        return new Json().put("trace", traceName).put("requests", prompts.size()).put("prompt_tokens", tokens)
            .put("engines", o.engines).put("num_blocks", o.numBlocks).put("block_size", o.blockSize)
            .put("prefill_us_per_token", o.prefillUsPerToken).put("speedup", o.speedup)
            .put("max_prompt_tokens", o.maxPromptTokens).put("concurrency", o.concurrency)
            .put("policies", policies);
    }

    private static void overheadTable(final OverheadBench.Result r, final Options o, final StringBuilder table,
        final Json json) {
        table.append(String.format(Locale.ROOT, "%nB. overhead (upstream %s; token-id bodies of %d-%d tokens; medians"
                + " of %d round(s) x %.1f s; open loop, latency from the intended send time)%n", r.upstream(),
            OverheadBench.MIN_TOKENS, OverheadBench.MAX_TOKENS, o.rounds, o.durationS));
        table.append(String.format(Locale.ROOT, "%8s %-7s %10s %10s %11s %11s %12s %8s%n", "rate/s", "target",
            "p50 us", "p99 us", "added p50", "added p99", "achieved/s", "errors"));
        for (final Map.Entry<Double, Map<String, OverheadBench.Point>> e : r.points().entrySet()) {
            final OverheadBench.Point direct = e.getValue().get("direct");
            for (final OverheadBench.Point p : e.getValue().values()) {
                final boolean isDirect = p == direct;
                final boolean short0 = p.achieved() < 0.95 * p.rate();
                table.append(String.format(Locale.ROOT, "%8.0f %-7s %10.1f %10.1f %11s %11s %12.0f %8d%s%n",
                    p.rate(), p.target(), p.p50Us(), p.p99Us(),
                    isDirect ? "-" : String.format(Locale.ROOT, "%.1f", p.p50Us() - direct.p50Us()),
                    isDirect ? "-" : String.format(Locale.ROOT, "%.1f", p.p99Us() - direct.p99Us()), p.achieved(),
                    p.errors(), short0 ? "  (did not sustain the rate)" : ""));
            }
        }
        for (final String note : r.notes()) {
            table.append("  ").append(note).append('\n');
        }
        if (r.fallbacks() >= 0) {
            table.append(String.format(Locale.ROOT, "  kvidx router decisions: %d with the index, %d by the fallback%n",
                r.indexed(), r.fallbacks()));
        }
        final Json goal = new Json();
        final StringBuilder line = new StringBuilder("goal: ");
        final double low = r.points().keySet().stream().min(Comparator.naturalOrder()).orElse(Double.NaN);
        final Map<String, OverheadBench.Point> atLow = r.points().get(low);
        if (atLow != null && atLow.containsKey("kvidx")) {
            final double added = atLow.get("kvidx").p50Us() - atLow.get("direct").p50Us();
            final boolean ok = added <= GOAL_P50_ADDED_US;
            goal.put("p50_added_rate", low).put("p50_added_us", added).put("p50_added_le_100us", ok);
            line.append(String.format(Locale.ROOT, "kvidx added p50 at %.0f/s <= %.0f us: %s (%.1f us)%s", low,
                GOAL_P50_ADDED_US, ok ? "MET" : "NOT MET", added, low == 1_000 ? "" : " [goal is at 1000/s]"));
        }
        for (final Map.Entry<Double, Map<String, OverheadBench.Point>> e : r.points().entrySet()) {
            final Map<String, OverheadBench.Point> m = e.getValue();
            if (m.containsKey("kvidx") && m.containsKey("nginx")) {
                final double direct = m.get("direct").p99Us();
                final double kvidx = m.get("kvidx").p99Us() - direct;
                final double nginx = m.get("nginx").p99Us() - direct;
                final boolean ok = kvidx <= nginx + GOAL_P99_OVER_NGINX_US;
                goal.put("p99_added_le_nginx_plus_100us_at_" + Math.round(e.getKey()), ok);
                line.append(String.format(Locale.ROOT, "; kvidx added p99 <= nginx's + %.0f us at %.0f/s: %s (%.1f vs"
                    + " %.1f us)", GOAL_P99_OVER_NGINX_US, e.getKey(), ok ? "MET" : "NOT MET", kvidx, nginx));
            }
        }
        table.append(line.length() > "goal: ".length() ? line : "goal: not evaluated (kvidx router not measured)")
            .append('\n');
        json.put("goal", goal);
    }

    private static String rates(final double[] rates) {
        final StringBuilder sb = new StringBuilder();
        for (final double r : rates) {
            sb.append(sb.length() == 0 ? "" : ",").append(Math.round(r));
        }
        return sb.toString();
    }

    private static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg"), StandardCharsets.US_ASCII)
                .split(" ")[0]);
        } catch (final IOException | RuntimeException ex) {
            return Double.NaN;
        }
    }

    private static void deleteTree(final Path dir) {
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (final IOException | RuntimeException ex) {
            System.err.println("kvidx bench router: cannot delete " + dir + ": " + ex);
        }
    }
}
