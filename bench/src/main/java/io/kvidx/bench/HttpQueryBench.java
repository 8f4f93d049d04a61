package io.kvidx.bench;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code ./kvidx bench http}: what the daemon's HTTP API adds to a {@code POST /query}. An in-process daemon serves
 * {@code --http 127.0.0.1:0} over a small index filled through its own {@link IndexWriter} (pods holding different
 * prefix depths of each prompt); raw-socket HTTP/1.1 keep-alive clients (one connection per client thread,
 * pre-encoded requests) time each request; in the same run an {@link IndexReader} attached to the same cell answers
 * the same prompts in process (hash + query), so the table shows the HTTP overhead.
 */
final class HttpQueryBench {
    private static final String MODEL = "bench-model";
    private static final String CELL = "http";
    private static final int BLOCK_SIZE = 16;
    private static final long HIGHEST_NS = TimeUnit.SECONDS.toNanos(10);

    private HttpQueryBench() {
    }

    /** Parsed options (picocli; {@link #usage()} lists them). */
    @Command(name = "http")
    static final class Options {
        @Option(names = "--seconds")
        double seconds = 5;
        @Option(names = "--warmup")
        double warmup = 2;
        @Option(names = "--pods")
        int pods = 32;
        @Option(names = "--connections")
        int connections = 4;
        @Option(names = "--server-threads", split = ",")
        int[] serverThreads = {1, 2};
        @Option(names = "--prompts", split = ",")
        int[] prompts = {400, 2048, 8192};
        @Option(names = "--http-idle")
        String httpIdle = "block";
        @Option(names = {"-h", "--help"})
        boolean help;

        static Options parse(final String[] args) {
            final Options o = BenchOptions.parseInto(new Options(), args);
            if (o.help) {
                throw new IllegalArgumentException("options");
            }
            if (o.seconds <= 0 || o.warmup < 0) {
                throw new IllegalArgumentException("--seconds must be > 0 and --warmup >= 0");
            }
            if (!"block".equals(o.httpIdle) && !"busy-spin".equals(o.httpIdle)) {
                throw new IllegalArgumentException("--http-idle must be block or busy-spin: " + o.httpIdle);
            }
            if (o.pods < 1 || o.pods > 64) {
                throw new IllegalArgumentException("--pods must be in 1..64: " + o.pods);
            }
            if (o.connections < 1 || o.connections > 64) {
                throw new IllegalArgumentException("--connections must be in 1..64: " + o.connections);
            }
            for (final int p : o.prompts) {
                if (p < BLOCK_SIZE || p > 8192 * BLOCK_SIZE) {
                    throw new IllegalArgumentException("--prompts: each in " + BLOCK_SIZE + ".." + 8192 * BLOCK_SIZE);
                }
            }
            return o;
        }
    }

    /** @return usage text. */
    static String usage() {
        return """
            usage: kvidx bench http [--seconds S] [--warmup S] [--pods P] [--connections N]
                                    [--server-threads 1,2] [--prompts 400,2048,8192] [--http-idle block|busy-spin]
              POST /query over raw HTTP/1.1 keep-alive sockets against an in-process daemon, 1 and N connections,
              per server-thread count; and the same prompts hashed + queried in process on the same index.
              --seconds S         measured seconds per cell (default 5)
              --warmup S          warm-up seconds per cell (default 2)
              --pods P            pods, holding prefix depths (p+1)/P of each prompt (default 32)
              --connections N     the multi-connection cell (default 4)
              --server-threads L  HTTP event-loop threads to try (default 1,2)
              --prompts L         prompt lengths in tokens (default 400,2048,8192)
              --http-idle I       how the server's event loops wait: block (default) or busy-spin""";
    }

    /** One table row. */
    private record Row(int tokens, int serverThreads, int connections, Histogram http, double perSecond,
        int bodyBytes, Histogram local) {
    }

    /**
     * @param options parsed options.
     * @param out     where the table goes.
     * @throws Exception when the daemon, the sockets or the temp directory fail.
     */
    static void run(final Options options, final PrintStream out) throws Exception {
        out.println("load before the run: " + uptime());
        out.printf("cpus %d, %s %s; server event loops: %s%n", Runtime.getRuntime().availableProcessors(),
            System.getProperty("java.vm.name"), System.getProperty("java.version"), options.httpIdle);
        final SplittableRandom random = new SplittableRandom(42);
        final int[][] prompts = new int[options.prompts.length][];
        for (int i = 0; i < prompts.length; i++) {
            prompts[i] = new int[options.prompts[i]];
            for (int t = 0; t < prompts[i].length; t++) {
                prompts[i][t] = random.nextInt(150_000);
            }
        }
        final List<Row> rows = new ArrayList<>();
        for (final int threads : options.serverThreads) {
            runDaemon(options, threads, prompts, rows, out);
        }
        out.println();
        out.printf("%7s %7s %5s %9s %9s %9s %7s | %10s %10s | %7s %7s%n", "tokens", "srv-thr", "conns", "p50 us",
            "p99 us", "req/s", "resp B", "inproc p50", "inproc p99", "p50 x", "p99 x");
        for (final Row r : rows) {
            final double p50 = r.http.getValueAtPercentile(50);
            final double p99 = r.http.getValueAtPercentile(99);
            final double l50 = r.local.getValueAtPercentile(50);
            final double l99 = r.local.getValueAtPercentile(99);
            out.printf("%7d %7d %5d %9.1f %9.1f %9.0f %7d | %8.0f ns %8.0f ns | %7.1f %7.1f%n", r.tokens,
                r.serverThreads, r.connections, p50 / 1e3, p99 / 1e3, r.perSecond, r.bodyBytes, l50, l99, p50 / l50,
                p99 / l99);
        }
        out.println("(p50 x / p99 x: HTTP latency over the in-process hash + query latency for the same prompt; "
            + "in-process sampled as many times as the most requests any HTTP cell of that prompt measured)");
        out.println();
        out.println("loopback floor: the same request and response sizes over one loopback TCP connection to a thread"
            + " that " + ("busy-spin".equals(options.httpIdle) ? "spins" : "blocks") + ", no HTTP, no index:");
        for (int i = 0; i < prompts.length; i++) {
            final byte[] request = request(prompts[i], 0);
            int responseBytes = 256;
            for (final Row r : rows) {
                if (r.tokens == prompts[i].length) {
                    responseBytes = r.bodyBytes;
                }
            }
            final Histogram floor = LoopbackFloor.measure(request.length, responseBytes,
                "busy-spin".equals(options.httpIdle), Math.min(options.seconds, 3));
            out.printf("%7d tokens: request %,d B, response %,d B: p50 %.1f us, p99 %.1f us%n", prompts[i].length,
                request.length, responseBytes, floor.getValueAtPercentile(50) / 1e3,
                floor.getValueAtPercentile(99) / 1e3);
        }
        out.println("load after the run: " + uptime());
    }

    private static void runDaemon(final Options options, final int threads, final int[][] prompts,
        final List<Row> rows, final PrintStream out) throws Exception {
        final Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "kvidx-bench-http");
        try {
            final DaemonContext ctx = new DaemonContext().dir(dir).cell(CELL).shardCount(64).capacityBlocks(1L << 20)
                .blockSize(BLOCK_SIZE).podTimeoutMs(0);
            ctx.serving().http("127.0.0.1:0").httpThreads(threads).httpIdle(options.httpIdle);
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx)) {
                final RouterKeyHasher hasher = new RouterKeyHasher(BLOCK_SIZE);
                final long seed = RouterKeyHasher.chainSeed(MODEL, null, null);
                final IndexWriter index = daemon.index();
                final int[] slots = new int[options.pods];
                for (int p = 0; p < options.pods; p++) {
                    slots[p] = index.registerPod("pod-" + p, MODEL);
                }
                final int maxBlocks = Arrays.stream(prompts).mapToInt(a -> a.length).max().orElse(0) / BLOCK_SIZE;
                final long[] keys = new long[maxBlocks];
                for (final int[] prompt : prompts) {
                    final int n = hasher.keys(seed, prompt, prompt.length, keys);
                    for (int p = 0; p < options.pods; p++) {
                        index.store(slots[p], keys, 0, Math.max(1, (int) ((long) n * (p + 1) / options.pods)));
                    }
                }
                if (threads == options.serverThreads[0]) {
                    out.printf("index: %,d entries (blocks) held by %d pods, capacity %,d blocks, %,d bytes mapped; "
                        + "the touched entries are a few hundred KiB at most: they fit in L2/L3%n",
                        index.entryCount(), options.pods, index.capacity(), index.mappedBytes());
                }
                final int port = daemon.httpPort();
                final byte[][] requests = new byte[prompts.length][];
                for (int i = 0; i < prompts.length; i++) {
                    requests[i] = request(prompts[i], port);
                    final String body = checkOnce(port, requests[i]);
                    final int full = (prompts[i].length / BLOCK_SIZE) * BLOCK_SIZE;
                    final String last = "\"pod-" + (options.pods - 1) + "\":{\"0\":" + full + "}";
                    if (!body.contains(last)) {
                        throw new IllegalStateException("the answer for " + prompts[i].length + " tokens lacks "
                            + last + ": " + body.substring(0, Math.min(400, body.length())));
                    }
                }
                try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell(CELL))) {
                    for (int i = 0; i < prompts.length; i++) {
                        final int[] conns = options.connections == 1 ? new int[] {1} : new int[] {1,
                            options.connections};
                        final List<Row> cells = new ArrayList<>();
                        long most = 0;
                        for (final int c : conns) {
                            final Row row = httpCell(options, port, requests[i], prompts[i].length, threads, c);
                            most = Math.max(most, row.http.getTotalCount());
                            cells.add(row);
                        }
                        final Histogram local = inProcess(reader, hasher, seed, prompts[i], keys,
                            (int) Math.max(10_000, most));
                        for (final Row r : cells) {
                            rows.add(new Row(r.tokens, r.serverThreads, r.connections, r.http, r.perSecond,
                                r.bodyBytes, local));
                        }
                        out.printf("done: %d tokens, %d server threads%n", prompts[i].length, threads);
                    }
                }
            }
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static byte[] request(final int[] tokens, final int port) {
        final StringBuilder body = new StringBuilder(tokens.length * 7 + 64).append("{\"token_ids\":[");
        for (int i = 0; i < tokens.length; i++) {
            body.append(i == 0 ? "" : ",").append(tokens[i]);
        }
        body.append("],\"model_name\":\"").append(MODEL).append("\"}");
        final byte[] b = body.toString().getBytes(StandardCharsets.US_ASCII);
        final byte[] head = ("POST /query HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nContent-Type: application/json"
            + "\r\nContent-Length: " + b.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
        final byte[] all = Arrays.copyOf(head, head.length + b.length);
        System.arraycopy(b, 0, all, head.length, b.length);
        return all;
    }

    private static String checkOnce(final int port, final byte[] request) throws IOException {
        try (Client c = new Client(port)) {
            final int len = c.call(request);
            return new String(c.buf, c.bodyStart, len, StandardCharsets.UTF_8);
        }
    }

    private static Row httpCell(final Options options, final int port, final byte[] request, final int tokens,
        final int threads, final int connections) throws Exception {
        final Histogram[] histograms = new Histogram[connections];
        final Thread[] clients = new Thread[connections];
        final Throwable[] failure = new Throwable[1];
        final long start = System.nanoTime();
        final long measureFrom = start + (long) (options.warmup * 1e9);
        final long measureTo = measureFrom + (long) (options.seconds * 1e9);
        final int[] bodyBytes = new int[1];
        for (int c = 0; c < connections; c++) {
            final Histogram h = new Histogram(HIGHEST_NS, 3);
            histograms[c] = h;
            final int id = c;
            clients[c] = new Thread(() -> {
                try (Client client = new Client(port)) {
                    while (true) {
                        final long t0 = System.nanoTime();
                        if (t0 >= measureTo) {
                            break;
                        }
                        final int len = client.call(request);
                        final long t1 = System.nanoTime();
                        if (t0 >= measureFrom) {
                            h.recordValue(Math.min(t1 - t0, HIGHEST_NS));
                        }
                        if (id == 0) {
                            bodyBytes[0] = len;
                        }
                    }
                } catch (final Throwable ex) {
                    synchronized (failure) {
                        failure[0] = ex;
                    }
                }
            }, "http-client-" + c);
            clients[c].start();
        }
        for (final Thread t : clients) {
            t.join();
        }
        synchronized (failure) {
            if (failure[0] != null) {
                throw new IllegalStateException("client failed", failure[0]);
            }
        }
        final Histogram all = new Histogram(HIGHEST_NS, 3);
        for (final Histogram h : histograms) {
            all.add(h);
        }
        return new Row(tokens, threads, connections, all, all.getTotalCount() / options.seconds, bodyBytes[0], null);
    }

    private static Histogram inProcess(final IndexReader reader, final RouterKeyHasher hasher, final long seed,
        final int[] tokens, final long[] keys, final int iterations) {
        final PrefixResult result = new PrefixResult();
        final Histogram h = new Histogram(HIGHEST_NS, 3);
        long sink = 0;
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < iterations; i++) {
                final long t0 = System.nanoTime();
                final int n = hasher.keys(seed, tokens, tokens.length, keys);
                sink += reader.query(keys, n, null, result);
                final long t1 = System.nanoTime();
                if (round == 1) {
                    h.recordValue(Math.min(t1 - t0, HIGHEST_NS));
                }
            }
        }
        if (sink != (long) 2 * iterations * (tokens.length / BLOCK_SIZE)) {
            throw new IllegalStateException("in-process answers disagree: " + sink);
        }
        return h;
    }

    private static String uptime() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim() + " (1, 5, 15 min load; runnable/total; pid)";
        } catch (final IOException ex) {
            return "unknown (" + ex + ")";
        }
    }

    /**
     * A keep-alive HTTP/1.1 client on one socket: writes pre-encoded requests, reads Content-Length bodies (also
     * {@link AuthCostBench}'s).
     */
    static final class Client implements AutoCloseable {
        private final Socket socket;
        private final OutputStream out;
        private final InputStream in;
        byte[] buf = new byte[1 << 16];
        int bodyStart;

        Client(final int port) throws IOException {
            socket = new Socket();
            socket.setTcpNoDelay(true);
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            socket.setSoTimeout(10_000);
            out = socket.getOutputStream();
            in = socket.getInputStream();
        }

        /** @return the body's length; the body lies in {@link #buf} from {@link #bodyStart}. */
        int call(final byte[] request) throws IOException {
            out.write(request);
            out.flush();
            int filled = 0;
            int headEnd = -1;
            while (headEnd < 0) {
                if (filled == buf.length) {
                    throw new IOException("response head longer than " + buf.length + " bytes");
                }
                final int r = in.read(buf, filled, buf.length - filled);
                if (r < 0) {
                    throw new IOException("connection closed by the server");
                }
                final int from = Math.max(0, filled - 3);
                filled += r;
                for (int i = from; i + 3 < filled; i++) {
                    if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
                        headEnd = i + 4;
                        break;
                    }
                }
            }
            if (buf[9] != '2' || buf[10] != '0' || buf[11] != '0') {
                throw new IOException("not 200: " + new String(buf, 0, Math.min(filled, 400),
                    StandardCharsets.US_ASCII));
            }
            final int length = contentLength(headEnd);
            final int total = headEnd + length;
            if (total > buf.length) {
                buf = Arrays.copyOf(buf, Integer.highestOneBit(total) << 1);
            }
            while (filled < total) {
                final int r = in.read(buf, filled, total - filled);
                if (r < 0) {
                    throw new IOException("connection closed within a body");
                }
                filled += r;
            }
            if (filled != total) {
                throw new IOException("bytes after the body: " + (filled - total));
            }
            bodyStart = headEnd;
            return length;
        }

        private int contentLength(final int headEnd) throws IOException {
            final byte[] name = "content-length:".getBytes(StandardCharsets.US_ASCII);
            outer:
            for (int i = 0; i + name.length < headEnd; i++) {
                if (i > 0 && buf[i - 1] != '\n') {
                    continue;
                }
                for (int k = 0; k < name.length; k++) {
                    if (Character.toLowerCase(buf[i + k]) != name[k]) {
                        continue outer;
                    }
                }
                int v = 0;
                for (int j = i + name.length; j < headEnd && buf[j] != '\r'; j++) {
                    if (buf[j] >= '0' && buf[j] <= '9') {
                        v = v * 10 + (buf[j] - '0');
                    }
                }
                return v;
            }
            throw new IOException("no Content-Length in " + new String(buf, 0, headEnd, StandardCharsets.US_ASCII));
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
