package io.kvidx.bench.router;

import io.kvidx.bench.Json;
import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Part B of {@code bench router}: the latency a proxy adds, at fixed offered rates (open loop, {@link OpenLoopClient}),
 * against a fast upstream that answers every request with the same small completion (nginx's {@code return 200}, or
 * {@link NettyUpstream} without nginx). Targets, all in front of that one upstream:
 * <ul>
 *   <li>{@code direct}: the upstream itself (the baseline subtracted from the others);</li>
 *   <li>{@code kvidx}: {@code kvidx router}, policy cache-aware, reading a real daemon's index that holds every
 *   request's whole prompt for the one pod (warmed by sending each body once to a mock engine whose events the
 *   daemon indexes; the pod id maps to the upstream's URL), so each request is parsed, keyed, looked up (full-depth
 *   hits) and scored;</li>
 *   <li>{@code nginx}: nginx as a plain reverse proxy (keep-alive upstream connections, as many workers as the router
 *   has event loops);</li>
 *   <li>{@code jdk}: {@link JdkProxy}, the JDK-only proxy a first version would be.</li>
 * </ul>
 * Requests: token-id completions of 1,000 to 4,000 tokens (a fixed set of {@link #BODIES}, sent in turn). Each target
 * is warmed up at every rate, then measured {@code rounds} times per rate, the targets' order rotating each round;
 * a target's figure is the median over its rounds, and its added latency is that minus direct's.
 */
final class OverheadBench {
    /** Distinct request bodies. */
    static final int BODIES = 128;
    /** Shortest body, tokens. */
    static final int MIN_TOKENS = 1_000;
    /** Longest body, tokens. */
    static final int MAX_TOKENS = 4_000;
    /** The proxies it can measure. */
    static final List<String> PROXIES = List.of("kvidx", "nginx", "jdk");
    /** Warm-up per target and rate, seconds (at most the measurement's duration). */
    static final double WARMUP_S = 2;
    /** Pause before each measured run (the previous run's connections close). */
    static final long SETTLE_MS = 500;
    private static final String DIRECT = "direct";
    private static final String CELL = "overhead";
    private static final String POD = "up";
    private static final Pattern JDK_PORT = Pattern.compile("jdk proxy listening on [^\\s]+:(\\d+)");
    private static final Pattern NETTY_PORT = Pattern.compile("netty upstream listening on [^\\s]+:(\\d+)");

    private OverheadBench() {
    }

    /**
     * One target at one rate, over the rounds.
     *
     * @param target   target name.
     * @param rate     offered requests per second.
     * @param p50Us    median over rounds of the p50 latency.
     * @param p99Us    median over rounds of the p99 latency.
     * @param achieved median over rounds of the achieved answers per second.
     * @param errors   failed or unanswered requests, all rounds.
     * @param offered  requests offered, all rounds.
     */
    record Point(String target, double rate, double p50Us, double p99Us, double achieved, long errors,
        long offered) {
    }

    /**
     * What part B found.
     *
     * @param upstream  which fast upstream ran.
     * @param points    by rate, then target (direct first).
     * @param fallbacks the kvidx router's fallback decisions (-1: not measured).
     * @param indexed   its decisions made with the index.
     * @param notes     targets left out and why.
     */
    record Result(String upstream, Map<Double, Map<String, Point>> points, long fallbacks, long indexed,
        List<String> notes) {
    }

    /**
     * @param o   the bench's options.
     * @param dir this part's directory (index, logs).
     * @param log progress.
     * @return the figures.
     * @throws IOException when a process does not come up.
     * @throws InterruptedException when interrupted.
     */
    static Result run(final RouterBench.Options o, final Path dir, final PrintStream log)
        throws IOException, InterruptedException {
        final List<int[]> prompts = prompts();
        final List<byte[]> bodies = new ArrayList<>();
        for (final int[] p : prompts) {
            bodies.add(body(p));
        }
        final List<String> notes = new ArrayList<>();
        final String nginx = Nginx.find(o.nginx);
        final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
        final List<ByteBuf> buffers = new ArrayList<>();
        try (ChildProcesses procs = new ChildProcesses(dir.resolve("logs"));
             OpenLoopClient client = new OpenLoopClient()) {
            final int upstream;
            final String upstreamName;
            if (nginx != null) {
                upstream = Nginx.startUpstream(procs, nginx, RouterBench.ANSWER);
                upstreamName = "nginx return 200";
            } else {
                final Process p = procs.start("netty-upstream", ChildProcesses.java(NettyUpstream.class.getName(),
                    List.of("-Xmx256m"), List.of("0")));
                upstream = Integer.parseInt(procs.awaitLog("netty-upstream", p, NETTY_PORT, Fleet.START_LIMIT_MS));
                upstreamName = "netty (nginx not installed)";
            }
            final Map<String, Integer> targets = new LinkedHashMap<>();
            targets.put(DIRECT, upstream);
            Fleet.Router router = null;
            for (final String proxy : o.proxies) {
                switch (proxy) {
                    case "kvidx" -> {
                        router = startKvidx(procs, o, dir.resolve("index"), prompts, bodies, upstream, http, log);
                        targets.put(proxy, router.port());
                    }
                    case "nginx" -> {
                        if (nginx == null) {
                            notes.add("nginx: not found (apt-get install nginx, or --nginx PATH), left out");
                        } else {
                            targets.put(proxy, Nginx.startProxy(procs, nginx, upstream, RouterBench.ROUTER_THREADS));
                        }
                    }
                    case "jdk" -> {
                        final Process p = procs.start("jdk-proxy", ChildProcesses.java(JdkProxy.class.getName(),
                            List.of("-Xmx1g"), List.of("0", "http://127.0.0.1:" + upstream)));
                        targets.put(proxy, Integer.parseInt(procs.awaitLog("jdk-proxy", p, JDK_PORT,
                            Fleet.START_LIMIT_MS)));
                    }
                    default -> throw new IllegalArgumentException("unknown proxy '" + proxy + "' (" + PROXIES + ")");
                }
            }
            final Map<String, ByteBuf[]> requests = new LinkedHashMap<>();
            for (final Map.Entry<String, Integer> t : targets.entrySet()) {
                final ByteBuf[] r = new ByteBuf[bodies.size()];
                for (int i = 0; i < r.length; i++) {
                    r[i] = request(t.getValue(), bodies.get(i));
                    buffers.add(r[i]);
                }
                requests.put(t.getKey(), r);
            }
            final long durationNs = (long) (o.durationS * 1e9);
            final long warmupNs = (long) (Math.min(WARMUP_S, o.durationS) * 1e9);
            final long drainNs = Math.max(TimeUnit.SECONDS.toNanos(2), durationNs);
            for (final String t : targets.keySet()) {
                for (final double rate : o.rates) {
                    client.run(address(targets.get(t)), requests.get(t), rate, warmupNs, drainNs);
                }
            }
            final List<String> order = new ArrayList<>(targets.keySet());
            final Map<Double, Map<String, List<OpenLoopClient.Result>>> runs = new LinkedHashMap<>();
            for (int round = 0; round < o.rounds; round++) {
                for (final double rate : o.rates) {
                    for (int k = 0; k < order.size(); k++) {
                        final String t = order.get((k + round) % order.size());
                        ChildProcesses.sleep(SETTLE_MS);
                        final OpenLoopClient.Result r = client.run(address(targets.get(t)), requests.get(t), rate,
                            durationNs, drainNs);
                        runs.computeIfAbsent(rate, x -> new LinkedHashMap<>())
                            .computeIfAbsent(t, x -> new ArrayList<>()).add(r);
                        log.printf("  round %d, %,.0f/s, %-6s p50 %8.1f us  p99 %9.1f us  achieved %,8.0f/s  errors"
                                + " %d%s  (%d connections opened, pacer late p99 %.0f us)%n", round + 1, rate, t,
                            us(r.latency(), 50), us(r.latency(), 99), r.achievedPerS(), r.errors(),
                            r.unfinished() > 0 ? " unanswered " + r.unfinished() : "", r.connections(),
                            us(r.late(), 99));
                    }
                }
            }
            final Map<Double, Map<String, Point>> points = new LinkedHashMap<>();
            for (final double rate : o.rates) {
                final Map<String, Point> byTarget = new LinkedHashMap<>();
                for (final String t : targets.keySet()) {
                    byTarget.put(t, point(t, rate, runs.get(rate).get(t)));
                }
                points.put(rate, byTarget);
            }
            final long fallbacks = router == null ? -1 : Fleet.metric(http, router.port(),
                "kvidx_router_decisions_total{outcome=\"fallback\"}");
            final long indexed = router == null ? -1 : Fleet.metric(http, router.port(),
                "kvidx_router_decisions_total{outcome=\"indexed\"}");
            return new Result(upstreamName, points, fallbacks, indexed, notes);
        } finally {
            for (final ByteBuf b : buffers) {
                b.release();
            }
            http.close();
        }
    }

    /**
     * Starts the daemon, fills its index through a mock engine (pod {@value #POD}) with every body's blocks, and
     * starts the router with that pod at the upstream's URL.
     */
    private static Fleet.Router startKvidx(final ChildProcesses procs, final RouterBench.Options o,
        final Path indexDir, final List<int[]> prompts, final List<byte[]> bodies, final int upstream,
        final HttpClient http, final PrintStream log) throws IOException, InterruptedException {
        final List<Fleet.Engine> engine = Fleet.startEngines(procs, new Fleet.EngineSettings(o.python, o.mockEngine,
            o.blockSize, 4 * BODIES * MAX_TOKENS / o.blockSize, 0), List.of(POD));
        Fleet.startDaemon(procs, indexDir, CELL, o.blockSize, engine);
        try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(indexDir).cell(CELL)
            .attachTimeoutMs(Fleet.START_LIMIT_MS))) {
            final URI uri = URI.create(engine.get(0).http() + "/v1/completions");
            for (final byte[] b : bodies) {
                final HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
                    .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(b))
                    .build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    throw new IOException("the mock engine answered " + r.statusCode() + ": " + r.body());
                }
            }
            awaitIndexed(reader, prompts, o.blockSize);
        }
        final Fleet.Router router = Fleet.startRouter(procs, "router", indexDir, CELL, "cache-aware",
            Map.of(POD, "http://127.0.0.1:" + upstream), false, o.routerJvmArgs);
        Fleet.awaitRoutable(http, procs, "router", router, 1);
        log.printf("  kvidx router: index holds all %d bodies' blocks for pod %s; routing to the upstream%n",
            bodies.size(), POD);
        return router;
    }

    /** Waits until the index holds each prompt's last full block (its whole chain was stored before it). */
    private static void awaitIndexed(final IndexReader reader, final List<int[]> prompts, final int blockSize)
        throws IOException {
        final RouterKeyHasher hasher = new RouterKeyHasher(blockSize);
        final long seed = RouterKeyHasher.chainSeed(Fleet.MODEL, null, null);
        final long[] keys = new long[MAX_TOKENS / blockSize + 1];
        final long[] bits = new long[4];
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Fleet.START_LIMIT_MS);
        for (final int[] p : prompts) {
            final int n = hasher.keys(seed, p, p.length, keys);
            while (true) {
                boolean seen;
                try {
                    seen = reader.lookup(keys[n - 1], bits);
                } catch (final IndexBusyException ex) {
                    seen = false;
                }
                if (seen) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new IOException("the daemon did not index the warm-up prompts within "
                        + Fleet.START_LIMIT_MS + " ms");
                }
                ChildProcesses.sleep(10);
            }
        }
    }

    /** @return the prompts: {@link #BODIES} token-id arrays of 1,000 to 4,000 tokens, seeded. */
    static List<int[]> prompts() {
        final SplittableRandom random = new SplittableRandom(27);
        final List<int[]> out = new ArrayList<>();
        for (int i = 0; i < BODIES; i++) {
            final int[] t = new int[random.nextInt(MIN_TOKENS, MAX_TOKENS + 1)];
            for (int k = 0; k < t.length; k++) {
                t[k] = random.nextInt(io.kvidx.bench.trace.TraceBlocks.VOCABULARY);
            }
            out.add(t);
        }
        return out;
    }

    private static byte[] body(final int[] tokens) {
        final StringBuilder sb = new StringBuilder(tokens.length * 7 + 64).append("{\"model\":\"").append(Fleet.MODEL)
            .append("\",\"max_tokens\":1,\"prompt\":[");
        for (int k = 0; k < tokens.length; k++) {
            sb.append(k == 0 ? "" : ",").append(tokens[k]);
        }
        return sb.append("]}").toString().getBytes(StandardCharsets.US_ASCII);
    }

    private static ByteBuf request(final int port, final byte[] body) {
        final byte[] head = ("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:" + port
            + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII);
        return Unpooled.directBuffer(head.length + body.length).writeBytes(head).writeBytes(body);
    }

    private static InetSocketAddress address(final int port) {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    }

    private static Point point(final String target, final double rate, final List<OpenLoopClient.Result> rounds) {
        final double[] p50 = new double[rounds.size()];
        final double[] p99 = new double[rounds.size()];
        final double[] achieved = new double[rounds.size()];
        long errors = 0;
        long offered = 0;
        for (int i = 0; i < rounds.size(); i++) {
            final OpenLoopClient.Result r = rounds.get(i);
            p50[i] = us(r.latency(), 50);
            p99[i] = us(r.latency(), 99);
            achieved[i] = r.achievedPerS();
            errors += r.errors() + r.unfinished();
            offered += r.offered();
        }
        return new Point(target, rate, median(p50), median(p99), median(achieved), errors, offered);
    }

    static double us(final Histogram h, final double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1e3;
    }

    static double median(final double[] values) {
        final double[] v = values.clone();
        Arrays.sort(v);
        final int n = v.length;
        return n == 0 ? Double.NaN : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    /**
     * @param r the figures.
     * @return them as JSON: per rate, per target: p50/p99 (us), added p50/p99 against direct, achieved rate, errors.
     */
    static Json json(final Result r) {
        final Json rates = new Json();
        for (final Map.Entry<Double, Map<String, Point>> e : r.points().entrySet()) {
            final Point direct = e.getValue().get(DIRECT);
            final Json targets = new Json();
            for (final Point p : e.getValue().values()) {
                final Json j = new Json().put("p50_us", p.p50Us()).put("p99_us", p.p99Us());
                if (!DIRECT.equals(p.target())) {
                    j.put("added_p50_us", p.p50Us() - direct.p50Us()).put("added_p99_us", p.p99Us() - direct.p99Us());
                }
                targets.put(p.target(), j.put("achieved_per_s", Math.round(p.achieved())).put("errors", p.errors())
                    .put("offered", p.offered()));
            }
            rates.put(Long.toString(Math.round(e.getKey())), targets);
        }
        return new Json().put("upstream", r.upstream()).put("body_tokens", MIN_TOKENS + "-" + MAX_TOKENS)
            .put("rates", rates).put("kvidx_fallbacks", r.fallbacks()).put("kvidx_indexed_decisions", r.indexed());
    }
}
