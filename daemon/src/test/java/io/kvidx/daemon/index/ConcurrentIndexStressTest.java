package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer thread churns crowded shards while a reader thread queries a pinned chain: any torn read (a probe
 * that misses a key being shifted, a bitmap read across a move) shows up as a wrong depth. The real writer's odd
 * windows last a few stores, so a reader without the seqlock's second read still passed here in two runs out of
 * two; {@link SeqlockProtocolTest}'s hostile writer, which holds its windows open, is the test that fails then.
 */
@Timeout(60)
class ConcurrentIndexStressTest {
    @TempDir
    Path dir;

    @Test
    void shouldNeverSeeATornStateWhileTheWriterShiftsEntries() throws Exception {
        final CountDownLatch ready = new CountDownLatch(1);
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final ChurnWriterMain.Stats[] stats = new ChurnWriterMain.Stats[1];
        try (IndexWriter writer = IndexWriter.create(ChurnWriterMain.context(dir, "stress"))) {
            final Thread writerThread = new Thread(() -> {
                try {
                    stats[0] = ChurnWriterMain.churn(writer, System.nanoTime() + 2_000_000_000L, ready::countDown);
                } catch (final Throwable t) {
                    failure.set(t);
                    ready.countDown();
                }
            }, "churn-writer");
            writerThread.start();
            ready.await();
            final long queries;
            try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("stress")
                .attachTimeoutMs(1_000).heartbeatTimeoutMs(0))) {
                queries = InvariantChecker.checkUntil(reader, writerThread::isAlive);
            }
            writerThread.join();
            assertNull(failure.get());
            assertTrue(queries > 1_000, "reader ran " + queries + " queries");
            assertTrue(stats[0].deletes > 10_000, "writer deleted " + stats[0].deletes + " entries");
        }
    }

    /**
     * The reader side of the invariant, shared with the cross-process test. A read that gives up at the read bound
     * (the writer held a shard locked, e.g. preempted mid-change) is no answer, not a wrong one: it is skipped and
     * counted, and only answered rounds count as queries.
     */
    static final class InvariantChecker {
        private InvariantChecker() {
        }

        static long checkUntil(final IndexReader reader, final java.util.function.BooleanSupplier running) {
            final long[] pinned = TestIndexes.chain(ChurnWriterMain.PINNED_BASE, ChurnWriterMain.PINNED_LENGTH);
            final PrefixResult binary = new PrefixResult();
            final PrefixResult exact = new PrefixResult();
            final long[] words = new long[4];
            long queries = 0;
            long busy = 0;
            while (running.getAsBoolean()) {
                try {
                    reader.query(pinned, pinned.length, null, binary);
                    reader.queryExact(pinned, pinned.length, null, exact);
                    assertEquals(2, binary.count(), "only the pinned pods hold pinned blocks");
                    assertEquals(ChurnWriterMain.PINNED_LENGTH, binary.depthOf(0));
                    assertEquals(ChurnWriterMain.HALF, binary.depthOf(1));
                    assertEquals(ChurnWriterMain.PINNED_LENGTH, exact.depthOf(0));
                    assertEquals(ChurnWriterMain.HALF, exact.depthOf(1));
                    for (int i = 0; i < pinned.length; i++) {
                        assertTrue(reader.lookup(pinned[i], words), "pinned key " + i + " vanished");
                        assertEquals(i < ChurnWriterMain.HALF ? 0b11L : 0b01L, words[0],
                            "bitmap of pinned key " + i);
                    }
                    queries++;
                } catch (final IndexBusyException ex) {
                    busy++;
                }
            }
            assertEquals(0, reader.evictions(), "the churn must not fill a shard: evictions would drop pinned keys");
            assertEquals(busy, reader.busyCount(), "every busy read is counted by the reader");
            return queries;
        }
    }
}
