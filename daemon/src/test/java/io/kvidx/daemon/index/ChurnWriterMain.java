package io.kvidx.daemon.index;

import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * A writer under churn, run as its own process by {@link CrossProcessIndexTest} (and as a thread by
 * {@link ConcurrentIndexStressTest}).
 *
 * <p>Invariant it maintains for readers: pod "pinned-full" holds the whole pinned chain and pod "pinned-half"
 * its first half, from before "READY" until the end; pod "churn" stores and removes other keys without pause,
 * which inserts, deletes and backward-shifts entries in the same small, crowded shards. A reader that ever sees
 * another depth for the pinned pods has read a torn state.
 */
public final class ChurnWriterMain {
    static final int PINNED_LENGTH = 32;
    static final int HALF = 16;
    static final long PINNED_BASE = 777;
    static final int SLOTS = 1024;
    /** Churn keys alive at once: about 80% of the table, far below the 95% eviction threshold per shard. */
    static final int RING = 1600;

    private ChurnWriterMain() {
    }

    /**
     * @param args dir, cell, seconds.
     */
    public static void main(final String[] args) {
        final Path dir = Path.of(args[0]);
        final String cell = args[1];
        final long seconds = Long.parseLong(args[2]);
        try (IndexWriter writer = IndexWriter.create(context(dir, cell))) {
            final Stats stats = churn(writer, System.nanoTime() + seconds * 1_000_000_000L, () -> {
                System.out.println("READY");
                System.out.flush();
            });
            System.out.println("DONE stores=" + stats.stores + " deletes=" + stats.deletes);
        }
    }

    static IndexWriterContext context(final Path dir, final String cell) {
        // Small, crowded shards (long probe clusters, up to ~75% full) but never full: no eviction may remove a
        // pinned key. Every delete shifts neighbours, the case the seqlock protects.
        return new IndexWriterContext().dir(dir).cell(cell).shardCount(2).slotsPerShard(SLOTS).maxLoadFactor(0.95)
            .maxChainLength(64).deleteOnClose(true);
    }

    static Stats churn(final IndexWriter writer, final long deadlineNs, final Runnable ready) {
        final long[] pinned = TestIndexes.chain(PINNED_BASE, PINNED_LENGTH);
        final int full = writer.registerPod("pinned-full", "m");
        final int half = writer.registerPod("pinned-half", "m");
        final int churn = writer.registerPod("churn", "m");
        writer.store(full, pinned, 0, PINNED_LENGTH);
        writer.store(half, pinned, 0, HALF);
        ready.run();
        final SplittableRandom random = new SplittableRandom(42);
        final long[] ring = new long[RING];
        final long[] one = new long[1];
        final Stats stats = new Stats();
        long nextBeat = 0;
        int next = 0;
        while (System.nanoTime() < deadlineNs) {
            // Replace the oldest churn key by a new one: each delete backward-shifts the long clusters that the
            // pinned keys sit in.
            for (int n = 0; n < 64; n++) {
                if (ring[next] != 0) {
                    one[0] = ring[next];
                    stats.deletes += writer.remove(churn, one, 0, 1);
                }
                ring[next] = random.nextLong() | 1;
                one[0] = ring[next];
                stats.stores += writer.store(churn, one, 0, 1);
                next = (next + 1) % RING;
            }
            final long now = System.currentTimeMillis();
            if (now >= nextBeat) {
                writer.heartbeat(now);
                nextBeat = now + 100;
            }
        }
        writer.remove(churn, ring, 0, RING);
        return stats;
    }

    static final class Stats {
        long stores;
        long deletes;
    }
}
