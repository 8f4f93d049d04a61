package io.kvidx.bench;

import org.HdrHistogram.Histogram;

import java.lang.management.ManagementFactory;
import java.util.Arrays;

/**
 * A single-threaded latency harness: times every query with {@link System#nanoTime()} into an HdrHistogram
 * (what JMH's SampleTime mode does, without a fork per store), and measures allocation per query with
 * {@code com.sun.management.ThreadMXBean#getCurrentThreadAllocatedBytes}.
 *
 * <p>Several stores are measured in interleaved rounds (A B C A B C ...) so that a noisy neighbour on a shared
 * machine hurts them alike. Timings include the timer's own cost ({@link #timerOverheadNs()}).
 *
 * <p>Each query's keys are copied, before its timer starts, into one reused buffer: a router queries with the
 * keys its hasher has just written into its own buffer, so they are in cache. Querying the workload's chain
 * arrays directly would add a cache miss on the (cold) array to every store's latency, a cost no router pays.
 *
 * <p><b>Note:</b> not thread safe; run from one thread.
 */
public final class QueryHarness {
    private static final long HIGHEST_NS = 10_000_000_000L;
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final Workload workload;
    private final int[] order;
    private final long[] keys;
    private long sink;

    /**
     * @param workload queries come from its chain pool in its query order.
     */
    public QueryHarness(final Workload workload) {
        this(workload, workload.queryOrder());
    }

    /**
     * A harness that cycles through the first {@code chains} chains of the workload's query order only. After the
     * first pass their lines stay in the cache, so its figures are a store's cost with no miss on the index: the CPU
     * work a cold query does on top of its loads (docs/perf.md, ADR 0012).
     *
     * @param workload queries come from its chain pool.
     * @param chains   how many chains to cycle through: a power of two, at most the query order's length.
     * @return the harness.
     */
    public static QueryHarness cycling(final Workload workload, final int chains) {
        final int[] full = workload.queryOrder();
        if (chains < 1 || Integer.bitCount(chains) != 1 || chains > full.length) {
            throw new IllegalArgumentException("chains to cycle through must be a power of two in [1, "
                + full.length + "]: " + chains);
        }
        return new QueryHarness(workload, Arrays.copyOf(full, chains));
    }

    private QueryHarness(final Workload workload, final int[] order) {
        this.workload = workload;
        this.order = order;
        this.keys = new long[workload.chainLength()];
    }

    /**
     * Runs queries without recording, to let the JIT compile the store's query path.
     *
     * @param store    the store.
     * @param cursor   position in the query order to start at.
     * @param millis   how long.
     * @return the next cursor.
     */
    public int warmup(final QueryStore store, final int cursor, final long millis) {
        final long end = System.nanoTime() + millis * 1_000_000L;
        final int mask = order.length - 1;
        int i = cursor;
        long s = 0;
        while (System.nanoTime() < end) {
            for (int j = 0; j < 256; j++) {
                final long[] chain = workload.chain(order[i]);
                System.arraycopy(chain, 0, keys, 0, chain.length);
                s += store.query(keys, chain.length);
                i = (i + 1) & mask;
            }
        }
        sink += s;
        return i;
    }

    /**
     * Times queries for a while, recording each latency.
     *
     * @param store     the store.
     * @param cursor    position in the query order to start at.
     * @param millis    how long.
     * @param histogram receives the latencies in ns.
     * @param alloc     alloc[0] is increased by the bytes allocated by this thread meanwhile.
     * @return the next cursor.
     */
    public int measure(final QueryStore store, final int cursor, final long millis, final Histogram histogram,
        final long[] alloc) {
        return measure(store, cursor, millis, histogram, alloc, null);
    }

    /**
     * Times queries for a while, recording each latency, and also by the chain's {@link LengthBuckets} bucket.
     *
     * @param store     the store.
     * @param cursor    position in the query order to start at.
     * @param millis    how long.
     * @param histogram receives the latencies in ns.
     * @param alloc     alloc[0] is increased by the bytes allocated by this thread meanwhile.
     * @param byLength  one histogram per length bucket, also receiving each latency; null for none.
     * @return the next cursor.
     */
    public int measure(final QueryStore store, final int cursor, final long millis, final Histogram histogram,
        final long[] alloc, final Histogram[] byLength) {
        final int mask = order.length - 1;
        final long deadline = System.nanoTime() + millis * 1_000_000L;
        int i = cursor;
        long s = 0;
        final long allocBefore = THREADS.getCurrentThreadAllocatedBytes();
        long now = System.nanoTime();
        while (now < deadline) {
            final long[] chain = workload.chain(order[i]);
            final int length = chain.length;
            System.arraycopy(chain, 0, keys, 0, length);
            final long t0 = System.nanoTime();
            s += store.query(keys, length);
            now = System.nanoTime();
            final long took = Math.min(HIGHEST_NS, now - t0);
            histogram.recordValue(took);
            if (byLength != null) {
                byLength[LengthBuckets.of(length)].recordValue(took);
            }
            i = (i + 1) & mask;
        }
        alloc[0] += THREADS.getCurrentThreadAllocatedBytes() - allocBefore;
        sink += s;
        return i;
    }

    /**
     * @return a histogram sized for query latencies (1 ns .. 10 s, 3 significant digits).
     */
    public static Histogram newHistogram() {
        return new Histogram(1, HIGHEST_NS, 3);
    }

    /**
     * @return median cost of one back-to-back pair of nanoTime calls on this machine, ns.
     */
    public static long timerOverheadNs() {
        final Histogram h = newHistogram();
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 200_000; i++) {
                final long t0 = System.nanoTime();
                final long t1 = System.nanoTime();
                h.recordValue(Math.max(1, t1 - t0));
            }
        }
        return h.getValueAtPercentile(50);
    }

    /**
     * @return a value derived from all answers, so the JIT cannot drop the queries.
     */
    public long sink() {
        return sink;
    }
}
