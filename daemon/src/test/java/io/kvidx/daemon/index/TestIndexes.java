package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;

import java.nio.file.Path;

/**
 * Small geometries for tests.
 */
public final class TestIndexes {
    private TestIndexes() {
    }

    static IndexWriterContext small(final Path dir) {
        return new IndexWriterContext().dir(dir).cell("test").shardCount(4).slotsPerShard(64).maxChainLength(64)
            .deleteOnClose(true);
    }

    static IndexReader.Context reader(final Path dir) {
        return new IndexReader.Context().dir(dir).cell("test").attachTimeoutMs(1_000).heartbeatTimeoutMs(10_000);
    }

    static long[] chain(final long base, final int n) {
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = mix(base * 1_000_003L + i);
        }
        return keys;
    }

    /**
     * Registers alive filler pods in every free slot, so that the next pod to register must reuse a slot freed
     * later (a new pod otherwise prefers a slot that never held one).
     *
     * @param writer the writer.
     * @return fillers registered.
     */
    public static int fillFreeSlots(final IndexWriter writer) {
        int n = 0;
        try {
            while (true) {
                writer.registerPod("filler-" + n, "m");
                n++;
            }
        } catch (final io.kvidx.client.index.PodCapacityExceededException ex) {
            return n;
        }
    }

    static long mix(final long x) {
        return io.kvidx.daemon.demo.SyntheticWorkload.mix(x);
    }
}
