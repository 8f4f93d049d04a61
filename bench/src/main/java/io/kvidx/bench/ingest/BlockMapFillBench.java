package io.kvidx.bench.ingest;

import io.kvidx.bench.KvidxStore;
import io.kvidx.daemon.state.PodBlockMap;
import io.kvidx.ffm.MappedRegion;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * What a pod's engine-hash map costs its writer as the pod fills: the time to store {@code blocks} new hashes into a
 * new map under /dev/shm (starting at 4,096 slots and growing, each grow a new file), against storing as many into
 * the same map once grown, and the cost of a first touch of a new tmpfs page (a 1 MiB mapping written one long per
 * 4 KiB page). Run it with {@code -Dkvidx.blockmap.populate=false} and without, alternating, to compare new map files
 * faulted in whole at creation with pages faulted as entries land. Not a test: figures for docs/perf.md.
 *
 * <p>{@code java --enable-native-access=ALL-UNNAMED -cp bench/target/kvidx-bench.jar
 * io.kvidx.bench.ingest.BlockMapFillBench [blocks (16384)] [fills (16)]}
 */
public final class BlockMapFillBench {
    private static final long PAGE = 4_096;
    private static final long TOUCHED_BYTES = 1 << 20;

    private BlockMapFillBench() {
    }

    /**
     * @param args [blocks] [fills].
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception {
        final int blocks = args.length > 0 ? Integer.parseInt(args[0]) : 16_384;
        final int fills = args.length > 1 ? Integer.parseInt(args[1]) : 16;
        if (blocks < 2 || fills < 1) {
            throw new IllegalArgumentException("usage: [blocks >= 2] [fills >= 1]");
        }
        final Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "kvidx-bench-fill");
        try {
            final SplittableRandom random = new SplittableRandom(1);
            final long[] grown = new long[fills];
            final long[] again = new long[fills];
            final long[] touch = new long[fills];
            // Four fills warm up.
            for (int f = -4; f < fills; f++) {
                final Path file = dir.resolve("pod-" + (f + 4) + ".blocks");
                try (PodBlockMap map = PodBlockMap.open(file, "pod", 1, blocks)) {
                    final long t0 = System.nanoTime();
                    fill(map, blocks, random);
                    final long t1 = System.nanoTime();
                    map.clear();
                    final long t2 = System.nanoTime();
                    fill(map, blocks, random);
                    final long t3 = System.nanoTime();
                    if (f >= 0) {
                        grown[f] = t1 - t0;
                        again[f] = t3 - t2;
                    }
                }
                Files.delete(file);
                final Path pages = dir.resolve("pages-" + (f + 4));
                try (MappedRegion region = MappedRegion.createPrivate(pages, TOUCHED_BYTES)) {
                    final MemorySegment s = region.segment();
                    final long t0 = System.nanoTime();
                    for (long at = 0; at < TOUCHED_BYTES; at += PAGE) {
                        s.set(ValueLayout.JAVA_LONG, at, 1L);
                    }
                    if (f >= 0) {
                        touch[f] = System.nanoTime() - t0;
                    }
                }
                Files.delete(pages);
            }
            System.out.printf("kvidx.blockmap.populate=%s, %d-block map, medians of %d fills (p25-p75):%n",
                System.getProperty("kvidx.blockmap.populate", "true"), blocks, fills);
            System.out.printf("  fill of a new map, with its grows  %8.2f ms (%s)%n", median(grown), range(grown));
            System.out.printf("  fill of the same map once grown    %8.2f ms (%s)%n", median(again), range(again));
            System.out.printf("  first touch of a new tmpfs page    %8.2f us (%d pages of a new 1 MiB mapping)%n",
                median(touch) * 1e3 / (TOUCHED_BYTES / PAGE), TOUCHED_BYTES / PAGE);
        } finally {
            KvidxStore.deleteTree(dir);
        }
    }

    private static void fill(final PodBlockMap map, final int blocks, final SplittableRandom random) {
        for (int i = 0; i < blocks - 1; i++) {
            map.store(random.nextLong() | 1, random.nextLong() | 1, 1);
        }
    }

    /** Median in ms. */
    private static double median(final long[] ns) {
        final long[] s = ns.clone();
        Arrays.sort(s);
        return s[s.length / 2] / 1e6;
    }

    private static String range(final long[] ns) {
        final long[] s = ns.clone();
        Arrays.sort(s);
        return String.format("%.2f-%.2f", s[s.length / 4] / 1e6, s[s.length * 3 / 4] / 1e6);
    }
}
