package io.kvidx.bench;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.serve.BearerAuth;
import io.kvidx.serve.BodyLimit;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.HttpPipeline;
import io.kvidx.serve.HttpRequestHandler;
import io.kvidx.serve.Responses;
import io.kvidx.serve.ServeContext;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code ./kvidx bench http-auth}: what bearer-token authentication ({@code --http-token-file}) adds to the
 * daemon's {@code POST /query}. Two in-process daemons hold the same index (the same pods storing the same prefix
 * depths of the same prompt), one without a token (A, the old door) and one with it (B: every request carries
 * {@code Authorization: Bearer <token>}, compared in constant time by serve's {@code BearerAuth}); one keep-alive
 * connection times the same pre-encoded query against each in alternating rounds A, B, A, B, ... so that load drifts
 * on a shared machine fall on both alike. Prints each round's p50 and p99, the median over rounds of each side's
 * p50, their difference, and the median of the per-pair differences (B - A).
 *
 * <p>Then the same without sockets, threads or the index, where a microsecond is not lost in the loopback's noise:
 * the door alone, serve's real {@link HttpPipeline} in an {@link EmbeddedChannel} (codec, body limit, sequencer,
 * and for B {@link BearerAuth}) in front of a handler answering {@code {}}, fed the same request bytes in alternating
 * rounds. Its difference is what authentication adds to a request's CPU time on the event loop.
 *
 * <p>{@code kvidx router} has no authentication of its own (it forwards a client's {@code Authorization} header to
 * the engines), so there is nothing of the router's to measure here.
 */
final class AuthCostBench {
    /** The command's name. */
    static final String COMMAND = "http-auth";
    private static final String MODEL = "bench-model";
    private static final int BLOCK_SIZE = 16;
    private static final long HIGHEST_NS = TimeUnit.SECONDS.toNanos(10);
    /** A token as long as a 256-bit secret in base64url (43 characters). */
    private static final String TOKEN = "kvidx-bench-token-0123456789abcdefghijklmno";

    private AuthCostBench() {
    }

    /** Parsed options (picocli; {@link #usage()} lists them). */
    @Command(name = COMMAND)
    static final class Options {
        @Option(names = "--pairs")
        int pairs = 10;
        @Option(names = "--seconds")
        double seconds = 2;
        @Option(names = "--warmup")
        double warmup = 10;
        @Option(names = "--pods")
        int pods = 32;
        @Option(names = "--prompt")
        int prompt = 400;
        @Option(names = "--http-threads")
        int httpThreads = 1;
        @Option(names = "--door-seconds")
        double doorSeconds = 1;
        @Option(names = {"-h", "--help"})
        boolean help;

        static Options parse(final String[] args) {
            final Options o = BenchOptions.parseInto(new Options(), args);
            if (o.help) {
                throw new IllegalArgumentException("options");
            }
            if (o.pairs < 1 || o.pairs > 1_000) {
                throw new IllegalArgumentException("--pairs must be in 1..1000: " + o.pairs);
            }
            if (!(o.seconds > 0) || !(o.warmup >= 0) || !(o.doorSeconds >= 0)) {
                throw new IllegalArgumentException("--seconds must be > 0, --warmup and --door-seconds >= 0");
            }
            if (o.pods < 1 || o.pods > 64) {
                throw new IllegalArgumentException("--pods must be in 1..64: " + o.pods);
            }
            if (o.prompt < BLOCK_SIZE || o.prompt > 8192 * BLOCK_SIZE) {
                throw new IllegalArgumentException("--prompt must be in " + BLOCK_SIZE + ".." + 8192 * BLOCK_SIZE
                    + ": " + o.prompt);
            }
            if (o.httpThreads < 1 || o.httpThreads > 16) {
                throw new IllegalArgumentException("--http-threads must be in 1..16: " + o.httpThreads);
            }
            return o;
        }
    }

    /** @return usage text. */
    static String usage() {
        return """
            usage: kvidx bench http-auth [--pairs N] [--seconds S] [--warmup S] [--pods P] [--prompt T]
                                         [--http-threads N] [--door-seconds S]
              POST /query against two in-process daemons holding the same index, A without and B with a bearer
              token (--http-token-file), on one keep-alive connection each, in alternating rounds A, B, A, B, ...;
              then the door alone (serve's HTTP pipeline in an EmbeddedChannel, a fixed answer), A/B the same way.
              --pairs N           A/B round pairs (default 10)
              --seconds S         measured seconds per round over loopback (default 2)
              --warmup S          warm-up seconds, half per side, before the first round of each part (default 10)
              --pods P            pods, holding prefix depths (p+1)/P of the prompt (default 32)
              --prompt T          prompt length in tokens (default 400)
              --http-threads N    each daemon's HTTP event loops (default 1)
              --door-seconds S    measured seconds per round of the door alone (default 1; 0 skips it)""";
    }

    /**
     * One timed round.
     *
     * @param auth     true: the daemon with the token.
     * @param requests requests timed.
     * @param p50Ns    the round's median, ns.
     * @param p99Ns    the round's 99th percentile, ns.
     */
    record Round(boolean auth, long requests, long p50Ns, long p99Ns) {
    }

    /**
     * The run's outcome.
     *
     * @param rounds       every round in the order run (A, B, A, B, ...).
     * @param medianP50A   the median over the A rounds of their p50, ns.
     * @param medianP50B   the same for B, ns.
     * @param medianPairNs the median over pairs of (B's p50 - A's p50), ns.
     */
    record Result(List<Round> rounds, double medianP50A, double medianP50B, double medianPairNs) {
    }

    /**
     * Both parts of a run.
     *
     * @param loopback the daemons over loopback.
     * @param door     the door alone, in process (null when skipped).
     */
    record Outcome(Result loopback, Result door) {
    }

    /**
     * @param options parsed options.
     * @param out     where the table goes.
     * @return the rounds and medians.
     * @throws Exception when a daemon, a socket or the temp directory fails, or an answer is not the expected one.
     */
    static Outcome run(final Options options, final PrintStream out) throws Exception {
        out.println("load before the run: " + loadAverage());
        out.printf("cpus %d, %s %s; %d HTTP event loop(s) per daemon, blocking%n",
            Runtime.getRuntime().availableProcessors(), System.getProperty("java.vm.name"),
            System.getProperty("java.version"), options.httpThreads);
        final SplittableRandom random = new SplittableRandom(42);
        final int[] prompt = new int[options.prompt];
        for (int t = 0; t < prompt.length; t++) {
            prompt[t] = random.nextInt(150_000);
        }
        final Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "kvidx-bench-auth");
        try {
            final Path tokenFile = dir.resolve("token");
            Files.writeString(tokenFile, TOKEN + "\n");
            Files.setPosixFilePermissions(tokenFile, PosixFilePermissions.fromString("rw-------"));
            try (KvidxDaemon open = KvidxDaemon.start(context(dir.resolve("a"), options, null));
                KvidxDaemon guarded = KvidxDaemon.start(context(dir.resolve("b"), options, tokenFile))) {
                final long entries = fill(open.index(), options, prompt);
                if (fill(guarded.index(), options, prompt) != entries) {
                    throw new IllegalStateException("the two daemons' indexes differ");
                }
                out.printf("index (each daemon): %,d entries (blocks) held by %d pods, capacity %,d blocks, %,d bytes"
                    + " mapped; a query touches %d entries: they fit in L2/L3%n", entries, options.pods,
                    open.index().capacity(), open.index().mappedBytes(), prompt.length / BLOCK_SIZE);
                final byte[] plain = request(prompt, open.httpPort(), null);
                final byte[] bearer = request(prompt, guarded.httpPort(), "Bearer " + TOKEN);
                check(open.httpPort(), guarded.httpPort(), plain, bearer, options.pods, prompt.length);
                out.printf("request: %,d bytes without the token, %,d with it%n", plain.length, bearer.length);
                for (int w = 0; w < 2; w++) {
                    time(open.httpPort(), plain, options.warmup / 2);
                    time(guarded.httpPort(), bearer, options.warmup / 2);
                }
                final List<Round> rounds = new ArrayList<>();
                out.printf("%6s %-9s %10s %9s %9s%n", "round", "door", "requests", "p50 us", "p99 us");
                for (int i = 0; i < 2 * options.pairs; i++) {
                    final boolean auth = (i & 1) == 1;
                    final Histogram h = auth ? time(guarded.httpPort(), bearer, options.seconds)
                        : time(open.httpPort(), plain, options.seconds);
                    final Round r = new Round(auth, h.getTotalCount(), h.getValueAtPercentile(50),
                        h.getValueAtPercentile(99));
                    rounds.add(r);
                    out.printf("%6d %-9s %,10d %9.2f %9.2f%n", i + 1, auth ? "B token" : "A open", r.requests,
                        r.p50Ns / 1e3, r.p99Ns / 1e3);
                }
                final Result result = summarise(rounds);
                printSummary(out, result, options.pairs);
                final Result door = options.doorSeconds > 0 ? door(options, plain, bearer, out) : null;
                out.println("load after the run: " + loadAverage());
                return new Outcome(result, door);
            }
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static void printSummary(final PrintStream out, final Result result, final int pairs) {
        out.printf("median of the rounds' p50: A (no token) %.2f us, B (token) %.2f us, B - A %+.2f us%n",
            result.medianP50A / 1e3, result.medianP50B / 1e3, (result.medianP50B - result.medianP50A) / 1e3);
        out.printf("median over the %d pairs of (B p50 - A p50): %+.2f us%n", pairs, result.medianPairNs / 1e3);
    }

    /** The door alone: the same request bytes through serve's pipeline in an EmbeddedChannel, A/B rounds. */
    private static Result door(final Options options, final byte[] plain, final byte[] bearer, final PrintStream out) {
        final EmbeddedChannel open = doorChannel(null);
        final EmbeddedChannel guarded = doorChannel(new BearerAuth(TOKEN, Set.of("/health"), ErrorShape.FLAT));
        try {
            if (!pass(guarded, plain).startsWith("HTTP/1.1 401") || !pass(guarded, bearer).startsWith("HTTP/1.1 200")
                || !pass(open, plain).startsWith("HTTP/1.1 200")) {
                throw new IllegalStateException("the door's answers are not 401 without the token and 200 with it");
            }
            for (int w = 0; w < 2; w++) {
                timeDoor(open, plain, options.warmup / 4);
                timeDoor(guarded, bearer, options.warmup / 4);
            }
            out.println();
            out.println("the door alone, in process: serve's HttpPipeline in an EmbeddedChannel, a fixed {} answer, "
                + "the same request bytes");
            out.printf("%6s %-9s %10s %9s %9s%n", "round", "door", "requests", "p50 ns", "p99 ns");
            final List<Round> rounds = new ArrayList<>();
            for (int i = 0; i < 2 * options.pairs; i++) {
                final boolean auth = (i & 1) == 1;
                final Histogram h = auth ? timeDoor(guarded, bearer, options.doorSeconds)
                    : timeDoor(open, plain, options.doorSeconds);
                final Round r = new Round(auth, h.getTotalCount(), h.getValueAtPercentile(50),
                    h.getValueAtPercentile(99));
                rounds.add(r);
                out.printf("%6d %-9s %,10d %9d %9d%n", i + 1, auth ? "B token" : "A open", r.requests, r.p50Ns,
                    r.p99Ns);
            }
            final Result result = summarise(rounds);
            printSummary(out, result, options.pairs);
            return result;
        } finally {
            open.finishAndReleaseAll();
            guarded.finishAndReleaseAll();
        }
    }

    private static EmbeddedChannel doorChannel(final BearerAuth auth) {
        final ServeContext context = new ServeContext().listen(new InetSocketAddress(InetAddress.getLoopbackAddress(),
            0)).auth(auth);
        final HttpPipeline pipeline = HttpPipeline.of(context, FixedAnswer::new);
        return new EmbeddedChannel(new ChannelInitializer<EmbeddedChannel>() {
            @Override
            protected void initChannel(final EmbeddedChannel ch) {
                pipeline.accept(ch.pipeline());
            }
        });
    }

    /** @return the answer's bytes as text. */
    private static String pass(final EmbeddedChannel channel, final byte[] request) {
        channel.writeInbound(Unpooled.wrappedBuffer(request));
        final StringBuilder answer = new StringBuilder();
        for (ByteBuf b = channel.readOutbound(); b != null; b = channel.readOutbound()) {
            answer.append(b.toString(StandardCharsets.US_ASCII));
            b.release();
        }
        return answer.toString();
    }

    private static Histogram timeDoor(final EmbeddedChannel channel, final byte[] request, final double seconds) {
        final Histogram h = new Histogram(HIGHEST_NS, 3);
        if (seconds <= 0) {
            return h;
        }
        final long end = System.nanoTime() + (long) (seconds * 1e9);
        long bytes = 0;
        long t0 = System.nanoTime();
        while (t0 < end) {
            channel.writeInbound(Unpooled.wrappedBuffer(request));
            for (ByteBuf b = channel.readOutbound(); b != null; b = channel.readOutbound()) {
                bytes += b.readableBytes();
                b.release();
            }
            final long t1 = System.nanoTime();
            h.recordValue(Math.min(t1 - t0, HIGHEST_NS));
            t0 = t1;
        }
        if (bytes == 0) {
            throw new IllegalStateException("the door answered nothing");
        }
        return h;
    }

    /** Answers every request {@code {}} (and a refused body 413): the door's own cost, no index behind it. */
    private static final class FixedAnswer extends HttpRequestHandler {
        @Override
        protected void tooLarge(final ChannelHandlerContext ctx, final BodyLimit.TooLarge tooLarge) {
            Responses.error(ctx, false, ErrorShape.FLAT, new HttpError(413, "body_too_large", "too large"));
        }

        @Override
        protected void request(final ChannelHandlerContext ctx, final FullHttpRequest request) {
            Responses.json(ctx, HttpUtil.isKeepAlive(request), 200, g -> {
                g.writeStartObject();
                g.writeEndObject();
            });
        }
    }

    static Result summarise(final List<Round> rounds) {
        final List<Long> a = new ArrayList<>();
        final List<Long> b = new ArrayList<>();
        for (final Round r : rounds) {
            (r.auth ? b : a).add(r.p50Ns);
        }
        final int pairs = Math.min(a.size(), b.size());
        final double[] diffs = new double[pairs];
        for (int i = 0; i < pairs; i++) {
            diffs[i] = b.get(i) - a.get(i);
        }
        return new Result(List.copyOf(rounds), median(a.stream().mapToDouble(Long::doubleValue).toArray()),
            median(b.stream().mapToDouble(Long::doubleValue).toArray()), median(diffs));
    }

    static double median(final double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        final double[] v = values.clone();
        Arrays.sort(v);
        final int mid = v.length / 2;
        return (v.length & 1) == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
    }

    private static DaemonContext context(final Path dir, final Options options, final Path tokenFile) {
        final DaemonContext ctx = new DaemonContext().dir(dir).cell("auth").shardCount(64).capacityBlocks(1L << 20)
            .blockSize(BLOCK_SIZE).podTimeoutMs(0);
        ctx.serving().http("127.0.0.1:0").httpThreads(options.httpThreads).httpIdle("block");
        if (tokenFile != null) {
            ctx.serving().httpTokenFile(tokenFile.toString());
        }
        return ctx;
    }

    /** Pod p stores the first (p+1)/P of the prompt's blocks, as {@code bench http} does. */
    private static long fill(final IndexWriter index, final Options options, final int[] prompt) {
        final RouterKeyHasher hasher = new RouterKeyHasher(BLOCK_SIZE);
        final long seed = RouterKeyHasher.chainSeed(MODEL, null, null);
        final long[] keys = new long[prompt.length / BLOCK_SIZE];
        final int n = hasher.keys(seed, prompt, prompt.length, keys);
        for (int p = 0; p < options.pods; p++) {
            final int slot = index.registerPod("pod-" + p, MODEL);
            index.store(slot, keys, 0, Math.max(1, (int) ((long) n * (p + 1) / options.pods)));
        }
        return index.entryCount();
    }

    private static byte[] request(final int[] tokens, final int port, final String authorization) {
        final StringBuilder body = new StringBuilder(tokens.length * 7 + 64).append("{\"token_ids\":[");
        for (int i = 0; i < tokens.length; i++) {
            body.append(i == 0 ? "" : ",").append(tokens[i]);
        }
        body.append("],\"model_name\":\"").append(MODEL).append("\"}");
        final byte[] b = body.toString().getBytes(StandardCharsets.US_ASCII);
        final byte[] head = ("POST /query HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nContent-Type: application/json"
            + (authorization == null ? "" : "\r\nAuthorization: " + authorization) + "\r\nContent-Length: "
            + b.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
        final byte[] all = Arrays.copyOf(head, head.length + b.length);
        System.arraycopy(b, 0, all, head.length, b.length);
        return all;
    }

    /** Both daemons answer the same, and B refuses a query without its token: the door really is shut. */
    private static void check(final int portA, final int portB, final byte[] plain, final byte[] bearer,
        final int pods, final int tokens) throws Exception {
        final String a;
        final String b;
        try (HttpQueryBench.Client ca = new HttpQueryBench.Client(portA);
            HttpQueryBench.Client cb = new HttpQueryBench.Client(portB)) {
            a = new String(ca.buf, ca.bodyStart, ca.call(plain), StandardCharsets.UTF_8);
            b = new String(cb.buf, cb.bodyStart, cb.call(bearer), StandardCharsets.UTF_8);
        }
        final String last = "\"pod-" + (pods - 1) + "\":{\"0\":" + (tokens / BLOCK_SIZE) * BLOCK_SIZE + "}";
        if (!a.equals(b) || !a.contains(last)) {
            throw new IllegalStateException("the daemons' answers differ or lack " + last + ": " + a + " / " + b);
        }
        try (HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
            final HttpResponse<String> refused = client.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + portB + "/query")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"token_ids\":[1,2,3]}")).build(),
                HttpResponse.BodyHandlers.ofString());
            if (refused.statusCode() != 401) {
                throw new IllegalStateException("the daemon with a token answered a query without it: "
                    + refused.statusCode() + " " + refused.body());
            }
        }
    }

    /** One keep-alive connection, the same request back to back for {@code seconds}. */
    private static Histogram time(final int port, final byte[] request, final double seconds) throws IOException {
        final Histogram h = new Histogram(HIGHEST_NS, 3);
        if (seconds <= 0) {
            return h;
        }
        try (HttpQueryBench.Client client = new HttpQueryBench.Client(port)) {
            final long end = System.nanoTime() + (long) (seconds * 1e9);
            long t0 = System.nanoTime();
            while (t0 < end) {
                client.call(request);
                final long t1 = System.nanoTime();
                h.recordValue(Math.min(t1 - t0, HIGHEST_NS));
                t0 = t1;
            }
        }
        return h;
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim() + " (1, 5, 15 min load; runnable/total; pid)";
        } catch (final IOException ex) {
            return "unknown (" + ex + ")";
        }
    }
}
