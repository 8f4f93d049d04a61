package io.kvidx.daemon.index;

import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.client.tiers.TierMapReader;
import io.kvidx.ffm.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Readers query keys whose tiers keep changing while the writer inserts, updates and removes in the same region
 * (backward shifts move entries past the pinned keys): a reader sees, for every key, one of the states the writer
 * published for that key and never another key's, and the pinned keys, whose tiers never change, are found with
 * exactly their tiers on every read that is not given up at the read bound (a reader that ignored the region's
 * seqlock would miss a pinned key while a shift moves it).
 */
@Timeout(120)
class TierMapConcurrencyTest {
    private static final int CHURN_KEYS = 60;
    private static final int PINNED_KEYS = 8;
    /** Each churn key's tiers are one of two: a parity-tagged pair, so a read of another key's value shows. */
    private static final int[] EVEN = {TierMapDescriptor.MEDIUM_GPU, TierMapDescriptor.MEDIUM_GPU
        | TierMapDescriptor.MEDIUM_CPU};
    private static final int[] ODD = {TierMapDescriptor.MEDIUM_CPU | TierMapDescriptor.MEDIUM_CPU << 4,
        TierMapDescriptor.MEDIUM_DISK};
    private static final int PINNED_BITS = TierMapDescriptor.MEDIUM_DISK | TierMapDescriptor.MEDIUM_OTHER
        | TierMapDescriptor.MEDIUM_OTHER << 4;

    @TempDir
    Path dir;

    private static long churnKey(final int i) {
        return 1_000 + i * 128L;
    }

    private static long pinnedKey(final int i) {
        return 5_000 + i * 128L;
    }

    @Test
    void shouldNeverShowAReaderAStateTheWriterDidNotPublish() throws Exception {
        // 128 slots for 8 pinned + up to 60 churning keys: clusters form, nothing is evicted.
        try (TierMapWriter w = TierMapWriter.create(SharedFiles.forGroup(null), dir.resolve("c").resolve("index"), 1,
            96)) {
            w.attach(0, 3);
            for (int i = 0; i < PINNED_KEYS; i++) {
                w.update(0, pinnedKey(i), PINNED_BITS & 0xF, 0xF, PINNED_BITS >>> 4);
            }
            final AtomicBoolean stop = new AtomicBoolean();
            final AtomicReference<String> failure = new AtomicReference<>();
            final AtomicLong reads = new AtomicLong();
            final AtomicLong pinnedFound = new AtomicLong();
            final AtomicLong busy = new AtomicLong();
            final Thread[] readers = new Thread[2];
            for (int t = 0; t < readers.length; t++) {
                final int seed = t;
                readers[t] = new Thread(() -> {
                    try (TierMapReader r = TierMapReader.attach(w.path(), 200_000)) {
                        final SplittableRandom random = new SplittableRandom(seed);
                        while (!stop.get() && failure.get() == null) {
                            final boolean pinned = random.nextInt(4) == 0;
                            final int i = pinned ? random.nextInt(PINNED_KEYS) : random.nextInt(CHURN_KEYS);
                            final int bits = r.tierBits(0, 3, pinned ? pinnedKey(i) : churnKey(i));
                            reads.incrementAndGet();
                            if (bits == TierMapReader.BUSY) {
                                busy.incrementAndGet();
                            } else if (pinned) {
                                if (bits != PINNED_BITS) {
                                    failure.set("pinned key " + i + " read as " + bits);
                                }
                                pinnedFound.incrementAndGet();
                            } else {
                                final int[] allowed = i % 2 == 0 ? EVEN : ODD;
                                if (bits != TierMapReader.ABSENT && bits != allowed[0] && bits != allowed[1]) {
                                    failure.set("churn key " + i + " read as " + bits);
                                }
                            }
                        }
                    }
                }, "tier-reader-" + t);
                readers[t].start();
            }
            final SplittableRandom random = new SplittableRandom(99);
            final long end = System.nanoTime() + 3_000_000_000L;
            long ops = 0;
            while (System.nanoTime() < end && failure.get() == null) {
                final int i = random.nextInt(CHURN_KEYS);
                final int[] allowed = i % 2 == 0 ? EVEN : ODD;
                if (random.nextInt(3) == 0) {
                    w.remove(0, churnKey(i));
                } else {
                    final int bits = allowed[random.nextInt(2)];
                    w.update(0, churnKey(i), bits & 0xF, 0xF, bits >>> 4);
                }
                ops++;
            }
            stop.set(true);
            for (final Thread reader : readers) {
                reader.join(10_000);
            }
            assertNull(failure.get());
            assertEquals(0, w.evictions());
            assertTrue(ops > 100_000, "writer ops: " + ops);
            assertTrue(reads.get() > 10_000, "reads: " + reads.get());
            assertTrue(pinnedFound.get() > reads.get() / 8, "pinned keys found " + pinnedFound.get() + " of "
                + reads.get() + " reads (busy " + busy.get() + ")");
        }
    }
}
