package io.kvidx.bench;

import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Block stores per second on one writer thread into kvidx's index.
 * <ul>
 *   <li>{@code storeBlock}, {@code storeChain32}: churn on an index already holding the query workload (2^20
 *   blocks, 128 MiB table): each invocation stores 1 (or a 32-key chain of) new key(s) for a pod and removes the
 *   key(s) stored a window earlier, so the index stays bounded; the score counts stores (ops/s = blocks/s), the
 *   same number of removes is done besides.</li>
 *   <li>{@code fillChain32}: pure stores into an empty index (32,768 chains of 32 new keys, a fresh index each
 *   iteration): the score is ns per block store (stores/s = 1e9 / score).</li>
 * </ul>
 *
 * <p>Run (about 2 minutes): <pre>./kvidx bench IndexStoreBenchmark -prof gc</pre>
 */
@State(Scope.Benchmark)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {BenchFlags.F7, BenchFlags.F11, BenchFlags.F12, "-Xms2g", "-Xmx2g"})
public class IndexStoreBenchmark {
    /** Pods. */
    @Param({"64"})
    public int pods;
    /** Distinct blocks indexed before the churn starts. */
    @Param({"1048576"})
    public long blocks;
    /** Writer batch prefetch (IndexWriterContext#prefetch), for fillChain32: on, and off to measure its worth. */
    @Param({"true", "false"})
    public boolean prefetch;

    private static final int CHAIN = 32;
    private static final int WINDOW_CHAINS = 4_096;
    private static final int WINDOW_BLOCKS = WINDOW_CHAINS * CHAIN;

    private KvidxStore kvidx;
    private ChurnDriver chains;
    private ChurnDriver singles;

    /**
     * Loads the query workload and prepares both churn drivers (the index has room for both windows).
     */
    @Setup(Level.Trial)
    public void setUp() {
        final Workload workload = Workload.generate(pods, CHAIN, blocks, Workload.SEED_DEFAULT);
        kvidx = KvidxStore.load(workload, ChurnDriver.spareBlocks(WINDOW_CHAINS, CHAIN)
            + ChurnDriver.spareBlocks(WINDOW_BLOCKS, 1));
        chains = new ChurnDriver(kvidx.writer(), pods, CHAIN, WINDOW_CHAINS, 1);
        singles = new ChurnDriver(kvidx.writer(), pods, 1, WINDOW_BLOCKS, 2);
    }

    /**
     * Deletes the index.
     */
    @TearDown(Level.Trial)
    public void tearDown() {
        kvidx.close();
    }

    /**
     * @return keys stored.
     */
    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    public int storeBlock() {
        return singles.step();
    }

    /**
     * @return keys stored.
     */
    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    @OperationsPerInvocation(CHAIN)
    public int storeChain32() {
        return chains.step();
    }

    /**
     * Fills an empty index with 32,768 chains of 32 new keys (2^20 block stores, pods in rotation).
     *
     * @param fresh an empty index per iteration (one invocation per iteration in this mode).
     * @return keys stored.
     */
    @Benchmark
    @BenchmarkMode(Mode.SingleShotTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    @Warmup(iterations = 5)
    @Measurement(iterations = 10)
    @OperationsPerInvocation(FreshIndex.CHAINS * CHAIN)
    public int fillChain32(final FreshIndex fresh) {
        return fresh.fill();
    }

    /**
     * An empty index, recreated for each iteration, and a pool of new chains to fill it with.
     */
    @State(Scope.Benchmark)
    public static class FreshIndex {
        static final int CHAINS = 32_768;

        private final long[][] pool = new long[CHAINS][CHAIN];
        private Path dir;
        private IndexWriter writer;
        private int podCount;
        private boolean prefetch;

        /**
         * Generates the key pool.
         *
         * @param bench the benchmark's parameters.
         */
        @Setup(Level.Trial)
        public void keys(final IndexStoreBenchmark bench) {
            podCount = bench.pods;
            prefetch = bench.prefetch;
            final SplittableRandom rnd = new SplittableRandom(3);
            for (final long[] chain : pool) {
                for (int i = 0; i < CHAIN; i++) {
                    chain[i] = rnd.nextLong() | 1;
                }
            }
        }

        /**
         * Creates an empty index sized for the pool.
         */
        @Setup(Level.Iteration)
        public void create() {
            dir = KvidxStore.tempDir("kvidx-bench-fill-");
            writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("bench")
                .capacityBlocks((long) CHAINS * CHAIN).prefetch(prefetch).deleteOnClose(true));
            for (int p = 0; p < podCount; p++) {
                writer.registerPod("pod-" + p, "bench-model");
            }
        }

        /**
         * Deletes the index.
         */
        @TearDown(Level.Iteration)
        public void delete() {
            writer.close();
            KvidxStore.deleteTree(dir);
        }

        int fill() {
            int stored = 0;
            for (int c = 0; c < CHAINS; c++) {
                stored += writer.store(c % podCount, pool[c], 0, CHAIN);
            }
            return stored;
        }
    }
}
