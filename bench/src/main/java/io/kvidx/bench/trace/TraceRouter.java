package io.kvidx.bench.trace;

import io.kvidx.bench.Json;
import io.kvidx.bench.LengthBuckets;
import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import org.HdrHistogram.Histogram;

import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/**
 * The router process of {@code bench trace}: attaches to the daemon's index read-only through ipc-client and,
 * from the start time the driver gives it, sends each request's prefix query ({@link IndexReader#query}) at the
 * request's place in the replay window, timing each one. A second thread times event-to-visible: it takes the
 * newest batch the driver has published that carries a probe key (a block no pod held before), and polls
 * {@link IndexReader#lookup} until the key appears; the time from the driver's send (shared {@link SendTimes}) to
 * then is one sample. At the end it waits for the per-pod end markers the driver sends after the last batch: when
 * all are visible every writer has applied the whole replay (the drain time). A probe key still not visible by
 * then, or 5 s after its send, is lost (an event the index never showed).
 *
 * <p>Protocol: stdout {@code ATTACHED}, stdin {@code START <nanoTime>}, stdout {@code RESULT <json>}.
 */
public final class TraceRouter {
    /** The hidden bench sub-command that runs this class. */
    public static final String COMMAND = "trace-router";
    private static final long PROBE_GIVE_UP_NS = 5_000_000_000L;
    /** How long the event-to-visible prober parks between two looks at its probe key. */
    private static final long PROBE_POLL_NS = 20_000;
    /** Most milliseconds of the JIT warm-up's querying, once its index is built. */
    private static final long WARM_UP_LIMIT_MS = 10_000;

    private TraceRouter() {
    }

    /**
     * How the router process queries.
     *
     * @param busy          it answers the previous request, untimed, right before each timed query (its code,
     *                      result and pod table warm), as a router serving more traffic than the trace's pace.
     * @param warmUpQueries most queries of its JIT warm-up on a private index before it attaches ({@link QueryWarmUp};
     *                      0: none).
     * @param leadMs        milliseconds by which each request's query comes before its engine's events are sent: 0
     *                      queries at the moment the events leave (the default), while in a fleet the router routes a
     *                      request before the engine computes, and so sends, its blocks (a prefill's time later).
     */
    public record Options(boolean busy, long warmUpQueries, long leadMs) {
        /** Queries of the JIT warm-up by default: about 2 s of them on the 2-vCPU development VM. */
        public static final long WARM_UP_QUERIES_DEFAULT = 200_000;
        /** A router that sleeps between requests, warmed up, querying as the events leave. */
        public static final Options DEFAULT = new Options(false, WARM_UP_QUERIES_DEFAULT, 0);

        /**
         * @throws IllegalArgumentException when a count or the lead is negative.
         */
        public Options {
            if (warmUpQueries < 0 || leadMs < 0) {
                throw new IllegalArgumentException("router warm-up queries and lead must be 0 or more: "
                    + warmUpQueries + ", " + leadMs + " ms");
            }
        }
    }

    /**
     * @param args index dir, cell, query file, send-time file, window ms, drain limit ms, and whether the router is
     *             busy: it answers the previous request, untimed, right before each timed query, as a router serving
     *             more traffic than the trace's pace (its code, result and pod table warm; the prompt's own index
     *             lines only as far as the two prompts share them). Otherwise each query comes to a router that
     *             slept since the last one; and the most queries of the JIT warm-up ({@link QueryWarmUp}) made
     *             before it reports {@code ATTACHED} (0: none); and the lead, in milliseconds, of each query
     *             over its request's events ({@link Options#leadMs()}).
     * @throws Exception when a file cannot be read or the thread is interrupted.
     */
    public static void main(final String[] args) throws Exception {
        final Path dir = Path.of(args[0]);
        final String cell = args[1];
        final Path queryFile = Path.of(args[2]);
        final Path sendFile = Path.of(args[3]);
        final long windowNs = Long.parseLong(args[4]) * 1_000_000L;
        final long drainLimitNs = Long.parseLong(args[5]) * 1_000_000L;
        final boolean busyRouter = Boolean.parseBoolean(args[6]);
        final long warmUpQueries = Long.parseLong(args[7]);
        final long leadMs = Long.parseLong(args[8]);
        final Queries q = Queries.read(queryFile);
        final SendTimes sent = SendTimes.map(sendFile, q.n + q.markers.length);
        final long warmUpStart = System.nanoTime();
        final long warmedUp = QueryWarmUp.run(q.markers.length, warmUpQueries, WARM_UP_LIMIT_MS);
        final long warmUpMs = (System.nanoTime() - warmUpStart) / 1_000_000;
        try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell(cell)
            .attachTimeoutMs(30_000))) {
            System.out.println("ATTACHED");
            System.out.flush();
            final String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
                .readLine();
            if (line == null || !line.startsWith("START ")) {
                System.out.println("ERROR expected START, got " + line);
                return;
            }
            // Each request is queried leadMs before its engine's events are sent (the driver keeps the plan's times).
            final long t0 = Long.parseLong(line.substring(6).trim()) - leadMs * 1_000_000L;
            final Prober prober = new Prober(reader, q, sent);
            prober.start();
            final Histogram latency = new Histogram(10_000_000_000L, 3);
            final Histogram[] byLength = new Histogram[LengthBuckets.count()];
            // What each answer's search met, per bucket: probes made, holders, distinct depths among them.
            final Histogram[][] shape = new Histogram[LengthBuckets.count()][SHAPE.length];
            for (int b = 0; b < byLength.length; b++) {
                byLength[b] = new Histogram(10_000_000_000L, 3);
                for (int s = 0; s < SHAPE.length; s++) {
                    shape[b][s] = new Histogram(1L << 20, 2);
                }
            }
            int[] depths = new int[64];
            final PrefixResult result = new PrefixResult();
            // The keys a router's hasher has just written: copied here before the timer starts, as the query
            // benches hand theirs (ADR 0005); the replay's own arrays were written long before and are cold.
            final long[] hot = new long[maxLength(q)];
            long busy = 0;
            long lagMaxNs = 0;
            long keysQueried = 0;
            for (int i = 0; i < q.n; i++) {
                final long target = t0 + q.ts[i] * windowNs / q.spanMs;
                long now = System.nanoTime();
                while (now < target) {
                    LockSupport.parkNanos(Math.min(target - now, 200_000));
                    now = System.nanoTime();
                }
                lagMaxNs = Math.max(lagMaxNs, now - target);
                if (busyRouter && i > 0) {
                    System.arraycopy(q.keys[i - 1], 0, hot, 0, q.keys[i - 1].length);
                    try {
                        reader.query(hot, q.keys[i - 1].length, null, result);
                    } catch (final IndexBusyException ex) {
                        // untimed: only its cache effect counts
                    }
                }
                final int length = q.keys[i].length;
                System.arraycopy(q.keys[i], 0, hot, 0, length);
                final long s = System.nanoTime();
                long took;
                try {
                    reader.query(hot, length, null, result);
                    took = System.nanoTime() - s;
                    keysQueried += q.keys[i].length;
                    if (depths.length < result.count()) {
                        depths = new int[result.count()];
                    }
                    final Histogram[] met = shape[LengthBuckets.of(length)];
                    met[0].recordValue(result.probes());
                    met[1].recordValue(result.count());
                    met[2].recordValue(distinctDepths(result, depths));
                } catch (final IndexBusyException ex) {
                    busy++;
                    took = System.nanoTime() - s;
                }
                latency.recordValue(took);
                byLength[LengthBuckets.of(q.keys[i].length)].recordValue(took);
            }
            final long queriesEnd = System.nanoTime();
            // Drain: every pod's end marker visible means every writer applied everything before it.
            long drainEnd = 0;
            int markersSeen = 0;
            final long drainDeadline = t0 + windowNs + drainLimitNs;
            final long[] bits = new long[4];
            for (int m = 0; m < q.markers.length; m++) {
                while (System.nanoTime() < drainDeadline) {
                    if (sent.get(q.n + m) != 0 && visible(reader, q.markers[m], bits)) {
                        markersSeen++;
                        break;
                    }
                    Thread.yield();
                }
            }
            drainEnd = System.nanoTime();
            prober.running = false;
            prober.join(10_000);
            final Histogram e2v = prober.histogram;
            final Json json = new Json()
                .put("queries", (long) q.n - busy).put("busy", busy).put("keys_queried", keysQueried)
                .put("busy_router", busyRouter)
                .put("warm_up_queries", warmedUp).put("warm_up_ms", warmUpMs).put("lead_ms", leadMs)
                .put("query_p50_ns", latency.getValueAtPercentile(50))
                .put("query_p99_ns", latency.getValueAtPercentile(99))
                .put("query_p999_ns", latency.getValueAtPercentile(99.9))
                .put("query_max_ns", latency.getMaxValue())
                .putRaw("query_by_length", byLength(byLength, shape))
                .put("query_lag_max_ms", lagMaxNs / 1_000_000)
                .put("queries_end_ns", queriesEnd)
                .put("e2v_samples", e2v.getTotalCount())
                .put("e2v_p50_us", e2v.getValueAtPercentile(50) / 1e3)
                .put("e2v_p99_us", e2v.getValueAtPercentile(99) / 1e3)
                .put("e2v_max_us", e2v.getMaxValue() / 1e3)
                .put("probes_lost", prober.lost)
                .put("markers", q.markers.length).put("markers_seen", markersSeen)
                .put("drain_end_ns", drainEnd)
                .put("index_entries", reader.entryCount())
                .put("index_bytes", Files.size(reader.path()));
            System.out.println("RESULT " + json);
            System.out.flush();
        }
    }

    private static int maxLength(final Queries q) {
        int max = 1;
        for (int i = 0; i < q.n; i++) {
            max = Math.max(max, q.keys[i].length);
        }
        return max;
    }

    /** What {@code query_by_length} says each bucket's answers met, medians: the search's probes, holders, depths. */
    static final String[] SHAPE = {"probes_p50", "holders_p50", "depths_p50"};

    /** @return how many distinct depths the answer's pods hold. */
    static int distinctDepths(final PrefixResult result, final int[] scratch) {
        final int n = result.count();
        for (int i = 0; i < n; i++) {
            scratch[i] = result.depth(i);
        }
        java.util.Arrays.sort(scratch, 0, n);
        int distinct = 0;
        for (int i = 0; i < n; i++) {
            if (i == 0 || scratch[i] != scratch[i - 1]) {
                distinct++;
            }
        }
        return distinct;
    }

    /**
     * @return the per-length latencies, a JSON array of max_blocks, queries, p50_ns, p99_ns and the medians of
     * {@link #SHAPE} (no empty buckets).
     */
    private static String byLength(final Histogram[] byLength, final Histogram[][] shape) {
        return LengthBuckets.json(byLength, (bucket, b) -> {
            for (int s = 0; s < SHAPE.length; s++) {
                bucket.put(SHAPE[s], shape[b][s].getValueAtPercentile(50));
            }
        });
    }

    private static boolean visible(final IndexReader reader, final long key, final long[] bits) {
        try {
            return reader.lookup(key, bits);
        } catch (final IndexBusyException ex) {
            return false;
        }
    }

    /** Samples event-to-visible on the newest published batch with a probe key. */
    private static final class Prober extends Thread {
        final IndexReader reader;
        final Queries q;
        final SendTimes sent;
        final Histogram histogram = new Histogram(60_000_000_000L, 3);
        volatile boolean running = true;
        volatile long lost;

        Prober(final IndexReader reader, final Queries q, final SendTimes sent) {
            super("trace-prober");
            setDaemon(true);
            this.reader = reader;
            this.q = q;
            this.sent = sent;
        }

        @Override
        public void run() {
            final long[] bits = new long[4];
            int done = -1;
            int frontier = 0;
            while (running && done < q.n - 1) {
                while (frontier < q.n && sent.get(frontier) != 0) {
                    frontier++;
                }
                int pick = -1;
                for (int i = frontier - 1; i > done; i--) {
                    if (q.probe[i] != 0) {
                        pick = i;
                        break;
                    }
                }
                if (pick < 0) {
                    LockSupport.parkNanos(50_000);
                    continue;
                }
                final long sentAt = sent.get(pick);
                boolean seen = false;
                while (running) {
                    if (visible(reader, q.probe[pick], bits)) {
                        histogram.recordValue(Math.max(0, System.nanoTime() - sentAt));
                        seen = true;
                        break;
                    }
                    if (System.nanoTime() - sentAt > PROBE_GIVE_UP_NS) {
                        break;
                    }
                    // Parked, not spinning or yielding: on a host with few cores a prober that keeps a CPU busy
                    // delays the very writer it waits for. Costs the measurement up to one park (~20-80 us).
                    LockSupport.parkNanos(PROBE_POLL_NS);
                }
                // Stopped means every end marker is visible, so every earlier batch is applied: one last look.
                if (!seen && !visible(reader, q.probe[pick], bits)) {
                    lost++;
                }
                done = pick;
            }
        }
    }

    /** The query file {@link TracePlan#writeQueries} writes, plus the end markers' keys. */
    static final class Queries {
        int n;
        long spanMs;
        long[] ts;
        long[][] keys;
        long[] probe;
        long[] markers;

        static Queries read(final Path file) throws IOException {
            final Queries q = new Queries();
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file),
                1 << 16))) {
                q.n = in.readInt();
                q.spanMs = in.readLong();
                q.ts = new long[q.n];
                q.keys = new long[q.n][];
                q.probe = new long[q.n];
                for (int i = 0; i < q.n; i++) {
                    q.ts[i] = in.readLong();
                    q.keys[i] = new long[in.readInt()];
                    for (int j = 0; j < q.keys[i].length; j++) {
                        q.keys[i][j] = in.readLong();
                    }
                    q.probe[i] = in.readLong();
                }
                q.markers = new long[in.readInt()];
                for (int m = 0; m < q.markers.length; m++) {
                    q.markers[m] = in.readLong();
                }
            }
            return q;
        }
    }
}
