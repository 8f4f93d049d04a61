package io.kvidx.bench.epp;

import io.kvidx.bench.BenchOptions;
import io.kvidx.bench.Json;
import io.kvidx.bench.router.ChildProcesses;
import io.kvidx.bench.tokenize.BundledTokenizer;
import io.kvidx.client.json.MiniJson;
import io.kvidx.tokenize.HfTokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code kvidx bench epp}: the latency {@code kvidx epp} adds to each request through the gateway (gRPC round trips,
 * protobuf, the body's parse, the keys, the decision), measured as Envoy's ext_proc filter sees it.
 *
 * <p>This process writes an index with the daemon's {@link io.kvidx.daemon.index.IndexWriter} ({@link EppFixture}:
 * {@code pods} pods, prompts of each length held to varied depths, filler to a realistic size) and starts
 * {@code kvidx epp} as a child process ({@code io.kvidx.epp.EppCommand} from this class path, the same code as
 * {@code kvidx-epp.jar}; as {@code bench router} runs {@code kvidx router}: its own JVM, JIT and GC) on loopback,
 * mapping that index read-only. It checks that the picker picks each prompt's deepest holder, as the decision layer
 * does in this process, then drives it with {@link EnvoyLoad} (open loop, latency from each request's due time) at
 * each rate: token-id prompts of each length in BUFFERED mode (headers, their answer, the body, the pick), one
 * STREAMED (or full-duplex) variant, and one text-prompt figure (the picker tokenizes). Beside each figure: the same
 * load on {@link FloorPicker} (a gRPC server built as the picker's that answers at once: what gRPC, HTTP/2 and
 * protobuf cost here), the decision layer's own time on the same prompts and index ({@link DecisionTimer}), and the
 * picker's and the floor's CPU time per request. Prints a table and, with {@code --json}, one JSON line last.
 */
public final class EppBench {
    /** Default pods. */
    static final int PODS_DEFAULT = 32;
    /** Default distinct prompts per length, sent in turn. */
    static final int PROMPTS_DEFAULT = 32;
    /** Default distinct blocks in the index: 2^20 (the index file is about 32 MiB). */
    static final long INDEX_BLOCKS_DEFAULT = 1L << 20;
    /** Default token-id prompt lengths. */
    static final int[] LENGTHS_DEFAULT = {1_000, 4_000, 16_000};
    /** Default offered rates, requests/s. */
    static final double[] RATES_DEFAULT = {1_000, 10_000};
    /** Default measurement per point, seconds. */
    static final double DURATION_S_DEFAULT = 5;
    /** Default warm-up per point (same rate and prompts, not recorded), seconds. */
    static final double WARMUP_S_DEFAULT = 1;
    /** Default closed-loop warm-up per prompt set before any point (the picker's JIT), seconds. */
    static final double JIT_WARMUP_S_DEFAULT = 4;
    /** Requests in flight during the closed-loop warm-up. */
    static final int JIT_WARMUP_CONCURRENCY = 4;
    /** Default in-process decision timing per prompt set, seconds. */
    static final double DECISION_S_DEFAULT = 1;
    /** Default largest body chunk in the streamed variant: 16 KiB (an HTTP/2 client's frames). */
    static final int CHUNK_BYTES_DEFAULT = 16_384;
    /** Default HTTP/2 connections to the picker (Envoy opens one per worker; this VM has 2 CPUs). */
    static final int CONNECTIONS_DEFAULT = 2;
    /** Default most streams open at once (the picker refuses beyond its max-streams, 4,096). */
    static final int MAX_IN_FLIGHT_DEFAULT = 1_024;
    /** The picker's heap. */
    static final String EPP_HEAP = "-Xmx1g";
    private static final Pattern FLOOR_LISTENING = Pattern.compile("floor picker listening on [^\\s]+:(\\d+)");
    private static final Pattern LISTENING = Pattern.compile("kvidx epp listening on [^\\s]+:(\\d+) .*metrics on port"
        + " (\\d+)");
    private static final long START_LIMIT_MS = 60_000;

    private EppBench() {
    }

    /** Parsed options (picocli; {@link #usage()} lists them). */
    @Command(name = "epp")
    static final class Options {
        @Option(names = "--pods")
        int pods = PODS_DEFAULT;
        @Option(names = "--prompts")
        int prompts = PROMPTS_DEFAULT;
        @Option(names = "--index-blocks")
        long indexBlocks = INDEX_BLOCKS_DEFAULT;
        @Option(names = "--lengths", split = ",")
        int[] lengths = LENGTHS_DEFAULT;
        @Option(names = "--rates", split = ",")
        double[] rates = RATES_DEFAULT;
        @Option(names = "--duration-s")
        double durationS = DURATION_S_DEFAULT;
        @Option(names = "--warmup-s")
        double warmupS = WARMUP_S_DEFAULT;
        @Option(names = "--jit-warmup-s")
        double jitWarmupS = JIT_WARMUP_S_DEFAULT;
        @Option(names = "--epp-jvm")
        List<String> eppJvm = new ArrayList<>();
        @Option(names = "--decision-s")
        double decisionS = DECISION_S_DEFAULT;
        @Option(names = "--variant")
        String variant = "streamed";
        @Option(names = "--variant-tokens")
        int variantTokens = 4_000;
        @Option(names = "--variant-rate")
        double variantRate = 1_000;
        @Option(names = "--text-tokens")
        int textTokens = 1_000;
        @Option(names = "--text-rate")
        double textRate = 200;
        @Option(names = "--tokenizer")
        String tokenizer = "";
        @Option(names = "--chunk-bytes")
        int chunkBytes = CHUNK_BYTES_DEFAULT;
        @Option(names = "--connections")
        int connections = CONNECTIONS_DEFAULT;
        @Option(names = "--max-in-flight")
        int maxInFlight = MAX_IN_FLIGHT_DEFAULT;
        @Option(names = "--no-floor")
        boolean noFloor;
        @Option(names = "--floor-option")
        List<String> floorOptions = new ArrayList<>();
        @Option(names = "--seed")
        long seed = 34;
        @Option(names = {"--quick", "--smoke"})
        boolean quick;
        @Option(names = "--json")
        boolean json;
        @Option(names = {"-h", "--help"})
        boolean help;

        /** @return the streamed variant's mode, or null for none. */
        EnvoyRequest.Mode variantMode() {
            return "none".equals(variant) ? null : EnvoyRequest.Mode.of(variant);
        }

        static Options parse(final String[] args) {
            final Options o = BenchOptions.parseInto(new Options(), args);
            if (o.help) {
                throw new IllegalArgumentException("options");
            }
            if (o.quick) {
                o.durationS = Math.min(o.durationS, 0.5);
                o.warmupS = Math.min(o.warmupS, 0.3);
                o.jitWarmupS = Math.min(o.jitWarmupS, 0.5);
                o.decisionS = Math.min(o.decisionS, 0.2);
                o.prompts = Math.min(o.prompts, 8);
                o.indexBlocks = Math.min(o.indexBlocks, 1L << 16);
            }
            if (o.pods < 1 || o.pods > EppFixture.MAX_PODS) {
                throw new IllegalArgumentException("--pods must be in 1.." + EppFixture.MAX_PODS);
            }
            if (o.prompts < 1 || o.indexBlocks < 1 || o.durationS <= 0 || o.warmupS < 0 || o.jitWarmupS < 0
                || o.decisionS <= 0
                || o.chunkBytes < 1 || o.connections < 1 || o.maxInFlight < 1 || o.variantRate <= 0
                || o.textRate <= 0 || o.textTokens < 0 || o.variantTokens < EppFixture.BLOCK) {
                throw new IllegalArgumentException("counts, durations, rates and sizes must be > 0 (--warmup-s and"
                    + " --text-tokens >= 0, --variant-tokens >= " + EppFixture.BLOCK + ")");
            }
            for (final int l : o.lengths) {
                if (l < EppFixture.BLOCK) {
                    throw new IllegalArgumentException("--lengths must be at least one block: " + l);
                }
            }
            for (final double r : o.rates) {
                if (r <= 0) {
                    throw new IllegalArgumentException("--rates must be > 0: " + r);
                }
            }
            if (o.textTokens > 0 && o.textTokens < EppFixture.BLOCK) {
                throw new IllegalArgumentException("--text-tokens must be 0 or at least " + EppFixture.BLOCK);
            }
            o.variantMode();
            floorArgs(o);
            return o;
        }
    }

    /** @return usage text. */
    public static String usage() {
        return """
            usage: kvidx bench epp [options]
              the latency kvidx epp adds per request (gRPC round trips, protobuf, parse, keys, decision), driven as
              Envoy's ext_proc filter drives it: open loop, latency from each request's due time to the answer that
              releases it upstream; the decision layer's own time in-process on the same prompts and index beside it
            options: --pods N (32; 1..64)  --prompts N (32 per length)  --index-blocks N (1048576)
                     --lengths 1000,4000,16000 (token-id prompts, BUFFERED)  --rates 1000,10000 (requests/s)
                     --variant streamed|full-duplex-streamed|none (streamed)  --variant-tokens N (4000)
                     --variant-rate R (1000)  --text-tokens N (1000; 0: no text figure)  --text-rate R (200)
                     --tokenizer PATH (tokenizer.json; default Qwen3's, bundled in the jar)
                     --duration-s S (5 per point)  --warmup-s S (1 per point, open loop at its rate)
                     --jit-warmup-s S (4 per prompt set, closed loop, before any point)
                     --decision-s S (1 per prompt set)  --epp-jvm ARG (a JVM flag of the picker, repeatable)
                     --chunk-bytes N (16384, streamed variant)  --connections N (2)  --max-in-flight N (1024)
                     --no-floor (skip the floor: the same load on a gRPC server that answers at once)
                     --floor-option direct|fixed-window (repeatable; the floor unlike the picker: listeners on gRPC's
                       event loops, not a pool; a fixed flow-control window, no BDP pings)
                     --seed S  --quick | --smoke (0.5 s points, 8 prompts, 65536 blocks)  --json (one line last)""";
    }

    /**
     * @param args command arguments (after {@code epp}).
     * @param out  where progress, the table and the JSON line go.
     * @return the JSON report.
     * @throws IOException when the picker does not come up.
     * @throws InterruptedException when interrupted.
     */
    public static Json run(final String[] args, final PrintStream out) throws IOException, InterruptedException {
        return run(Options.parse(args), out);
    }

    static Json run(final Options o, final PrintStream out) throws IOException, InterruptedException {
        final long started = System.nanoTime();
        final double load = EppReport.loadAverage();
        final int cpus = Runtime.getRuntime().availableProcessors();
        out.printf(Locale.ROOT, "kvidx bench epp: %d CPUs, load average %.2f at start%n", cpus, load);
        final Path tokenizer = o.textTokens > 0 ? BundledTokenizer.resolve(o.tokenizer).toAbsolutePath() : null;
        final Path logs = Files.createTempDirectory("kvidx-epp-bench-logs-");
        final EnvoyRequest.Mode variant = o.variantMode();
        try (EppFixture fixture = new EppFixture(o.pods, o.indexBlocks, o.seed)) {
            final List<EppFixture.PromptSet> idSets = new ArrayList<>();
            for (final int length : o.lengths) {
                idSets.add(fixture.idPrompts(o.prompts, length));
            }
            EppFixture.PromptSet variantSet = null;
            for (final EppFixture.PromptSet s : idSets) {
                variantSet = s.tokens() == o.variantTokens ? s : variantSet;
            }
            if (variant != null && variantSet == null) {
                variantSet = fixture.idPrompts(o.prompts, o.variantTokens);
            }
            EppFixture.PromptSet textSet = null;
            if (tokenizer != null) {
                try (HfTokenizer t = HfTokenizer.load(tokenizer, true)) {
                    textSet = fixture.textPrompts(t, o.prompts, o.textTokens);
                }
            }
            fixture.fill(o.indexBlocks);
            out.printf(Locale.ROOT, "index: %,d distinct blocks of %d tokens, %.1f MiB mapped, %d pods in a %d-pod"
                    + " cell; %d prompts per set, each held whole by one pod and to random depths by %d more%n",
                fixture.blocks(), EppFixture.BLOCK, fixture.mappedBytes() / 1048576.0, o.pods, EppFixture.MAX_PODS,
                o.prompts, EppFixture.OTHER_HOLDERS);
            try (ChildProcesses procs = new ChildProcesses(logs);
                 DecisionTimer decisions = new DecisionTimer(fixture.dir(), EppFixture.CELL, tokenizer)) {
                final List<String> jvm = new ArrayList<>(List.of(EPP_HEAP));
                jvm.addAll(o.eppJvm);
                final Process epp = procs.start("epp", ChildProcesses.java("io.kvidx.epp.EppCommand", jvm,
                    eppArgs(o, fixture, tokenizer)));
                final Matcher ports = awaitListening(procs, epp);
                final int port = Integer.parseInt(ports.group(1));
                final int metricsPort = Integer.parseInt(ports.group(2));
                awaitReady(procs, epp, metricsPort, o.pods);
                out.printf(Locale.ROOT, "kvidx epp (child process, %s) on 127.0.0.1:%d: index attached, %d pods"
                    + " ready%n", EPP_HEAP, port, o.pods);
                final EppReport report = new EppReport(o, cpus, load, fixture);
                EnvoyLoad floorLoad = null;
                Process floorProcess = null;
                if (!o.noFloor) {
                    floorProcess = procs.start("floor", ChildProcesses.java(FloorPicker.class.getName(),
                        List.of(EPP_HEAP), floorArgs(o)));
                    floorLoad = new EnvoyLoad(Integer.parseInt(procs.awaitLog("floor", floorProcess,
                        FLOOR_LISTENING, START_LIMIT_MS)), o.connections, o.maxInFlight);
                }
                try (EnvoyLoad client = new EnvoyLoad(port, o.connections, o.maxInFlight);
                     EnvoyLoad floorClient = floorLoad) {
                    final Target picker = new Target(client, epp);
                    final Target floor = floorClient == null ? null : new Target(floorClient, floorProcess);
                    final List<EppFixture.PromptSet> all = new ArrayList<>(fixture.sets());
                    for (final EppFixture.PromptSet s : all) {
                        report.check(s, check(client, decisions, s, o.chunkBytes));
                    }
                    out.println(report.checkLine());
                    for (final EppFixture.PromptSet s : all) {
                        final long n = client.warmUp(requests(s, EnvoyRequest.Mode.BUFFERED, o.chunkBytes),
                            (long) (o.jitWarmupS * 1e9), JIT_WARMUP_CONCURRENCY);
                        out.printf(Locale.ROOT, "  warm-up %-10s %,d requests closed loop (%d in flight) in %.1f s%n",
                            s.name(), n, JIT_WARMUP_CONCURRENCY, o.jitWarmupS);
                        if (floorClient != null && !s.text()) {
                            floorClient.warmUp(requests(s, EnvoyRequest.Mode.BUFFERED, o.chunkBytes),
                                (long) (o.jitWarmupS * 1e9), JIT_WARMUP_CONCURRENCY);
                        }
                    }
                    final long decisionNs = (long) (o.decisionS * 1e9);
                    for (final EppFixture.PromptSet s : all) {
                        report.decision(s, decisions.time(s.bodies(), decisionNs / 2, decisionNs));
                    }
                    for (final EppFixture.PromptSet s : idSets) {
                        for (final double rate : o.rates) {
                            measure(picker, floor, s, EnvoyRequest.Mode.BUFFERED, rate, o, report, out);
                        }
                    }
                    if (variant != null) {
                        measure(picker, floor, variantSet, variant, o.variantRate, o, report, out);
                    }
                    if (textSet != null) {
                        measure(picker, null, textSet, EnvoyRequest.Mode.BUFFERED, o.textRate, o, report, out);
                    }
                }
                report.outcomes(metric(metricsPort, "kvidx_epp_requests_total{outcome=\"picked\"}"),
                    metric(metricsPort, "kvidx_epp_requests_total{outcome=\"fallback\"}"));
                final Json json = report.json().put("seconds", Math.round((System.nanoTime() - started) / 1e8)
                    / 10.0).put("load_average_at_end", EppReport.loadAverage());
                out.print(report.table());
                if (o.json) {
                    out.println(json);
                }
                return json;
            }
        } finally {
            deleteTree(logs);
        }
    }

    private static List<String> floorArgs(final Options o) {
        final List<String> args = new ArrayList<>(List.of("0"));
        for (final String f : o.floorOptions) {
            if (!"direct".equals(f) && !"fixed-window".equals(f)) {
                throw new IllegalArgumentException("unknown --floor-option '" + f + "' (direct, fixed-window)");
            }
            args.add(f);
        }
        return args;
    }

    private static List<String> eppArgs(final Options o, final EppFixture fixture, final Path tokenizer) {
        final List<String> args = new ArrayList<>(List.of("--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
            "--dir", fixture.dir().toString(), "--cell", EppFixture.CELL, "--policy", "cache-aware"));
        for (int p = 0; p < o.pods; p++) {
            args.add("--pod");
            args.add(EppFixture.podId(p) + "=" + EppFixture.podUrl(p));
        }
        if (tokenizer != null) {
            args.add("--tokenizer");
            args.add(tokenizer.toString());
        }
        return args;
    }

    /** Sends each prompt once (BUFFERED, and in the variant's mode) and compares the pick with the reference's. */
    private static EppReport.Check check(final EnvoyLoad client, final DecisionTimer decisions,
        final EppFixture.PromptSet s, final int chunkBytes) throws InterruptedException {
        int asHome = 0;
        int asRouter = 0;
        int refAsHome = 0;
        for (int i = 0; i < s.bodies().size(); i++) {
            final byte[] body = s.bodies().get(i);
            final String picked = client.pickOnce(EnvoyRequest.of(EnvoyRequest.Mode.BUFFERED, "/v1/completions",
                body, chunkBytes));
            final String reference = decisions.pick(body);
            asHome += s.home().get(i).equals(picked) ? 1 : 0;
            asRouter += picked != null && picked.equals(reference) ? 1 : 0;
            refAsHome += s.home().get(i).equals(reference) ? 1 : 0;
        }
        return new EppReport.Check(s.bodies().size(), asHome, asRouter, refAsHome);
    }

    /**
     * A server under load and the load on it.
     *
     * @param load    the client.
     * @param process its process (for its CPU time).
     */
    private record Target(EnvoyLoad load, Process process) {
        /** @return the warm-up and the measured run at {@code rate}, and the process's CPU µs per request. */
        Measured measure(final EnvoyRequest[] requests, final double rate, final Options o)
            throws InterruptedException {
            final long durationNs = (long) (o.durationS * 1e9);
            final long drainNs = Math.max(TimeUnit.SECONDS.toNanos(2), durationNs);
            if (o.warmupS > 0) {
                load.run(requests, rate, (long) (o.warmupS * 1e9), drainNs);
            }
            ChildProcesses.sleep(200);
            final long cpu0 = cpuNs(process);
            final EnvoyLoad.Result r = load.run(requests, rate, durationNs, drainNs);
            final long cpu1 = cpuNs(process);
            return new Measured(r, cpu0 < 0 || cpu1 < 0 ? Double.NaN : (cpu1 - cpu0) / 1e3 / r.offered());
        }
    }

    /**
     * @param result the load's figures.
     * @param cpuUs  the server process's CPU time per offered request over the run and its drain, µs.
     */
    record Measured(EnvoyLoad.Result result, double cpuUs) {
    }

    /** Measures one point on the picker, then (when given) the same load on the floor. */
    private static void measure(final Target picker, final Target floor, final EppFixture.PromptSet s,
        final EnvoyRequest.Mode mode, final double rate, final Options o, final EppReport report,
        final PrintStream out) throws InterruptedException {
        final EnvoyRequest[] requests = requests(s, mode, o.chunkBytes);
        final Measured m = picker.measure(requests, rate, o);
        final Measured f = floor == null ? null : floor.measure(requests, rate, o);
        final EppReport.Point p = new EppReport.Point(s, mode, rate, m, requests[0].body().size(), f);
        report.point(p);
        out.println("  " + report.progressLine(p));
    }

    private static EnvoyRequest[] requests(final EppFixture.PromptSet s, final EnvoyRequest.Mode mode,
        final int chunkBytes) {
        final EnvoyRequest[] requests = new EnvoyRequest[s.bodies().size()];
        for (int i = 0; i < requests.length; i++) {
            requests[i] = EnvoyRequest.of(mode, "/v1/completions", s.bodies().get(i), chunkBytes);
        }
        return requests;
    }

    /** @return the child's CPU time so far (user + system), ns, or -1 when the platform does not say. */
    private static long cpuNs(final Process p) {
        return p.info().totalCpuDuration().map(Duration::toNanos).orElse(-1L);
    }

    private static Matcher awaitListening(final ChildProcesses procs, final Process epp) throws IOException {
        procs.awaitLog("epp", epp, LISTENING, START_LIMIT_MS);
        final Matcher m = LISTENING.matcher(Files.readString(procs.log("epp"), StandardCharsets.UTF_8));
        if (!m.find()) {
            throw new IOException("kvidx epp's log lost its listening line");
        }
        return m;
    }

    /** Waits until the picker's {@code /health} says the index is attached and every pod is ready. */
    private static void awaitReady(final ChildProcesses procs, final Process epp, final int metricsPort,
        final int pods) throws IOException {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_LIMIT_MS);
        String last = "";
        try (HttpClient http = HttpClient.newHttpClient()) {
            while (System.nanoTime() < deadline && epp.isAlive()) {
                try {
                    last = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPort + "/health"))
                        .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
                    final Map<?, ?> h = (Map<?, ?>) MiniJson.parse(last);
                    if (Boolean.TRUE.equals(h.get("index_available")) && h.get("pods_ready") instanceof Number n
                        && n.intValue() >= pods) {
                        return;
                    }
                } catch (final IOException | RuntimeException ex) {
                    last = ex.toString();
                } catch (final InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted", ex);
                }
                ChildProcesses.sleep(100);
            }
        }
        throw new IOException("kvidx epp did not attach the index with " + pods + " ready pods (last /health: "
            + last + "); its log ends: " + procs.tail("epp"));
    }

    /** @return a sample of the picker's {@code /metrics}, or -1. */
    private static long metric(final int port, final String sample) {
        try (HttpClient http = HttpClient.newHttpClient()) {
            final String page = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
            for (final String line : page.split("\n")) {
                if (line.startsWith(sample + " ")) {
                    return (long) Double.parseDouble(line.substring(sample.length() + 1).trim());
                }
            }
            return 0;
        } catch (final IOException | RuntimeException ex) {
            return -1;
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static void deleteTree(final Path dir) {
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (final IOException | RuntimeException ex) {
            System.err.println("kvidx bench epp: cannot delete " + dir + ": " + ex);
        }
    }
}
