package io.kvidx.bench;

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
import org.openjdk.jmh.infra.ThreadParams;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Several writer threads on one index, each the single writer of its own pods, as the daemon's writers are: what
 * one block op costs each of them as threads are added ({@code -t 1}, {@code -t 2}, ... {@code -t 8}). A writer's
 * per-op cost that grows with the threads is what they share: the shards' locks and clocks, the shard headers' counts,
 * and the entries of blocks several pods hold.
 *
 * <p>The index: the query workload ({@link Workload}, {@link #pods} pods, so more than 64 keeps pod lists as the
 * trace's cell does; 2^20 blocks, far larger than the cache) plus each thread's churn window. Each invocation is one
 * thread's step: it stores a chain of {@value #CHAIN} keys for the next of its pods and removes the chain it stored
 * {@value #WINDOW} steps earlier (so the index stays bounded and never evicts). The first {@link #shared} keys of
 * every chain are one of {@value #PREFIXES} prefixes common to every thread (a system prompt every pod holds): those
 * entries are written by all writers; the rest of each chain is the thread's own.
 *
 * <p>The score is ns per block op (a store or a remove) per thread. Scaling from 1 to N writers is
 * {@code N x score(1) / score(N)}.
 *
 * <pre>./kvidx bench WriterScalingBenchmark -t 1 ; ./kvidx bench WriterScalingBenchmark -t 2</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {BenchFlags.F7, BenchFlags.F11, BenchFlags.F12, "-Xms2g", "-Xmx2g"})
public class WriterScalingBenchmark {
    /** Blocks per stored and removed chain. */
    static final int CHAIN = 32;
    /** Steps a thread's chain stays stored. */
    static final int WINDOW = 2_048;
    /** Prefixes common to every thread. */
    static final int PREFIXES = 16;
    /** Most writer threads the index has room for. */
    static final int MAX_THREADS = 16;

    /** Pods in the index (split between the threads: thread t writes pods t, t + threads, ...). */
    @Param({"128"})
    public int pods;
    /** Keys of each chain taken from the prefixes common to every thread (0: every key is the thread's own). */
    @Param({"0", "8"})
    public int shared;
    /** Distinct blocks indexed before the churn starts. */
    @Param({"1048576"})
    public long blocks;

    private KvidxStore kvidx;
    private long[][] prefixes;

    /**
     * Loads the query workload and draws the common prefixes.
     */
    @Setup(Level.Trial)
    public void setUp() {
        if (shared < 0 || shared > CHAIN) {
            throw new IllegalArgumentException("shared keys must be in [0, " + CHAIN + "]: " + shared);
        }
        final Workload workload = Workload.generate(pods, CHAIN, blocks, Workload.SEED_DEFAULT);
        kvidx = KvidxStore.load(workload, (long) MAX_THREADS * ChurnDriver.spareBlocks(WINDOW, CHAIN));
        final SplittableRandom rnd = new SplittableRandom(0x5CA1EL);
        prefixes = new long[PREFIXES][shared];
        for (final long[] prefix : prefixes) {
            for (int i = 0; i < shared; i++) {
                prefix[i] = Workload.nonZero(rnd);
            }
        }
        System.out.printf("%n%d pods, %d blocks indexed, %d of %d keys per chain shared by every writer: %s%n", pods,
            workload.blocks(), shared, CHAIN, CacheFit.describe(kvidx.footprintBytes()));
    }

    /**
     * Deletes the index.
     */
    @TearDown(Level.Trial)
    public void tearDown() {
        kvidx.close();
    }

    /**
     * One writer thread: its pods and its own chains.
     */
    @State(Scope.Thread)
    public static class Writer {
        private ChurnDriver churn;

        /**
         * Draws this thread's chains (its own keys after a common prefix) and takes its pods.
         *
         * @param bench  the shared index.
         * @param thread which thread this is, of how many.
         */
        @Setup(Level.Trial)
        public void setUp(final WriterScalingBenchmark bench, final ThreadParams thread) {
            if (thread.getThreadCount() > MAX_THREADS || thread.getThreadCount() > bench.pods) {
                throw new IllegalArgumentException("at most " + Math.min(MAX_THREADS, bench.pods) + " threads");
            }
            final int[] slots = java.util.stream.IntStream.range(0, bench.pods)
                .filter(p -> p % thread.getThreadCount() == thread.getThreadIndex()).toArray();
            final SplittableRandom rnd = new SplittableRandom(0xC4A1_0000L + thread.getThreadIndex());
            final long[][] pool = new long[WINDOW * 2][CHAIN];
            for (int c = 0; c < pool.length; c++) {
                final long[] prefix = bench.prefixes[c % PREFIXES];
                System.arraycopy(prefix, 0, pool[c], 0, prefix.length);
                for (int i = prefix.length; i < CHAIN; i++) {
                    pool[c][i] = Workload.nonZero(rnd);
                }
            }
            churn = new ChurnDriver(bench.kvidx.writer(), slots, pool, WINDOW);
        }

        int step() {
            return churn.step();
        }
    }

    /**
     * @param writer this thread's writer state.
     * @return keys stored (consumed by JMH).
     */
    @Benchmark
    @OperationsPerInvocation(2 * CHAIN)
    public int storeAndRemoveChain(final Writer writer) {
        return writer.step();
    }
}
