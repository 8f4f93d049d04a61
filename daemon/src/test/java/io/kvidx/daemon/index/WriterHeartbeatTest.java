package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.StaleWriterException;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.EngineDecoders;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import io.kvidx.ffm.Layouts;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.YieldingIdleStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The index heartbeat says the writers are alive: the maintenance agent beats it only while every writer's duty
 * cycle moves, and a re-attached file is not beaten before its repair has run.
 */
@Timeout(30)
class WriterHeartbeatTest {
    private static final long HEARTBEAT_INTERVAL_MS = 100;
    private static final long HEARTBEAT_TIMEOUT_MS = 500;

    @TempDir
    Path dir;

    /**
     * A writer thread hangs mid-batch (its apply observer blocks, as a writer stuck holding a shard would) while a
     * shard stays locked (its version made odd through a writable mapping): the reader gives up with
     * {@link IndexBusyException} while the writer turns, then with {@link StaleWriterException} within the
     * heartbeat timeout of the hang, never busy forever.
     */
    @Test
    void shouldStopTheHeartbeatWhenAWriterHangs() throws Exception {
        final CountDownLatch release = new CountDownLatch(1);
        final CountDownLatch hung = new CountDownLatch(1);
        final PodDirectory directory = new PodDirectory(64);
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir));
             IngestCounters counters = IngestCounters.local();
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(HEARTBEAT_TIMEOUT_MS));
             Arena arena = Arena.ofShared()) {
            final WriterPool pool = new WriterPool(2, 1 << 16, writer, directory, counters, new IngestErrors(),
                SystemEpochClock.INSTANCE, 0, YieldingIdleStrategy::new, () -> new SleepingMillisIdleStrategy(1),
                EngineDecoders.standard())
                .observe(null, (ingestNanos, queueNanos, applyNanos, visibleMs) -> {
                    hung.countDown();
                    awaitQuietly(release);
                }).start();
            final Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
            final AgentRunner maintenance = new AgentRunner(new SleepingMillisIdleStrategy(1), failures::add, null,
                new IndexMaintenanceAgent(writer, SystemEpochClock.INSTANCE, HEARTBEAT_INTERVAL_MS,
                    pool.dutyCycles()));
            AgentRunner.startOnThread(maintenance);
            try {
                final long key = 99L;
                final long versionOffset = SeqlockProtocolTest.versionOffset(writer, key);
                final MemorySegment rw = SeqlockProtocolTest.mapReadWrite(writer.context().indexFile(), arena);
                final long even = (long) Layouts.LONG.getAcquire(rw, versionOffset);
                Layouts.LONG.setRelease(rw, versionOffset, even + 1);

                // Both writers turn: the heartbeat stays fresh, the locked shard makes reads busy.
                final long busyUntil = System.currentTimeMillis() + 3 * HEARTBEAT_TIMEOUT_MS;
                while (System.currentTimeMillis() < busyUntil) {
                    assertThrows(IndexBusyException.class, () -> reader.lookup(key, new long[4]));
                    Thread.sleep(10);
                }

                // Writer 0 (pod number 0) hangs in its batch; writer 1 keeps turning.
                final int pod = directory.podNumber("p", "m");
                final byte[] junk = {1, 2, 3};
                assertTrue(pool.offer(pod, WriterMessages.VLLM_BATCH, new UnsafeBuffer(junk), 0, junk.length));
                hung.await();
                final long hungAt = System.currentTimeMillis();
                final long staleBy = hungAt + HEARTBEAT_INTERVAL_MS + HEARTBEAT_TIMEOUT_MS + 500;
                while (true) {
                    try {
                        reader.lookup(key, new long[4]);
                        fail("the shard is locked");
                    } catch (final StaleWriterException expected) {
                        break;
                    } catch (final IndexBusyException stillBusy) {
                        if (System.currentTimeMillis() > staleBy) {
                            fail("still busy " + (System.currentTimeMillis() - hungAt) + " ms after the writer hung"
                                + " (heartbeat " + reader.heartbeatAgeMs() + " ms ago)");
                        }
                    }
                    Thread.sleep(5);
                }
                assertTrue(reader.isWriterStale());
                assertTrue(failures.isEmpty(), failures.toString());

                // The writer turns again: the heartbeat resumes.
                release.countDown();
                Layouts.LONG.setRelease(rw, versionOffset, even + 2);
                final long freshBy = System.currentTimeMillis() + 5_000;
                while (reader.isWriterStale()) {
                    assertTrue(System.currentTimeMillis() < freshBy, "the heartbeat did not resume");
                    Thread.sleep(5);
                }
            } finally {
                release.countDown();
                maintenance.close();
                pool.close();
            }
        }
    }

    /** A re-attached file looks stale until the writer has repaired it; the writer beats once it has. */
    @Test
    void shouldNotBeatAReattachedFileBeforeItsRepair() throws Exception {
        IndexWriter.create(TestIndexes.small(dir).deleteOnClose(false)).close();
        final IndexWriterContext context = TestIndexes.small(dir).deleteOnClose(false).conclude();
        final IndexFiles.Opened opened = IndexFiles.open(context);
        try (IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0))) {
            assertTrue(opened.attached(), opened.reason());
            assertEquals(0L, opened.region().segment().get(ValueLayout.JAVA_LONG, IndexDescriptor.HEARTBEAT_OFFSET));
            assertTrue(reader.heartbeatAgeMs() > HEARTBEAT_TIMEOUT_MS, "repairing daemon looks fresh");
        } finally {
            opened.region().close();
        }
        try (IndexWriter writer = IndexWriter.open(TestIndexes.small(dir));
             IndexReader reader = IndexReader.attach(
                 TestIndexes.reader(dir).heartbeatTimeoutMs(HEARTBEAT_TIMEOUT_MS))) {
            assertTrue(writer.attached());
            assertFalse(reader.isWriterStale(), "heartbeat " + reader.heartbeatAgeMs() + " ms ago");
        }
    }

    private static void awaitQuietly(final CountDownLatch latch) {
        try {
            latch.await();
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
