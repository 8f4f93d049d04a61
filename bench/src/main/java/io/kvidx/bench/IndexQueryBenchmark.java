package io.kvidx.bench;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * The prefix query on the same {@link Workload} (default 64 pods, 2^20 blocks indexed, chains of 32, 256, 750 and
 * 4,096 blocks: workload B's length, a Mooncake prompt's average of 750 and beyond; the index takes up to 8,192) in each
 * store: kvidx's shared-memory index (binary search and exact walk), the naive {@code ConcurrentHashMap<Long,
 * long[]>} (one pass over the chain; {@code naive_per_pod_scan} the older N x P scan), and Chronicle Map with kvidx's
 * search and 64-pod bitmaps. Queries are chains of the pool in a
 * pre-generated random order. Each store is checked against the naive map before it is timed.
 *
 * <p>Before each invocation, outside the timed region, the next chain's keys are copied into one reused buffer:
 * a router queries with the keys its hasher has just written, which are in cache (ADR 0005). Per-invocation
 * setup makes JMH time each call on its own, so every figure includes one timer pair (20-30 ns here).
 *
 * <p>Every trial prints the chain length and whether the index fits in cache ({@link CacheFit}) before it runs;
 * JMH names the chain length ({@code chain}) in every figure.
 *
 * <p>Run (p50/p99 from SampleTime, B/op from the GC profiler):
 * <pre>./kvidx bench IndexQueryBenchmark -p store=kvidx -prof gc</pre>
 * Pods holding prefixes of a chain to many different depths (a synthetic shape busier than real prompts), out of
 * cache:
 * <pre>./kvidx bench IndexQueryBenchmark -p store=kvidx -p pods=128 -p holders=16 -p blocks=4194304 -p chain=750</pre>
 * The Mooncake trace's own prompts and holdings ({@link TraceWorkload}; {@code chain} is then the longest prompt kept,
 * {@code holders} and {@code blocks} do not apply):
 * <pre>./kvidx bench IndexQueryBenchmark -p store=kvidx -p workload=trace -p pods=128 -p chain=8192</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode({Mode.SampleTime, Mode.AverageTime})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {
    BenchFlags.CHRONICLE_ANALYTICS_OFF, BenchFlags.F1, BenchFlags.F2, BenchFlags.F3, BenchFlags.F4, BenchFlags.F5,
    BenchFlags.F6, BenchFlags.F7, BenchFlags.F8, BenchFlags.F9, BenchFlags.F10, BenchFlags.F11, BenchFlags.F12,
    BenchFlags.F13, "-Xms2g", "-Xmx2g"})
public class IndexQueryBenchmark {
    /** Which store answers; {@code -p store=kvidx,kvidx_noprefetch} compares the reader's prefetch on and off. */
    @Param({"kvidx", "kvidx_exact", "naive", "naive_per_pod_scan", "chronicle"})
    public String store;
    /**
     * {@code synthetic} ({@link Workload#generate}) or {@code trace} (the Mooncake trace's prompts and holdings,
     * {@link TraceWorkload}).
     */
    @Param({BenchOptions.SYNTHETIC})
    public String workload;
    /** Pods. */
    @Param({"64"})
    public int pods;
    /** Blocks per chain (the index's maximum is 8,192). */
    @Param({"32", "256", "750", "4096"})
    public int chain;
    /**
     * Mean pods holding a prefix of each chain, each to its own depth: 2 is workload B; 16 with 128 pods is a
     * fleet serving long conversation prompts, where the search splits into many branches.
     */
    @Param({"2"})
    public double holders;
    /** Distinct blocks indexed. */
    @Param({"1048576"})
    public long blocks;

    private Workload w;
    private QueryStore queryStore;
    private QueryStore closeLater;
    private int[] order;
    private int mask;
    private int cursor;
    private long[] keys;
    private int length;

    /**
     * Generates the workload and loads the store (the naive map is loaded for every store, as the reference).
     */
    @Setup(Level.Trial)
    public void setUp() {
        switch (workload) {
            case BenchOptions.SYNTHETIC -> w = Workload.generate(pods, chain, blocks, Workload.SEED_DEFAULT, holders);
            case BenchOptions.TRACE -> {
                try {
                    w = TraceWorkload.loadDefault(pods, chain, TraceWorkload.SEED_DEFAULT);
                } catch (final java.io.IOException ex) {
                    throw new java.io.UncheckedIOException(ex);
                }
            }
            default -> throw new IllegalArgumentException("workload must be synthetic or trace: " + workload);
        }
        order = w.queryOrder();
        mask = order.length - 1;
        final NaiveStore naive = NaiveStore.load(w);
        switch (store) {
            case "naive" -> queryStore = naive;
            case "naive_per_pod_scan" -> {
                closeLater = naive;
                queryStore = naive.perPodScanView();
            }
            case "kvidx" -> queryStore = KvidxStore.load(w, 0);
            case "kvidx_exact" -> {
                final KvidxStore kvidx = KvidxStore.load(w, 0);
                closeLater = kvidx;
                queryStore = kvidx.exactView();
            }
            case "kvidx_noprefetch" -> {
                final KvidxStore kvidx = KvidxStore.load(w, 0);
                closeLater = kvidx;
                queryStore = kvidx.noPrefetchView();
            }
            case "chronicle" -> queryStore = ChronicleStore.load(naive, pods);
            default -> throw new IllegalArgumentException("unknown store " + store);
        }
        Verifier.check(w, naive, queryStore, 2_000);
        final long indexBytes = queryStore.footprintBytes();
        System.out.printf("%n%s, %d pods, %.1f holders per chain, %d blocks indexed, %s: %s%n", w.chains(),
            pods, w.meanHolders(), w.blocks(), store, queryStore instanceof KvidxStore
                ? CacheFit.describe(indexBytes) : "footprint " + (indexBytes >> 20) + " MiB");
        if (queryStore != naive && closeLater != naive) {
            naive.close();
        }
        System.gc();
    }

    /**
     * Releases the store's files.
     */
    @TearDown(Level.Trial)
    public void tearDown() {
        queryStore.close();
        if (closeLater != null) {
            closeLater.close();
        }
    }

    /**
     * Copies the next chain of the query order into the key buffer (not timed).
     */
    @Setup(Level.Invocation)
    public void nextKeys() {
        if (keys == null) {
            keys = new long[w.chainLength()];
        }
        final long[] next = w.chain(order[cursor]);
        length = next.length;
        System.arraycopy(next, 0, keys, 0, length);
        cursor = (cursor + 1) & mask;
    }

    /**
     * @return the deepest depth (consumed by JMH).
     */
    @Benchmark
    public int query() {
        return queryStore.query(keys, length);
    }
}
