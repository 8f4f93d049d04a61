package io.kvidx.daemon.index;


import io.kvidx.client.index.IndexReaderContext;

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

    static IndexReaderContext reader(final Path dir) {
        return new IndexReaderContext().dir(dir).cell("test").attachTimeoutMs(1_000).heartbeatTimeoutMs(10_000);
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

    /**
     * Calls a reader until it answers: a reader gives up after its read bound while a writer holds a shard (on a
     * busy 2-core host a writer can be descheduled mid-change); a router asks again with its next request, and so
     * does this, at most 100,000 times (each attempt is bounded).
     *
     * @param call the read.
     * @param <T>  its result.
     * @return the answer.
     */
    public static <T> T unbusy(final java.util.function.Supplier<T> call) {
        for (int attempt = 0; ; attempt++) {
            try {
                return call.get();
            } catch (final io.kvidx.client.index.IndexBusyException ex) {
                if (attempt == 100_000) {
                    throw ex;
                }
                Thread.onSpinWait();
            }
        }
    }

    /** SplitMix64's finaliser (bijective): distinct synthetic keys from a counter. */
    static long mix(final long x) {
        long z = x + 0x9E37_79B9_7F4A_7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58_476D_1CE4_E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D0_49BB_1331_11EBL;
        return z ^ (z >>> 31);
    }
}
