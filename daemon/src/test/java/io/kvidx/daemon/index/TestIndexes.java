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

    /**
     * Depth the pod holds of the chain {@code keys[0..n)}, or 0 when no alive pod has that id. A reader gives up
     * after its bound while a writer holds the shard (it may be descheduled on a busy host): ask again, as a
     * router's next request would.
     *
     * @param reader the index.
     * @param podId  the pod.
     * @param keys   the chain.
     * @param n      its length.
     * @return the pod's depth.
     */
    public static int depthOf(final io.kvidx.client.index.IndexReader reader, final String podId, final long[] keys,
        final int n) {
        final io.kvidx.client.index.PrefixResult result = new io.kvidx.client.index.PrefixResult();
        unbusy(() -> {
            reader.query(keys, n, null, result);
            return result;
        });
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            if (reader.isAlive(slot) && podId.equals(reader.pod(slot).podId())) {
                return result.depthOf(slot);
            }
        }
        return 0;
    }
}
