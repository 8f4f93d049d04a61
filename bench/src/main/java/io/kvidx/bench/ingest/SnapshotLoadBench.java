package io.kvidx.bench.ingest;

import io.kvidx.bench.KvidxStore;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.snapshot.SnapshotEncoder;
import io.kvidx.daemon.snapshot.SnapshotLoader;
import io.kvidx.daemon.state.PodBlockMaps;
import io.kvidx.daemon.state.PublisherProgress;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * How long a daemon takes to load a snapshot into a new cell ({@link SnapshotLoader}, what a late JetStream consumer
 * and a {@code --peer} replica do at their start), alone in its process: 128 pods, each holding prefixes of 64
 * shared 4,096-block conversations up to its block count, in hash-map order as a real snapshot lists them; the cell
 * has 64 shards of 65,536 slots (an index of about 64 MiB, not in a 32 MiB L3). Each round loads the same snapshot
 * into a fresh cell; the first round warms up. Not a test: figures for docs/jetstream.md.
 *
 * <p>{@code java --enable-native-access=ALL-UNNAMED -cp bench/target/kvidx-bench.jar
 * io.kvidx.bench.ingest.SnapshotLoadBench [blocks per pod (8700)] [load threads (host's, at most 8)] [rounds (5)]}
 */
public final class SnapshotLoadBench {
    private static final int PODS = 128;
    private static final int CONVERSATIONS = 64;
    private static final int CONVERSATION_BLOCKS = 4_096;

    private SnapshotLoadBench() {
    }

    /**
     * @param args [blocks per pod] [load threads] [rounds].
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception {
        final int perPod = args.length > 0 ? Integer.parseInt(args[0]) : 8_700;
        final int threads = args.length > 1 ? Integer.parseInt(args[1]) : SnapshotLoader.defaultLoadThreads();
        final int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        if (perPod < 1 || perPod > CONVERSATIONS * CONVERSATION_BLOCKS || threads < 1 || rounds < 2) {
            throw new IllegalArgumentException("usage: [blocks per pod 1.." + CONVERSATIONS * CONVERSATION_BLOCKS
                + "] [load threads >= 1] [rounds >= 2]");
        }
        final byte[] snapshot = snapshot(perPod);
        System.out.printf("snapshot: %d pods, %d blocks each, %.1f MB; %d load threads, %d CPUs%n", PODS, perPod,
            snapshot.length / 1e6, threads, Runtime.getRuntime().availableProcessors());
        final long[] ms = new long[rounds - 1];
        for (int round = 0; round < rounds; round++) {
            final Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "kvidx-bench-load");
            try {
                final Path state = dir.resolve("c").resolve(PodBlockMaps.STATE_DIR_NAME);
                try (IndexWriter index = IndexWriter.create(new IndexWriterContext().dir(dir).cell("c")
                    .shardCount(64).slotsPerShard(1 << 16).maxPods(PODS).deleteOnClose(true))) {
                    final long start = System.nanoTime();
                    final SnapshotLoader.Loaded loaded = new SnapshotLoader(index,
                        new PodBlockMaps(state, PodBlockMaps.MAX_BLOCKS_DEFAULT), new PublisherProgress(state),
                        1L << 32, threads).load(snapshot);
                    final long took = (System.nanoTime() - start) / 1_000_000;
                    System.out.printf("round %d: %,d blocks in %d ms%s%n", round, loaded.blocks(), took,
                        round == 0 ? " (warm-up)" : "");
                    if (round > 0) {
                        ms[round - 1] = took;
                    }
                }
            } finally {
                KvidxStore.deleteTree(dir);
            }
        }
        Arrays.sort(ms);
        System.out.printf("median %d ms (%d to %d) over %d rounds%n", ms[ms.length / 2], ms[0], ms[ms.length - 1],
            ms.length);
    }

    private static byte[] snapshot(final int perPod) throws Exception {
        final SplittableRandom random = new SplittableRandom(7);
        final long[][] chains = new long[CONVERSATIONS][CONVERSATION_BLOCKS];
        for (final long[] chain : chains) {
            for (int i = 0; i < chain.length; i++) {
                chain[i] = random.nextLong() | 1;
            }
        }
        final List<byte[]> records = new ArrayList<>();
        for (int p = 0; p < PODS; p++) {
            final Map<Long, Long> held = new LinkedHashMap<>();
            while (held.size() < perPod) {
                final long[] chain = chains[random.nextInt(CONVERSATIONS)];
                final int depth = 1 + random.nextInt(chain.length);
                for (int i = 0; i < depth && held.size() < perPod; i++) {
                    held.putIfAbsent(chain[i], i == 0 ? 0 : chain[i - 1]);
                }
            }
            final int n = held.size();
            final long[] hashes = new long[n];
            final long[] keys = new long[n];
            final long[] media = new long[n];
            final long[] parents = new long[n];
            int i = 0;
            for (final Map.Entry<Long, Long> e : held.entrySet()) {
                hashes[i] = e.getKey() ^ 0x5555;
                keys[i] = e.getKey();
                media[i] = 1;
                parents[i] = e.getValue();
                i++;
            }
            records.add(SnapshotEncoder.podRecord("pod-" + p, "m", 0, -1, hashes, keys, media, parents));
        }
        return SnapshotEncoder.encode(new SnapshotEncoder.Geometry(16, 1, PODS), 1, List.of(), records, new byte[0],
            1L << 32);
    }
}
