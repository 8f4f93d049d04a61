package io.kvidx.bench;

import org.HdrHistogram.Histogram;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code kvidx bench query}: loads one workload into kvidx, the naive map and Chronicle Map in this JVM, checks
 * that they agree, times the prefix query on each with {@link QueryHarness} in interleaved rounds, measures the
 * writer's store rate, and prints a table and (with --json) one JSON line last.
 */
public final class QueryBench {
    private static final int VERIFY_QUERIES = 2_000;

    private QueryBench() {
    }

    /**
     * Runs the comparison.
     *
     * @param o   options.
     * @param out where the table and JSON go.
     * @return the JSON report.
     */
    public static Json run(final BenchOptions o, final PrintStream out) {
        final long t0 = System.nanoTime();
        out.printf("kvidx bench query: pods=%d chain=%d blocks=%d seed=%d, %d CPUs, java %s%n", o.pods(), o.chain(),
            o.blocks(), o.seed(), Runtime.getRuntime().availableProcessors(), Runtime.version());
        final Workload w = Workload.generate(o.pods(), o.chain(), o.blocks(), o.seed());
        out.printf("workload: %d chains, %d distinct blocks, %d pod-blocks, %d holdings (%.1f s)%n", w.chainCount(),
            w.blocks(), w.podBlocks(), w.holdings(), (System.nanoTime() - t0) / 1e9);

        try (NaiveStore naive = NaiveStore.load(w);
             KvidxStore kvidx = KvidxStore.load(w, ChurnDriver.spareBlocks(o.churnWindow(), o.chain()), o.indexDir());
             ChronicleStore chronicle = ChronicleStore.load(naive, w.pods())) {
            final KvidxStore exact = kvidx.exactView();
            out.printf("loaded: naive %.1f MiB heap, kvidx %.1f MiB file, chronicle %.1f MiB file (%.1f s)%n",
                mib(naive.footprintBytes()), mib(kvidx.footprintBytes()), mib(chronicle.footprintBytes()),
                (System.nanoTime() - t0) / 1e9);
            for (final QueryStore s : List.of(kvidx, exact, chronicle)) {
                Verifier.check(w, naive, s, VERIFY_QUERIES);
            }
            final double probes = meanProbes(w, kvidx);
            final long timerNs = QueryHarness.timerOverheadNs();

            final List<QueryStore> stores = new ArrayList<>(List.of(kvidx, exact, naive, chronicle));
            // The memory floor, in the same rounds: the chain's home-entry loads alone, on the same file.
            final int oneLine = stores.size();
            stores.add(FloorStore.of(kvidx.reader(), FloorStore.Mode.ONE_LINE));
            final int chainLines = stores.size();
            stores.add(FloorStore.of(kvidx.reader(), FloorStore.Mode.CHAIN_LINES));
            if (o.experiments()) {
                final KvidxStore plain = kvidx.noPrefetchView();
                Verifier.check(w, naive, plain, VERIFY_QUERIES);
                stores.add(plain);
                // The same workload in a general cell (256 slots: inline pod lists and overflow bitmaps).
                final KvidxStore general = KvidxStore.load(w, ChurnDriver.spareBlocks(o.churnWindow(), o.chain()),
                    o.indexDir(), io.kvidx.client.index.IndexDescriptor.MAX_PODS).named("kvidx_cell256");
                Verifier.check(w, naive, general, VERIFY_QUERIES);
                stores.add(general);
                out.printf("experiments: %s; dependent random read: %.1f ns in 4 MiB, %.1f ns in 16 MiB,"
                    + " %.1f ns in 128 MiB%n", hugePages(), MemoryLatencyProbe.dependentReadNs(4L << 20, 3_000_000),
                    MemoryLatencyProbe.dependentReadNs(16L << 20, 3_000_000),
                    MemoryLatencyProbe.dependentReadNs(128L << 20, 3_000_000));
            }
            final QueryHarness harness = new QueryHarness(w);
            int cursor = 0;
            for (final QueryStore s : stores) {
                cursor = harness.warmup(s, cursor, o.warmupMs());
            }
            final List<Histogram> histograms = new ArrayList<>();
            final long[][] alloc = new long[stores.size()][1];
            for (int i = 0; i < stores.size(); i++) {
                histograms.add(QueryHarness.newHistogram());
            }
            final long roundMs = Math.max(1, o.measureMs() / o.rounds());
            for (int r = 0; r < o.rounds(); r++) {
                for (int i = 0; i < stores.size(); i++) {
                    cursor = harness.measure(stores.get(i), cursor, roundMs, histograms.get(i), alloc[i]);
                }
            }
            final List<LatencyStats> stats = new ArrayList<>();
            for (int i = 0; i < stores.size(); i++) {
                stats.add(LatencyStats.of(stores.get(i).name(), histograms.get(i), alloc[i][0]));
            }
            for (final QueryStore s : stores.subList(4, stores.size())) {
                s.close();
            }
            final double churnRate = churnStoresPerSecond(kvidx, o, Math.min(1_000, Math.max(100, roundMs)));

            final LatencyStats naiveStats = stats.get(2);
            out.println();
            out.printf("%-12s %10s %10s %10s %10s %10s %12s %10s %10s%n", "store", "p50 ns", "p90 ns", "p99 ns",
                "p99.9 ns", "mean ns", "alloc B/op", "x naive50", "x naive99");
            for (final LatencyStats s : stats) {
                out.printf("%-12s %10d %10d %10d %10d %10.1f %12.2f %10.1f %10.1f%n", s.name(), s.p50Ns(), s.p90Ns(),
                    s.p99Ns(), s.p999Ns(), s.meanNs(), s.allocBytesPerOp(), ratio(naiveStats.p50Ns(), s.p50Ns()),
                    ratio(naiveStats.p99Ns(), s.p99Ns()));
            }
            out.println();
            out.printf("memory: kvidx %.1f B/block (file %d B), chronicle %.1f B/block (file %d B, off-heap used %d B),"
                + " naive ~%.1f B/block heap%n", perBlock(kvidx.footprintBytes(), w), kvidx.footprintBytes(),
                perBlock(chronicle.footprintBytes(), w), chronicle.footprintBytes(), chronicle.offHeapMemoryUsed(),
                perBlock(naive.footprintBytes(), w));
            out.printf("writer: load %.2f M stores/s (store only, growing index); churn %.2f M stores/s"
                + " (each store paired with a remove)%n", kvidx.loadStoresPerSecond() / 1e6, churnRate / 1e6);
            out.printf("floor: one cold line p50 %d / p99 %d ns; the chain's %d home lines p50 %d / p99 %d ns; kvidx"
                + " spends %d ns (p50) beyond its loads%n", stats.get(oneLine).p50Ns(), stats.get(oneLine).p99Ns(),
                w.chainLength(), stats.get(chainLines).p50Ns(), stats.get(chainLines).p99Ns(),
                stats.get(0).p50Ns() - stats.get(chainLines).p50Ns());
            out.printf("kvidx probes/query %.2f; timer (nanoTime pair) %d ns, included in every figure; total %.1f s%n",
                probes, timerNs, (System.nanoTime() - t0) / 1e9);

            final Json json = new Json();
            for (int i = 0; i < stats.size(); i++) {
                final LatencyStats s = stats.get(i);
                final Json j = statsJson(s, naiveStats);
                final QueryStore store = i < stores.size() ? stores.get(i) : null;
                if (store == kvidx) {
                    j.put("load_stores_per_s", kvidx.loadStoresPerSecond())
                        .put("churn_stores_per_s", churnRate)
                        .put("probes_per_query", probes);
                }
                if (store == kvidx || store == naive || store == chronicle) {
                    j.put("bytes_per_block", perBlock(store.footprintBytes(), w))
                        .put("footprint_bytes", store.footprintBytes());
                }
                json.put(s.name(), j);
            }
            json.put("workload", new Json().put("pods", w.pods()).put("chain", w.chainLength())
                .put("blocks", w.blocks()).put("chains", w.chainCount()).put("seed", w.seed())
                .put("timer_overhead_ns", timerNs).put("sink", harness.sink() & 1));
            if (o.json()) {
                out.println(json);
            }
            return json;
        }
    }

    private static Json statsJson(final LatencyStats s, final LatencyStats naive) {
        return new Json()
            .put("p50_ns", s.p50Ns())
            .put("p90_ns", s.p90Ns())
            .put("p99_ns", s.p99Ns())
            .put("p999_ns", s.p999Ns())
            .put("mean_ns", s.meanNs())
            .put("alloc_bytes_per_op", s.allocBytesPerOp())
            .put("queries", s.queries())
            .put("ratio_vs_naive_p50", ratio(naive.p50Ns(), s.p50Ns()))
            .put("ratio_vs_naive_p99", ratio(naive.p99Ns(), s.p99Ns()));
    }

    private static double meanProbes(final Workload w, final KvidxStore kvidx) {
        final int[] order = w.queryOrder();
        final int n = Math.min(10_000, order.length);
        long probes = 0;
        for (int i = 0; i < n; i++) {
            kvidx.query(w.chain(order[i]));
            probes += kvidx.lastProbes();
        }
        return (double) probes / n;
    }

    /**
     * Stores new chains (each paired with a removal of an old one) on the calling thread for a while.
     */
    static double churnStoresPerSecond(final KvidxStore kvidx, final BenchOptions o, final long millis) {
        final ChurnDriver churn = new ChurnDriver(kvidx.writer(), Math.min(o.pods(), 64), o.chain(),
            o.churnWindow(), o.seed() ^ 0x5DEECE66DL);
        final long warmEnd = System.nanoTime() + millis / 2 * 1_000_000L;
        while (System.nanoTime() < warmEnd) {
            churn.step();
        }
        final long start = System.nanoTime();
        final long end = start + millis * 1_000_000L;
        long stored = 0;
        long now;
        do {
            for (int i = 0; i < 16; i++) {
                stored += churn.step();
            }
            now = System.nanoTime();
        } while (now < end);
        return stored * 1e9 / (now - start);
    }

    private static String hugePages() {
        try {
            return java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/meminfo")).stream()
                .filter(l -> l.startsWith("AnonHugePages") || l.startsWith("ShmemHugePages")
                    || l.startsWith("FileHugePages"))
                .map(l -> l.replaceAll("\\s+", " ")).reduce((a, b) -> a + ", " + b).orElse("no huge page info");
        } catch (final java.io.IOException ex) {
            return "no /proc/meminfo";
        }
    }

    private static double ratio(final long naive, final long value) {
        return value <= 0 ? 0 : (double) naive / value;
    }

    private static double perBlock(final long bytes, final Workload w) {
        return (double) bytes / Math.max(1, w.blocks());
    }

    private static double mib(final long bytes) {
        return bytes / (1024.0 * 1024.0);
    }
}
