package io.kvidx.bench;

/**
 * Options of the {@code bench query} and {@code bench xproc} commands, parsed from {@code --name value} pairs.
 *
 * <p><b>Note:</b> not thread safe; build once, then read.
 */
public final class BenchOptions {
    /** Default warmup per store, ms. */
    public static final long WARMUP_MS_DEFAULT = 1_500;
    /** Default measurement per store, ms (split over the rounds). */
    public static final long MEASURE_MS_DEFAULT = 3_000;
    /** Default interleaved rounds. */
    public static final int ROUNDS_DEFAULT = 3;
    /** Default churn window, chains held at once by the churn driver. */
    public static final int CHURN_WINDOW_DEFAULT = 2_048;

    private int pods = Workload.PODS_DEFAULT;
    private int chain = Workload.CHAIN_DEFAULT;
    private long blocks = Workload.BLOCKS_DEFAULT;
    private long seed = Workload.SEED_DEFAULT;
    private long warmupMs = WARMUP_MS_DEFAULT;
    private long measureMs = MEASURE_MS_DEFAULT;
    private int rounds = ROUNDS_DEFAULT;
    private int churnWindow = CHURN_WINDOW_DEFAULT;
    private long writerRate;
    private boolean json;
    private boolean experiments;
    private java.nio.file.Path indexDir;

    /**
     * @param args command arguments (after the command name).
     * @return the options.
     * @throws IllegalArgumentException on an unknown option or a bad value.
     */
    public static BenchOptions parse(final String[] args) {
        final BenchOptions o = new BenchOptions();
        for (int i = 0; i < args.length; i++) {
            final String a = args[i];
            if (a.equals("--json")) {
                o.json = true;
                continue;
            }
            if (a.equals("--experiments")) {
                o.experiments = true;
                continue;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("option " + a + " needs a value (or is unknown)");
            }
            final String v = args[++i];
            switch (a) {
                case "--pods" -> o.pods = Integer.parseInt(v);
                case "--chain" -> o.chain = Integer.parseInt(v);
                case "--blocks" -> o.blocks = Long.parseLong(v);
                case "--seed" -> o.seed = Long.parseLong(v);
                case "--warmup-ms" -> o.warmupMs = Long.parseLong(v);
                case "--measure-ms" -> o.measureMs = Long.parseLong(v);
                case "--rounds" -> o.rounds = Integer.parseInt(v);
                case "--churn-window" -> o.churnWindow = Integer.parseInt(v);
                case "--writer-rate" -> o.writerRate = Long.parseLong(v);
                case "--index-dir" -> o.indexDir = java.nio.file.Path.of(v);
                default -> throw new IllegalArgumentException("unknown option " + a);
            }
        }
        if (o.warmupMs < 0 || o.measureMs < 1 || o.rounds < 1 || o.churnWindow < 1 || o.writerRate < 0) {
            throw new IllegalArgumentException("warmup >= 0, measure >= 1 ms, rounds >= 1, churn window >= 1 and"
                + " writer rate >= 0 are required");
        }
        return o;
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
                   kvidx bench <JMH args>                 JMH (e.g. IndexQueryBenchmark -prof gc; -h for help)
            options: --pods P (64) --chain N (32) --blocks B (1048576) --seed S --warmup-ms (1500)
                     --measure-ms (3000, per store) --rounds (3) --churn-window CHAINS (2048)
                     --writer-rate BLOCKS_PER_S (xproc; 0 = as fast as the writer goes)
                     --experiments (query: also time the reader without prefetch and probe memory latency)
                     --index-dir DIR (parent of the kvidx index's temp dir; default /dev/shm)""";
    }

    /**
     * @return pods.
     */
    public int pods() {
        return pods;
    }

    /**
     * @return chain length.
     */
    public int chain() {
        return chain;
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
