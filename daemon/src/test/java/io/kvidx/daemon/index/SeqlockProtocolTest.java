package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.index.StaleWriterException;
import io.kvidx.ffm.Layouts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The reader's half of the seqlock, step by step with real threads: a writer holding a shard's version odd
 * (mid-move) must block every lookup in that shard until the version is even again (here with a read bound long
 * enough to see it wait; {@link ReadBoundTest} covers the default bound), and a writer that died mid-move must
 * surface as {@link StaleWriterException}, never as an answer.
 */
@Timeout(30)
class SeqlockProtocolTest {
    /** Long enough that a reader waits for the whole test instead of giving up. */
    private static final long PATIENT_NS = TimeUnit.SECONDS.toNanos(60);

    @TempDir
    Path dir;

    /**
     * A query (not just a lookup) must wait too, in both cell forms: the general one (inline lists) and a direct
     * cell of at most 64 pods, whose query has its own lookup.
     */
    @ParameterizedTest
    @ValueSource(ints = {64, 256})
    void shouldHoldAQueryWhileAShardIsBeingChanged(final int maxPods) throws Exception {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).maxPods(maxPods));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).readBoundNs(PATIENT_NS));
             IndexReader impatient = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(100)
                 .readBoundNs(PATIENT_NS));
             Arena arena = Arena.ofShared()) {
            final int pod = writer.registerPod("p", "m");
            final long key = 99L;
            writer.store(pod, new long[] {key}, 0, 1);
            final long versionOffset = versionOffset(writer, key);
            final MemorySegment rw = mapReadWrite(writer.context().indexFile(), arena);
            final long even = (long) Layouts.LONG.getAcquire(rw, versionOffset);

            Layouts.LONG.setRelease(rw, versionOffset, even + 1);
            final CompletableFuture<Integer> query = CompletableFuture.supplyAsync(
                () -> reader.query(new long[] {key}, 1, null, new PrefixResult()));
            assertThrows(TimeoutException.class, () -> query.get(200, TimeUnit.MILLISECONDS),
                "a query must not answer while the shard version is odd");
            Layouts.LONG.setRelease(rw, versionOffset, even + 2);
            assertEquals(1, query.get(5, TimeUnit.SECONDS));

            // A writer that died mid-change: the query reports it instead of answering.
            writer.heartbeat(System.currentTimeMillis() - 10_000);
            Layouts.LONG.setRelease(rw, versionOffset, even + 3);
            final java.util.concurrent.ExecutionException ex = assertThrows(
                java.util.concurrent.ExecutionException.class, () -> CompletableFuture.supplyAsync(
                    () -> impatient.query(new long[] {key}, 1, null, new PrefixResult())).get(10, TimeUnit.SECONDS));
            assertInstanceOf(StaleWriterException.class, ex.getCause());
            assertTrue(ex.getCause().getMessage().contains("stays locked"), ex.getCause().getMessage());
        }
    }

    @Test
    void shouldWaitWhileAShardIsBeingChangedAndAnswerAfterwards() throws Exception {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).readBoundNs(PATIENT_NS));
             Arena arena = Arena.ofShared()) {
            final int pod = writer.registerPod("p", "m");
            final long key = 12345L;
            writer.store(pod, new long[] {key}, 0, 1);
            final long versionOffset = versionOffset(writer, key);
            final MemorySegment rw = mapReadWrite(writer.context().indexFile(), arena);
            final long even = (long) Layouts.LONG.getAcquire(rw, versionOffset);
            assertEquals(0, even & 1);

            Layouts.LONG.setRelease(rw, versionOffset, even + 1);
            final CompletableFuture<Boolean> lookup = CompletableFuture.supplyAsync(
                () -> reader.lookup(key, new long[4]));
            assertThrows(TimeoutException.class, () -> lookup.get(200, TimeUnit.MILLISECONDS),
                "a lookup must not answer while the shard version is odd");
            assertFalse(lookup.isDone());

            Layouts.LONG.setRelease(rw, versionOffset, even + 2);
            assertTrue(lookup.get(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void shouldReportAWriterThatDiedMidChange() throws Exception {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(100)
                 .readBoundNs(PATIENT_NS));
             Arena arena = Arena.ofShared()) {
            final int pod = writer.registerPod("p", "m");
            final long key = 777L;
            writer.store(pod, new long[] {key}, 0, 1);
            final long versionOffset = versionOffset(writer, key);
            final MemorySegment rw = mapReadWrite(writer.context().indexFile(), arena);
            Layouts.LONG.setRelease(rw, versionOffset, (long) Layouts.LONG.getAcquire(rw, versionOffset) + 1);
            writer.heartbeat(System.currentTimeMillis() - 10_000);

            final CompletableFuture<Boolean> lookup = CompletableFuture.supplyAsync(
                () -> reader.lookup(key, new long[4]));
            final java.util.concurrent.ExecutionException ex = assertThrows(
                java.util.concurrent.ExecutionException.class, () -> lookup.get(10, TimeUnit.SECONDS));
            assertInstanceOf(StaleWriterException.class, ex.getCause());
            assertTrue(ex.getCause().getMessage().contains("stays locked"), ex.getCause().getMessage());
        }
    }

    @Test
    void shouldPublishKeyAfterBitmapOnInsert() throws Exception {
        // Store order pinned on the bytes: an inserted entry has its bitmap and stamp in place, and the shard
        // version stays even (inserts never make readers retry).
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir));
             Arena arena = Arena.ofShared()) {
            final int pod = writer.registerPod("p", "m");
            final MemorySegment rw = mapReadWrite(writer.context().indexFile(), arena);
            final long key = 4242L;
            final long versionOffset = versionOffset(writer, key);
            final long before = (long) Layouts.LONG.getAcquire(rw, versionOffset);
            writer.store(pod, new long[] {key}, 0, 1);
            assertEquals(before, (long) Layouts.LONG.getAcquire(rw, versionOffset), "insert does not bump version");
            writer.remove(pod, new long[] {key}, 0, 1);
            assertEquals(before + 2, (long) Layouts.LONG.getAcquire(rw, versionOffset), "delete bumps by two");
        }
    }

    static long versionOffset(final IndexWriter writer, final long key) {
        final IndexWriterContext ctx = writer.context();
        final long h = IndexDescriptor.spread(IndexDescriptor.storedKey(key));
        final int shard = (int) (h >>> (64 - Integer.numberOfTrailingZeros(ctx.shardCount())));
        return IndexDescriptor.shardHeadersOffset(ctx.maxPods()) + (long) shard * IndexDescriptor.SHARD_HEADER_LENGTH
            + IndexDescriptor.SHARD_VERSION_OFFSET;
    }

    static MemorySegment mapReadWrite(final Path file, final Arena arena) throws Exception {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return channel.map(FileChannel.MapMode.READ_WRITE, 0, channel.size(), arena);
        }
    }
}
