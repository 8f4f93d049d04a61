package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.index.StaleWriterException;
import io.kvidx.ffm.Layouts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Readers never hang: a shard or pod table entry that the writer holds locked (here: its version word made odd
 * through a writable mapping of the same file, as a writer stopped mid-change would leave it) makes a read give up
 * after the read bound with {@link IndexBusyException}, or {@link StaleWriterException} when the writer's heartbeat
 * has stopped. Each waiting call runs on another thread with a timeout far above the bound and far below the
 * heartbeat timeout (10 s), so a reader that waits for the writer fails the test instead of hanging it.
 */
@Timeout(30)
class ReadBoundTest {
    /** Far above the read bound, far below the heartbeat timeout of {@link TestIndexes#reader}. */
    private static final long GIVE_UP_WITHIN_MS = 2_000;

    @TempDir
    Path dir;

    @Test
    void shouldDefaultToAReadBoundWellUnderAMillisecond() {
        assertEquals(50_000, IndexConfiguration.READ_BOUND_NS_DEFAULT);
        assertEquals(IndexConfiguration.READ_BOUND_NS_DEFAULT, new IndexReaderContext().conclude().readBoundNs());
        assertEquals(7_000, new IndexReaderContext().readBoundNs(7_000).conclude().readBoundNs());
        assertThrows(IllegalArgumentException.class, () -> new IndexReaderContext().readBoundNs(0).conclude());
    }

    /** Every read path of both cell forms: query, queryExact and lookup. */
    @ParameterizedTest
    @ValueSource(ints = {64, 256})
    void shouldGiveUpOnAShardHeldLockedAfterTheReadBound(final int maxPods) throws Exception {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).maxPods(maxPods));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir));
             Arena arena = Arena.ofShared()) {
            final int pod = writer.registerPod("p", "m");
            final long key = 99L;
            writer.store(pod, new long[] {key}, 0, 1);
            final long versionOffset = SeqlockProtocolTest.versionOffset(writer, key);
            final MemorySegment rw = SeqlockProtocolTest.mapReadWrite(writer.context().indexFile(), arena);
            final long even = (long) Layouts.LONG.getAcquire(rw, versionOffset);
            final String shard = "shard " + shardOf(writer, key) + " of ";

            Layouts.LONG.setRelease(rw, versionOffset, even + 1);
            final IndexBusyException query = busy(() -> reader.query(new long[] {key}, 1, null, new PrefixResult()));
            assertTrue(query.getMessage().contains(shard), query.getMessage());
            assertTrue(query.getMessage().contains("(read bound 50 us)"), query.getMessage());
            assertEquals(0, query.getStackTrace().length, "thrown without a stack trace");
            busy(() -> reader.queryExact(new long[] {key}, 1, null, new PrefixResult()));
            busy(() -> reader.lookup(key, new long[4]));
            assertEquals(3, reader.busyCount());

            Layouts.LONG.setRelease(rw, versionOffset, even + 2);
            assertEquals(1, reader.query(new long[] {key}, 1, null, new PrefixResult()));
            assertEquals(3, reader.busyCount(), "answered reads are not counted");
        }
    }

    @Test
    void shouldWaitForTheWholeReadBoundAndNoLonger() throws Exception {
        final long boundNs = TimeUnit.MILLISECONDS.toNanos(200);
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).readBoundNs(boundNs));
             Arena arena = Arena.ofShared()) {
            final int pod = writer.registerPod("p", "m");
            final long key = 4711L;
            writer.store(pod, new long[] {key}, 0, 1);
            final long versionOffset = SeqlockProtocolTest.versionOffset(writer, key);
            final MemorySegment rw = SeqlockProtocolTest.mapReadWrite(writer.context().indexFile(), arena);
            Layouts.LONG.setRelease(rw, versionOffset, (long) Layouts.LONG.getAcquire(rw, versionOffset) + 1);
            final long start = System.nanoTime();
            final IndexBusyException ex = busy(() -> reader.lookup(key, new long[4]));
            final long waitedNs = System.nanoTime() - start;
            assertTrue(waitedNs >= boundNs, "gave up before the bound: " + waitedNs + " ns");
            assertTrue(ex.getMessage().contains("(read bound 200000 us)"), ex.getMessage());
        }
    }

    @Test
    void shouldReportAStaleWriterRatherThanABusyShard() throws Exception {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(1_000));
             Arena arena = Arena.ofShared()) {
            final int pod = writer.registerPod("p", "m");
            final long key = 31337L;
            writer.store(pod, new long[] {key}, 0, 1);
            final long versionOffset = SeqlockProtocolTest.versionOffset(writer, key);
            final MemorySegment rw = SeqlockProtocolTest.mapReadWrite(writer.context().indexFile(), arena);
            Layouts.LONG.setRelease(rw, versionOffset, (long) Layouts.LONG.getAcquire(rw, versionOffset) + 1);
            writer.heartbeat(System.currentTimeMillis() - 60_000);
            final ExecutionException ex = assertThrows(ExecutionException.class,
                () -> CompletableFuture.supplyAsync(() -> reader.lookup(key, new long[4]))
                    .get(GIVE_UP_WITHIN_MS, TimeUnit.MILLISECONDS));
            assertInstanceOf(StaleWriterException.class, ex.getCause());
            assertEquals(0, reader.busyCount());
        }
    }

    @Test
    void shouldGiveUpOnAPodTableEntryHeldLocked() throws Exception {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir));
             Arena arena = Arena.ofShared()) {
            final int slot = writer.registerPod("p", "m");
            final long seqOffset = IndexDescriptor.podEntryOffset(slot) + IndexDescriptor.POD_SEQ_OFFSET;
            final MemorySegment rw = SeqlockProtocolTest.mapReadWrite(writer.context().indexFile(), arena);
            final long even = (long) Layouts.LONG.getAcquire(rw, seqOffset);

            Layouts.LONG.setRelease(rw, seqOffset, even + 1);
            final IndexBusyException ex = busy(() -> reader.pod(slot));
            assertTrue(ex.getMessage().contains("pod table entry " + slot + " of "), ex.getMessage());
            assertEquals(1, reader.busyCount());

            Layouts.LONG.setRelease(rw, seqOffset, even + 2);
            assertEquals("p", reader.pod(slot).podId());
        }
    }

    /** The stale-writer check a router makes before each decision: no allocation, right answer both ways. */
    @Test
    void shouldTellCheaplyThatTheWriterIsStale() {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(5_000))) {
            final com.sun.management.ThreadMXBean mx =
                (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            final long thread = Thread.currentThread().threadId();
            boolean stale = false;
            for (int i = 0; i < 20_000; i++) {
                stale |= reader.isWriterStale();
            }
            // The least of three windows: a one-off allocation on this thread (the JIT swapping in compiled code)
            // can land in one window; an allocating call (at least 16 B each) shows in all three, 320 KB each.
            long allocated = Long.MAX_VALUE;
            for (int window = 0; window < 3; window++) {
                final long before = mx.getThreadAllocatedBytes(thread);
                for (int i = 0; i < 20_000; i++) {
                    stale |= reader.isWriterStale();
                }
                allocated = Math.min(allocated, mx.getThreadAllocatedBytes(thread) - before);
            }
            assertFalse(stale);
            assertTrue(allocated < 1_000, "isWriterStale allocates: " + allocated + " bytes per 20,000 calls");
            writer.heartbeat(System.currentTimeMillis() - 20_000);
            assertTrue(reader.isWriterStale());
            assertTrue(reader.heartbeatAgeMs() >= 20_000);
        }
    }

    private static IndexBusyException busy(final Supplier<?> read) throws Exception {
        final ExecutionException ex = assertThrows(ExecutionException.class,
            () -> CompletableFuture.supplyAsync(read).get(GIVE_UP_WITHIN_MS, TimeUnit.MILLISECONDS),
            "a read must give up after the read bound, not wait for the writer");
        return assertInstanceOf(IndexBusyException.class, ex.getCause());
    }

    private static int shardOf(final IndexWriter writer, final long key) {
        final long h = IndexDescriptor.spread(IndexDescriptor.storedKey(key));
        return (int) (h >>> (64 - Integer.numberOfTrailingZeros(writer.context().shardCount())));
    }
}
