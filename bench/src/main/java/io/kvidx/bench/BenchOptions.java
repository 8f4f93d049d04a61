package io.kvidx.bench;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Options of the {@code bench query} and {@code bench xproc} commands, parsed by picocli.
 *
 * <p><b>Note:</b> not thread safe; build once, then read.
 */
@Command(name = "bench")
public final class BenchOptions {
    /** Default warmup per store, ms. */
    public static final long WARMUP_MS_DEFAULT = 1_500;
    /** Default measurement per store, ms (split over the rounds). */
    public static final long MEASURE_MS_DEFAULT = 3_000;
    /** Default interleaved rounds. */
    public static final int ROUNDS_DEFAULT = 3;
    /** Default churn window, chains held at once by the churn driver. */
    public static final int CHURN_WINDOW_DEFAULT = 2_048;

    /** {@code --workload}: chains and holdings generated (workload B's shape by default). */
    public static final String SYNTHETIC = "synthetic";
    /** {@code --workload}: chains and holdings from the Mooncake conversation trace ({@link TraceWorkload}). */
    public static final String TRACE = "trace";

    @Option(names = "--workload")
    private String workload = SYNTHETIC;
    @Option(names = "--pods")
    private Integer pods;
    @Option(names = "--chain")
    private Integer chain;
    @Option(names = "--holders")
    private double holders = Workload.HOLDERS_DEFAULT;
    @Option(names = "--blocks")
    private long blocks = Workload.BLOCKS_DEFAULT;
    @Option(names = "--seed")
    private long seed = Workload.SEED_DEFAULT;
    @Option(names = "--warmup-ms")
    private long warmupMs = WARMUP_MS_DEFAULT;
    @Option(names = "--measure-ms")
    private long measureMs = MEASURE_MS_DEFAULT;
    @Option(names = "--rounds")
    private int rounds = ROUNDS_DEFAULT;
    @Option(names = "--churn-window")
    private int churnWindow = CHURN_WINDOW_DEFAULT;
    @Option(names = "--writer-rate")
    private long writerRate;
    @Option(names = "--evict-mib")
    private int evictMib;
    @Option(names = "--json")
    private boolean json;
    @Option(names = "--experiments")
    private boolean experiments;
    @Option(names = "--index-dir")
    private java.nio.file.Path indexDir;

    /**
     * @param args command arguments (after the command name).
     * @return the options.
     * @throws IllegalArgumentException on an unknown option or a bad value.
     */
    public static BenchOptions parse(final String[] args) {
        final BenchOptions o = parseInto(new BenchOptions(), args);
        if (!SYNTHETIC.equals(o.workload) && !TRACE.equals(o.workload)) {
            throw new IllegalArgumentException("--workload must be " + SYNTHETIC + " or " + TRACE + ": " + o.workload);
        }
        if (o.warmupMs < 0 || o.measureMs < 1 || o.rounds < 1 || o.churnWindow < 1 || o.writerRate < 0
            || o.evictMib < 0 || o.evictMib > 4096) {
            throw new IllegalArgumentException("warmup >= 0, measure >= 1 ms, rounds >= 1, churn window >= 1 and"
                + " writer rate >= 0 and an eviction buffer of 0..4096 MiB are required");
        }
        return o;
    }

    /**
     * Fills a bench command's picocli options object from its arguments: the one place the bench commands parse.
     *
     * @param options an object with picocli {@code @Option} fields, holding the defaults.
     * @param args    command arguments (after the command name).
     * @param <T>     the options type.
     * @return {@code options}, filled.
     * @throws IllegalArgumentException on an unknown option, a missing or malformed value (picocli's message).
     */
    public static <T> T parseInto(final T options, final String[] args) {
        try {
            new CommandLine(options).parseArgs(args);
        } catch (final CommandLine.ParameterException ex) {
            throw new IllegalArgumentException(ex.getMessage(), ex);
        }
        return options;
    }

    /**
     * @return usage text.
     */
    public static String usage() {
        return """
            usage: kvidx bench query [options] [--json]   in-process: kvidx vs naive map vs Chronicle Map
                   kvidx bench xproc [options] [--json]   kvidx queried from a second JVM under writer churn
                   kvidx bench trace [--trace FILE] [--pods N] [--quick] [--json]   Mooncake trace replay (-h: options)
                   kvidx bench tokenize [--quick] [--json]   text of 2,048 tokens -> router keys (-h: options)
                   kvidx bench router [--engines N] [--requests N] [--skip-e2e] [--skip-overhead]   kvidx router
                                                          end to end and its added latency (-h: options)
                   kvidx bench epp [--rates R,R] [--lengths N,N] [--quick] [--json]   latency kvidx epp adds per
                                                          request, driven as Envoy's ext_proc (-h: options)
                   kvidx bench restart [--blocks N] [--pods P] [--rounds R]   writer re-attach time (-h: options)
                   kvidx bench http-auth [--pairs N] [--seconds S]   what a bearer token adds to POST /query,
                                                          A/B rounds against two daemons (-h: options)
                   kvidx bench <JMH args>                 JMH (e.g. IndexQueryBenchmark -prof gc; -h for help)
            options: --workload synthetic|trace (synthetic: generated chains of --chain blocks; trace: the Mooncake
                       conversation trace's prompts, cut at --chain (default 8192) blocks, asked of --pods (default
                       128) LRU engines after serving the trace's first 7/8; --holders and --blocks do not apply)
                     --pods P (64) --chain N (32; up to 8192) --holders H (2.0: mean pods holding a prefix of each
                       chain, each to its own depth; 16 with --pods 128 is a fleet serving long prompts)
                     --blocks B (1048576) --seed S --warmup-ms (1500)
                     --measure-ms (3000, per store) --rounds (3) --churn-window CHAINS (2048)
                     --writer-rate BLOCKS_PER_S (xproc; 0 = as fast as the writer goes)
                     --evict-mib M (xproc; 0 = off: before each timed query the reader reads M MiB of its own,
                       untimed, so the index's lines are not in the cache; give more than the L3)
                     --experiments (query: also time the reader without prefetch, the chain's home lines read
                       whole (floor_full_lines), a four-block group layout's reader (group4, group4_pf,
                       group4_bound; 64-pod cell), kvidx (both cells) and floor_lines over 16 chains that stay
                       in the cache (kvidx_cached16, kvidx_cell256_cached16, floor_lines_cached16), and probe
                       memory latency)
                     --index-dir DIR (parent of the kvidx index's temp dir; default /dev/shm)""";
    }

    /**
     * @return true for the Mooncake trace's workload, false for the generated one.
     */
    public boolean traceWorkload() {
        return TRACE.equals(workload);
    }

    /**
     * Builds the workload the options name: generated ({@link Workload#generate}) or the trace's
     * ({@link TraceWorkload}).
     *
     * @return the workload.
     * @throws java.io.UncheckedIOException when the trace cannot be read.
     */
    public Workload buildWorkload() {
        if (!traceWorkload()) {
            return Workload.generate(pods(), chain(), blocks, seed, holders);
        }
        try {
            return TraceWorkload.loadDefault(pods(), chain(), seed == Workload.SEED_DEFAULT
                ? TraceWorkload.SEED_DEFAULT : seed);
        } catch (final java.io.IOException ex) {
            throw new java.io.UncheckedIOException(ex);
        }
    }

    /**
     * @return pods (default 64, or the trace bench's 128 for the trace workload).
     */
    public int pods() {
        return pods != null ? pods : traceWorkload() ? io.kvidx.bench.trace.TraceBench.PODS_DEFAULT
            : Workload.PODS_DEFAULT;
    }

    /**
     * @return chain length (default 32), or the trace workload's longest prompt (default the index's 8,192).
     */
    public int chain() {
        return chain != null ? chain : traceWorkload() ? Workload.MAX_CHAIN : Workload.CHAIN_DEFAULT;
    }

    /**
     * @return the chain length the writer churn uses: {@link #chain()}, or 32 blocks on the trace workload.
     */
    public int churnChain() {
        return traceWorkload() ? Workload.CHAIN_DEFAULT : chain();
    }

    /**
     * @return mean pods holding a prefix of each chain.
     */
    public double holders() {
        return holders;
    }

    /**
     * @return blocks indexed.
     */
    public long blocks() {
        return blocks;
    }

    /**
     * @return seed.
     */
    public long seed() {
        return seed;
    }

    /**
     * @return warmup per store, ms.
     */
    public long warmupMs() {
        return warmupMs;
    }

    /**
     * @return measurement per store, ms.
     */
    public long measureMs() {
        return measureMs;
    }

    /**
     * @return interleaved rounds.
     */
    public int rounds() {
        return rounds;
    }

    /**
     * @return churn window in chains.
     */
    public int churnWindow() {
        return churnWindow;
    }

    /**
     * @return MiB the cross-process reader reads (untimed) before each timed query to push the index out of the
     * cache; 0 for none.
     */
    public int evictMib() {
        return evictMib;
    }

    /**
     * @return writer rate target, blocks/s, 0 for unpaced.
     */
    public long writerRate() {
        return writerRate;
    }

    /**
     * @return true to add the experimental reader variants to the query comparison.
     */
    public boolean experiments() {
        return experiments;
    }

    /**
     * @return parent directory for the kvidx index, or null for the default (/dev/shm).
     */
    public java.nio.file.Path indexDir() {
        return indexDir;
    }

    /**
     * @return true to print the JSON line last.
     */
    public boolean json() {
        return json;
    }
}
