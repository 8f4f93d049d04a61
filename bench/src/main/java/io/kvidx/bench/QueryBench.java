package io.kvidx.bench;

import io.kvidx.client.index.IndexDescriptor;
import org.HdrHistogram.Histogram;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code kvidx bench query}: loads one workload into kvidx, the naive map and Chronicle Map in this JVM, in a 64-pod
 * cell (1-word pod bitmaps) and beside it in a 256-pod cell (kvidx's general layout, 4-word bitmaps for the
 * baselines), checks that every store agrees with the naive map, times the prefix query on each with
 * {@link QueryHarness} in interleaved rounds, measures the writer's store and remove rates, and prints a table and
 * (with --json) one JSON line last. Rows are named by store and cell: "kvidx", "naive", "chronicle" are the 64-pod
 * cell, the same names with "_cell256" the 256-pod cell; each row's ratios are taken against the naive row of its
 * own cell.
 */
public final class QueryBench {
    private static final int VERIFY_QUERIES = 2_000;
    /** Suffix of the 256-pod cell's rows. */
    static final String CELL256 = "_cell256";
    /** Chains the in-cache experiment rows cycle through: 16 x 32 home lines (32 KiB) stay in L1/L2. */
    static final int CACHED_CHAINS = 16;
    /** Suffix of the in-cache experiment rows. */
    static final String CACHED = "_cached" + CACHED_CHAINS;

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
        if (o.traceWorkload() && o.experiments()) {
            throw new IllegalArgumentException("--experiments needs the synthetic workload (its group layout and"
                + " cached rows assume chains of one length)");
        }
        out.printf("kvidx bench query: %s workload, pods=%d chain=%d%s seed=%d, %d CPUs, java %s%n",
            o.traceWorkload() ? "Mooncake trace" : "synthetic", o.pods(), o.chain(), o.traceWorkload() ? " at most"
                : String.format(" holders=%.1f blocks=%d", o.holders(), o.blocks()), o.seed(),
            Runtime.getRuntime().availableProcessors(), Runtime.version());
        final Workload w = o.buildWorkload();
        out.printf("workload: %d chains, %d distinct blocks, %d pod-blocks, %d holdings (%.1f s)%n", w.chainCount(),
            w.blocks(), w.podBlocks(), w.holdings(), (System.nanoTime() - t0) / 1e9);
        final long spare = ChurnDriver.spareBlocks(o.churnWindow(), o.churnChain());
        // With more than 64 pods the fleet's own cell is already the general layout: no second cell.
        final boolean twoCells = w.pods() <= IndexDescriptor.DIRECT_MAX_PODS;
        final int narrowCell = Math.max(w.pods(), IndexDescriptor.DIRECT_MAX_PODS);

        try (NaiveStore naive = NaiveStore.load(w);
             KvidxStore kvidx = KvidxStore.load(w, spare, o.indexDir());
             ChronicleStore chronicle = ChronicleStore.load(naive, w.pods());
             NaiveStore naive256 = twoCells ? NaiveStore.load(w, 4, "naive" + CELL256) : null;
             KvidxStore kvidx256 = twoCells
                 ? KvidxStore.load(w, spare, o.indexDir(), IndexDescriptor.MAX_PODS).named("kvidx" + CELL256) : null;
             ChronicleStore chronicle256 = twoCells
                 ? ChronicleStore.load(naive256, w.pods(), "chronicle" + CELL256) : null) {
            final KvidxStore exact = kvidx.exactView();
            final NaiveStore perPod = naive.perPodScanView();
            out.printf("loaded: naive %.1f MiB heap, kvidx %.1f MiB file, chronicle %.1f MiB file (%d-pod cell)%s"
                + " (%.1f s)%n", mib(naive.footprintBytes()), mib(kvidx.footprintBytes()),
                mib(chronicle.footprintBytes()), narrowCell, twoCells ? String.format("; naive %.1f MiB heap, kvidx"
                    + " %.1f MiB file, chronicle %.1f MiB file (256-pod cell)", mib(naive256.footprintBytes()),
                    mib(kvidx256.footprintBytes()), mib(chronicle256.footprintBytes())) : "",
                (System.nanoTime() - t0) / 1e9);
            out.printf("every figure below: %s; kvidx %s%n", w.chains(), CacheFit.describe(kvidx.footprintBytes()));
            for (final QueryStore s : List.of(kvidx, exact, chronicle, perPod)) {
                Verifier.check(w, naive, s, VERIFY_QUERIES);
            }
            if (twoCells) {
                Verifier.check(w, naive, naive256, VERIFY_QUERIES);
                for (final QueryStore s : List.of(kvidx256, chronicle256)) {
                    Verifier.check(w, naive256, s, VERIFY_QUERIES);
                }
            }
            final double probes = meanProbes(w, kvidx);
            final long timerNs = QueryHarness.timerOverheadNs();

            final List<QueryStore> stores = new ArrayList<>(List.of(kvidx, exact, naive, chronicle, perPod));
            if (twoCells) {
                stores.addAll(List.of(kvidx256, naive256, chronicle256));
            }
            // The memory floor, in the same rounds: the chain's home-entry loads alone, on the same file.
            final int oneLine = stores.size();
            stores.add(FloorStore.of(kvidx.reader(), FloorStore.Mode.ONE_LINE));
            final int chainLines = stores.size();
            stores.add(FloorStore.of(kvidx.reader(), FloorStore.Mode.CHAIN_LINES));
            final int closeFrom = stores.size() - 2;
            // Rows timed over a few chains that stay in the cache, by their own harness (null without --experiments).
            CachedRow kvidxCached = null;
            CachedRow floorCached = null;
            CachedRow kvidx256Cached = null;
            if (o.experiments()) {
                final KvidxStore plain = kvidx.noPrefetchView();
                Verifier.check(w, naive, plain, VERIFY_QUERIES);
                stores.add(plain);
                stores.add(FloorStore.of(kvidx.reader(), FloorStore.Mode.CHAIN_FULL_LINES));
                if (twoCells) {
                    // A multi-depth layout's reader, on a group table built from this index (ADR 0010).
                    for (final GroupStore.Mode m : GroupStore.Mode.values()) {
                        final GroupStore gs = GroupStore.build(m, kvidx, w);
                        if (m != GroupStore.Mode.BOUND) {
                            Verifier.check(w, naive, gs, VERIFY_QUERIES);
                        }
                        stores.add(gs);
                    }
                }
                // The same kvidx reader and floor with every line in the cache: the work a query does beyond its
                // misses (ADR 0012).
                kvidxCached = new CachedRow(kvidx);
                floorCached = new CachedRow(stores.get(chainLines));
                stores.add(kvidxCached);
                stores.add(floorCached);
                if (twoCells) {
                    kvidx256Cached = new CachedRow(kvidx256);
                    stores.add(kvidx256Cached);
                }
                out.printf("experiments: %s; dependent random read: %.1f ns in 4 MiB, %.1f ns in 16 MiB,"
                    + " %.1f ns in 128 MiB%n", hugePages(), MemoryLatencyProbe.dependentReadNs(4L << 20, 3_000_000),
                    MemoryLatencyProbe.dependentReadNs(16L << 20, 3_000_000),
                    MemoryLatencyProbe.dependentReadNs(128L << 20, 3_000_000));
            }
            final QueryHarness harness = new QueryHarness(w);
            final QueryHarness cachedHarness = QueryHarness.cycling(w, CACHED_CHAINS);
            int cursor = 0;
            int cachedCursor = 0;
            for (final QueryStore s : stores) {
                if (s instanceof CachedRow) {
                    cachedCursor = cachedHarness.warmup(s, cachedCursor, o.warmupMs());
                } else {
                    cursor = harness.warmup(s, cursor, o.warmupMs());
                }
            }
            final List<Histogram> histograms = new ArrayList<>();
            final long[][] alloc = new long[stores.size()][1];
            // On the trace's prompts, each store's latency by prompt length too.
            final Histogram[][] byLength = new Histogram[stores.size()][];
            for (int i = 0; i < stores.size(); i++) {
                histograms.add(QueryHarness.newHistogram());
                byLength[i] = o.traceWorkload() ? LengthBuckets.newHistograms() : null;
            }
            final long roundMs = Math.max(1, o.measureMs() / o.rounds());
            for (int r = 0; r < o.rounds(); r++) {
                for (int i = 0; i < stores.size(); i++) {
                    final QueryStore s = stores.get(i);
                    if (s instanceof CachedRow) {
                        cachedCursor = cachedHarness.measure(s, cachedCursor, roundMs, histograms.get(i), alloc[i]);
                    } else {
                        cursor = harness.measure(s, cursor, roundMs, histograms.get(i), alloc[i], byLength[i]);
                    }
                }
            }
            final List<LatencyStats> stats = new ArrayList<>();
            for (int i = 0; i < stores.size(); i++) {
                stats.add(LatencyStats.of(stores.get(i).name(), histograms.get(i), alloc[i][0]));
            }
            for (final QueryStore s : stores.subList(closeFrom, stores.size())) {
                s.close();
            }
            final ChurnRate churn = churn(kvidx, o, Math.min(1_000, Math.max(100, roundMs)));

            final LatencyStats naiveStats = stats.get(stores.indexOf(naive));
            final LatencyStats naive256Stats = twoCells ? stats.get(stores.indexOf(naive256)) : naiveStats;
            out.println();
            out.printf("%-22s %9s %9s %9s %9s %10s %11s %10s %10s%n", "store", "p50 ns", "p90 ns", "p99 ns",
                "p99.9 ns", "mean ns", "alloc B/op", "x naive50", "x naive99");
            for (int i = 0; i < stats.size(); i++) {
                final LatencyStats s = stats.get(i);
                final LatencyStats ref = s.name().contains(CELL256) ? naive256Stats : naiveStats;
                // A row timed in cache has no naive row of its kind to compare with: no ratio.
                final boolean cached = stores.get(i) instanceof CachedRow;
                out.printf("%-22s %9d %9d %9d %9d %10.1f %11.2f %10s %10s%n", s.name(), s.p50Ns(), s.p90Ns(),
                    s.p99Ns(), s.p999Ns(), s.meanNs(), s.allocBytesPerOp(),
                    cached ? "-" : String.format("%.2f", ratio(ref.p50Ns(), s.p50Ns())),
                    cached ? "-" : String.format("%.2f", ratio(ref.p99Ns(), s.p99Ns())));
            }
            out.println("(x naive: the naive row of the same cell over this row; naive is one pass over the chain,"
                + " naive_per_pod_scan walks the chain once per pod)");
            if (o.traceWorkload()) {
                for (final QueryStore s : List.of(kvidx, naive, chronicle)) {
                    out.printf("%s by prompt length:%n%s", s.name(), LengthBuckets.table(byLength[stores.indexOf(s)]));
                }
            }
            out.println();
            out.printf("memory (%d-pod cell): kvidx %.1f B/block (file %d B), chronicle %.1f B/block (file %d B,"
                + " off-heap used %d B), naive ~%.1f B/block heap%n", narrowCell, perBlock(kvidx.footprintBytes(), w),
                kvidx.footprintBytes(), perBlock(chronicle.footprintBytes(), w), chronicle.footprintBytes(),
                chronicle.offHeapMemoryUsed(), perBlock(naive.footprintBytes(), w));
            if (twoCells) {
                out.printf("memory (256-pod cell): kvidx %.1f B/block (file %d B), chronicle %.1f B/block (file %d B),"
                    + " naive ~%.1f B/block heap%n", perBlock(kvidx256.footprintBytes(), w),
                    kvidx256.footprintBytes(), perBlock(chronicle256.footprintBytes(), w),
                    chronicle256.footprintBytes(), perBlock(naive256.footprintBytes(), w));
            }
            out.printf("writer: load %.2f M new stores/s (%d new pod-blocks of %d stored, the rest re-stores a pod"
                + " already held; growing index); churn %.2f M stores/s + %.2f M removes/s%n",
                kvidx.loadStoresPerSecond() / 1e6, kvidx.loadStores(), w.podBlocks(), churn.storesPerS / 1e6,
                churn.removesPerS / 1e6);
            out.printf("floor: one cold line p50 %d / p99 %d ns; the chain's home lines p50 %d / p99 %d ns; kvidx"
                + " spends %d ns (p50) beyond its loads%n", stats.get(oneLine).p50Ns(), stats.get(oneLine).p99Ns(),
                stats.get(chainLines).p50Ns(), stats.get(chainLines).p99Ns(),
                stats.get(0).p50Ns() - stats.get(chainLines).p50Ns());
            final LatencyStats floor = stats.get(chainLines);
            final LatencyStats kvidxStats = stats.get(stores.indexOf(kvidx));
            out.printf("x floor_lines (p50 / p99): kvidx %.2f / %.2f%s%n", ratio(kvidxStats.p50Ns(), floor.p50Ns()),
                ratio(kvidxStats.p99Ns(), floor.p99Ns()), twoCells ? String.format(", kvidx%s %.2f / %.2f", CELL256,
                    ratio(stats.get(stores.indexOf(kvidx256)).p50Ns(), floor.p50Ns()),
                    ratio(stats.get(stores.indexOf(kvidx256)).p99Ns(), floor.p99Ns())) : "");
            if (kvidxCached != null) {
                final LatencyStats k = stats.get(stores.indexOf(kvidxCached));
                final LatencyStats f = stats.get(stores.indexOf(floorCached));
                out.printf("in cache (%d chains cycling): kvidx p50 %d / p99 %d ns, floor_lines p50 %d / p99 %d ns;"
                    + " kvidx spends %d ns (p50) beyond its loads with no miss, against a cold floor_lines of %d ns"
                    + "%s%n",
                    CACHED_CHAINS, k.p50Ns(), k.p99Ns(), f.p50Ns(), f.p99Ns(), k.p50Ns() - f.p50Ns(), floor.p50Ns(),
                    kvidx256Cached != null ? String.format("; kvidx%s p50 %d ns", CELL256,
                        stats.get(stores.indexOf(kvidx256Cached)).p50Ns()) : "");
            }
            out.printf("kvidx probes/query %.2f; timer (nanoTime pair) %d ns, included in every figure; total %.1f s%n",
                probes, timerNs, (System.nanoTime() - t0) / 1e9);

            final Json json = new Json();
            for (int i = 0; i < stats.size(); i++) {
                final LatencyStats s = stats.get(i);
                final boolean wide = s.name().contains(CELL256);
                final QueryStore store = stores.get(i);
                final Json j = statsJson(s, store instanceof CachedRow ? null : wide ? naive256Stats : naiveStats);
                if (byLength[i] != null) {
                    j.putRaw("query_by_length", LengthBuckets.json(byLength[i], null));
                }
                if (store == kvidx) {
                    j.put("load_stores_per_s", kvidx.loadStoresPerSecond())
                        .put("load_stores", kvidx.loadStores())
                        .put("churn_stores_per_s", churn.storesPerS)
                        .put("churn_removes_per_s", churn.removesPerS)
                        .put("probes_per_query", probes);
                }
                if (store == kvidx || store == kvidx256) {
                    // The memory floor's own rounds: how far the query is from the loads it cannot avoid.
                    j.put("ratio_vs_floor_lines_p50", ratio(s.p50Ns(), floor.p50Ns()))
                        .put("ratio_vs_floor_lines_p99", ratio(s.p99Ns(), floor.p99Ns()));
                }
                if (store == kvidx || store == naive || store == chronicle || (twoCells
                    && (store == kvidx256 || store == naive256 || store == chronicle256))) {
                    j.put("bytes_per_block", perBlock(store.footprintBytes(), w))
                        .put("footprint_bytes", store.footprintBytes());
                }
                final QueryStore timed = store instanceof CachedRow r ? r.store() : store;
                if (!(timed instanceof FloorStore)) {
                    j.put("cell_pods", wide ? IndexDescriptor.MAX_PODS : narrowCell);
                }
                json.put(s.name(), j);
            }
            json.put("workload", new Json().put("kind", o.traceWorkload() ? BenchOptions.TRACE : BenchOptions.SYNTHETIC)
                .put("chains_queried", w.chains()).put("pods", w.pods()).put("chain", w.chainLength())
                .put("holders", w.meanHolders()).put("blocks", w.blocks())
                .put("out_of_cache", CacheFit.outOfCache(kvidx.footprintBytes())).put("pod_blocks", w.podBlocks())
                .put("chains", w.chainCount())
                .put("seed", w.seed()).put("timer_overhead_ns", timerNs).put("sink", harness.sink() & 1));
            if (o.json()) {
                out.println(json);
            }
            return json;
        }
    }

    /** A row's figures, with its ratios over {@code naive} unless that is null (a row with no naive counterpart). */
    private static Json statsJson(final LatencyStats s, final LatencyStats naive) {
        final Json j = new Json()
            .put("p50_ns", s.p50Ns())
            .put("p90_ns", s.p90Ns())
            .put("p99_ns", s.p99Ns())
            .put("p999_ns", s.p999Ns())
            .put("mean_ns", s.meanNs())
            .put("alloc_bytes_per_op", s.allocBytesPerOp())
            .put("queries", s.queries());
        if (naive != null) {
            j.put("ratio_vs_naive_p50", ratio(naive.p50Ns(), s.p50Ns()))
                .put("ratio_vs_naive_p99", ratio(naive.p99Ns(), s.p99Ns()));
        }
        return j;
    }

    private static double meanProbes(final Workload w, final KvidxStore kvidx) {
        final int[] order = w.queryOrder();
        final int n = Math.min(10_000, order.length);
        long probes = 0;
        for (int i = 0; i < n; i++) {
            kvidx.query(w.chain(order[i]), w.chain(order[i]).length);
            probes += kvidx.lastProbes();
        }
        return (double) probes / n;
    }

    /** Writer churn rates: (pod, block) stores that were new, holdings removed, per second. */
    record ChurnRate(double storesPerS, double removesPerS) {
    }

    /**
     * Stores new chains (each paired with a removal of an old one, once the churn window is full) on the calling
     * thread for a while; the rates count what the writer reports it did.
     */
    static ChurnRate churn(final KvidxStore kvidx, final BenchOptions o, final long millis) {
        final ChurnDriver churn = new ChurnDriver(kvidx.writer(), Math.min(o.pods(), 64), o.churnChain(),
            o.churnWindow(), o.seed() ^ 0x5DEECE66DL);
        final long warmEnd = System.nanoTime() + millis / 2 * 1_000_000L;
        while (System.nanoTime() < warmEnd) {
            churn.step();
        }
        final long stored0 = churn.stored();
        final long removed0 = churn.removed();
        final long start = System.nanoTime();
        final long end = start + millis * 1_000_000L;
        long now;
        do {
            for (int i = 0; i < 16; i++) {
                churn.step();
            }
            now = System.nanoTime();
        } while (now < end);
        final double seconds = (now - start) / 1e9;
        return new ChurnRate((churn.stored() - stored0) / seconds, (churn.removed() - removed0) / seconds);
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
