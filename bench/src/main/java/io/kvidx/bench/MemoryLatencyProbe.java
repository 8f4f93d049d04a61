package io.kvidx.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * EXPERIMENT: the cost of one dependent random read (a pointer chase over cache lines in a random cycle) in a
 * region of a given size: the floor under every probe of a binary search whose next key depends on the previous
 * answer.
 */
final class MemoryLatencyProbe {
    private static final int LINE = 64;

    private MemoryLatencyProbe() {
    }

    /**
     * @param bytes region size (rounded down to whole cache lines).
     * @param steps reads to time.
     * @return mean ns per dependent read.
     */
    static double dependentReadNs(final long bytes, final int steps) {
        final int lines = (int) (bytes / LINE);
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment s = arena.allocate((long) lines * LINE, 4096);
            // Sattolo's algorithm: one random cycle through every line.
            final int[] next = new int[lines];
            for (int i = 0; i < lines; i++) {
                next[i] = i;
            }
            final SplittableRandom rnd = new SplittableRandom(11);
            for (int i = lines - 1; i > 0; i--) {
                final int j = rnd.nextInt(i);
                final int t = next[i];
                next[i] = next[j];
                next[j] = t;
            }
            for (int i = 0; i < lines; i++) {
                s.set(ValueLayout.JAVA_INT, (long) i * LINE, next[i]);
            }
            int p = 0;
            for (int i = 0; i < steps; i++) {
                p = s.get(ValueLayout.JAVA_INT, (long) p * LINE);
            }
            final long t0 = System.nanoTime();
            for (int i = 0; i < steps; i++) {
                p = s.get(ValueLayout.JAVA_INT, (long) p * LINE);
            }
            final long t1 = System.nanoTime();
            if (p == -1) {
                throw new IllegalStateException("unreachable");
            }
            return (double) (t1 - t0) / steps;
        }
    }
}
