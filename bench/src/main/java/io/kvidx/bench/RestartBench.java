package io.kvidx.bench;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.state.PodBlockMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * {@code ./kvidx bench restart [--blocks N] [--pods P] [--rounds R]}: how long a restarted daemon's writer needs
 * before it can write again, for an index of N blocks (default 1,048,576 in 32-block chains over 64 pods, the
 * default 256-shard geometry): {@link IndexWriter#open} maps the file, checks and repairs every shard, rebuilds
 * free lists, clocks and children counts; then each pod's engine-hash map is re-opened (its entries re-inserted).
 * Readers keep answering from the mapped file the whole time: a restart never takes the index away from routers.
 * Prints one line per round and the median, in milliseconds.
 */
final class RestartBench {
    /** Default blocks indexed. */
    static final long BLOCKS_DEFAULT = 1L << 20;
    /** Default pods (each with its engine-hash map). */
    static final int PODS_DEFAULT = 64;
    /** Default timed restarts. */
    static final int ROUNDS_DEFAULT = 5;
    /** Most blocks: the largest capacity of the default geometry (a larger one would hold fewer). */
    static final long BLOCKS_MAX = IndexWriterContext.maxCapacityBlocks(
        IndexWriterContext.Configuration.SHARD_COUNT_DEFAULT, IndexWriterContext.Configuration.MAX_LOAD_FACTOR_DEFAULT);
    /** Most timed restarts (each re-checks the whole index). */
    static final int ROUNDS_MAX = 1_000;
    private static final int CHAIN = 32;

    private RestartBench() {
    }

    /** Parsed options (picocli; {@link #usage()} lists them). */
    @Command(name = "restart")
    static final class Options {
        @Option(names = "--blocks")
        long blocks = BLOCKS_DEFAULT;
        @Option(names = "--pods")
        int pods = PODS_DEFAULT;
        @Option(names = "--rounds")
        int rounds = ROUNDS_DEFAULT;
        @Option(names = {"-h", "--help"})
        boolean help;

        /**
         * @param args command arguments (after {@code restart}).
         * @return the options.
         * @throws IllegalArgumentException on an unknown option, a bad value or {@code -h}.
         */
        static Options parse(final String[] args) {
            final Options o = BenchOptions.parseInto(new Options(), args);
            if (o.help) {
                throw new IllegalArgumentException("options");
            }
            if (o.blocks < 1 || o.blocks > BLOCKS_MAX) {
                throw new IllegalArgumentException("--blocks must be in 1.." + BLOCKS_MAX + ": " + o.blocks);
            }
            if (o.pods < 1 || o.pods > IndexDescriptor.MAX_PODS) {
                throw new IllegalArgumentException("--pods must be in 1.." + IndexDescriptor.MAX_PODS + ": " + o.pods);
            }
            if (o.rounds < 1 || o.rounds > ROUNDS_MAX) {
                throw new IllegalArgumentException("--rounds must be in 1.." + ROUNDS_MAX + ": " + o.rounds);
            }
            if (o.blocks / o.pods + CHAIN > DaemonConfiguration.POD_MAX_BLOCKS_MAX) {
                throw new IllegalArgumentException("--blocks / --pods must be at most "
                    + (DaemonConfiguration.POD_MAX_BLOCKS_MAX - CHAIN) + " blocks per pod: --blocks " + o.blocks
                    + " --pods " + o.pods);
            }
            return o;
        }

        /** @return most blocks of each pod's engine-hash map: its share of the index and one chain. */
        int perPodBlocks() {
            return (int) (blocks / pods + CHAIN);
        }
    }

    /** @return usage text. */
    static String usage() {
        return """
            usage: kvidx bench restart [--blocks N] [--pods P] [--rounds R]
              a writer re-attaching to an index of N blocks (32-block chains) and re-opening P pods' engine-hash
              maps, timed R times; prints each round and the median, in ms.
              --blocks N   blocks indexed (default %d; at most %d)
              --pods P     pods (default %d; at most %d)
              --rounds R   timed restarts (default %d; at most %d)""".formatted(BLOCKS_DEFAULT, BLOCKS_MAX,
            PODS_DEFAULT, IndexDescriptor.MAX_PODS, ROUNDS_DEFAULT, ROUNDS_MAX);
    }

    /**
     * @param options parsed options.
     * @param out     where the rounds and the median go.
     * @throws IOException when the index directory cannot be created or removed.
     */
    static void run(final Options options, final PrintStream out) throws IOException {
        final long blocks = options.blocks;
        final int pods = options.pods;
        final int rounds = options.rounds;
        final Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "kvidx-bench-restart");
        try {
            final IndexWriterContext context = new IndexWriterContext().dir(dir).cell("restart")
                .capacityBlocks(blocks).maxPods(pods);
            final int perPod = options.perPodBlocks();
            final SplittableRandom random = new SplittableRandom(42);
            final long[] chain = new long[CHAIN];
            final long[] sample = new long[CHAIN];
            final int[] slots = new int[pods];
            try (IndexWriter writer = IndexWriter.create(context)) {
                for (int p = 0; p < pods; p++) {
                    slots[p] = writer.registerPod("pod-" + p, "model");
                }
                final PodBlockMap[] maps = new PodBlockMap[pods];
                for (int p = 0; p < pods; p++) {
                    maps[p] = PodBlockMap.open(dir.resolve("state/pod-" + p + ".blocks"), "pod-" + p, 1, perPod);
                }
                for (long stored = 0; stored < blocks; stored += CHAIN) {
                    for (int i = 0; i < CHAIN; i++) {
                        chain[i] = random.nextLong() | 1;
                    }
                    final int p = (int) ((stored / CHAIN) % pods);
                    writer.store(slots[p], chain, 0, CHAIN, 0);
                    for (int i = 0; i < CHAIN; i++) {
                        maps[p].store(chain[i] * 31, chain[i], 1);
                    }
                    System.arraycopy(chain, 0, sample, 0, CHAIN);
                }
                for (final PodBlockMap map : maps) {
                    map.close();
                }
                out.printf("restart: index of %,d entries (capacity %,d), %d pods, %s%n", writer.entryCount(),
                    writer.capacity(), pods, context.indexFile());
            }
            final double[] openMs = new double[rounds];
            final double[] mapsMs = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                final long t0 = System.nanoTime();
                try (IndexWriter writer = IndexWriter.open(new IndexWriterContext().dir(dir).cell("restart")
                    .capacityBlocks(blocks).maxPods(pods))) {
                    final long t1 = System.nanoTime();
                    for (int p = 0; p < pods; p++) {
                        PodBlockMap.open(dir.resolve("state/pod-" + p + ".blocks"), "pod-" + p, 1, perPod).close();
                    }
                    final long t2 = System.nanoTime();
                    if (!writer.attached()) {
                        throw new IllegalStateException("did not re-attach: " + writer.openReason());
                    }
                    openMs[r] = (t1 - t0) / 1e6;
                    mapsMs[r] = (t2 - t1) / 1e6;
                    out.printf("round %d: index re-attached and checked in %.1f ms (%s); %d pod maps re-opened in "
                        + "%.1f ms%n", r + 1, openMs[r], writer.repairSummary(), pods, mapsMs[r]);
                }
            }
            try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("restart")
                .heartbeatTimeoutMs(0))) {
                final PrefixResult result = new PrefixResult();
                out.printf("check: the last chain stored answers depth %d%n", reader.query(sample, CHAIN, null,
                    result));
            }
            Arrays.sort(openMs);
            Arrays.sort(mapsMs);
            out.printf("median: writer ready %.1f ms after start (index %.1f ms + pod maps %.1f ms), %,d blocks%n",
                openMs[rounds / 2] + mapsMs[rounds / 2], openMs[rounds / 2], mapsMs[rounds / 2], blocks);
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
