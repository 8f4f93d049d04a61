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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

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
    /**
     * Spins a hostile writer holds each odd window open, and each even phase between: short, so that windows open
     * often and many reads straddle an opening (the case the check after the data reads exists for).
     */
    private static final int WINDOW_SPINS = 8;

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

    /**
     * The seqlock's second read, in both cell forms: a hostile writer thread tears a stored entry (its key cleared,
     * its pods word set to another pod) inside odd-version windows and restores it before the version is even
     * again, over and over, while this thread looks the key up and queries it. A reader that took the version before
     * a window opened and its data inside it must notice the version moved and retry: every answer is the entry as
     * it is outside the windows. Without the check after the data reads, reads that straddle a window's opening
     * answer wrong: with it removed from the direct lookup the 64-pod cell failed every run (6 to 6,344 wrong
     * answers), and with it removed from the general lookup the 256-pod cell did (11 to 46,065). The real writer's
     * windows ({@link ConcurrentIndexStressTest}) are too short to show that reliably.
     */
    @ParameterizedTest
    @ValueSource(ints = {64, 256})
    void shouldNeverAnswerFromAnEntryTornInsideAnOddVersionWindow(final int maxPods) throws Exception {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).maxPods(maxPods));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).readBoundNs(PATIENT_NS));
             Arena arena = Arena.ofShared()) {
            final int pod = writer.registerPod("holder", "m");
            final int other = writer.registerPod("other", "m");
            final long key = 31337L;
            writer.store(pod, new long[] {key}, 0, 1);
            final MemorySegment rw = mapReadWrite(writer.context().indexFile(), arena);
            final long versionOffset = versionOffset(writer, key);
            final long entry = entryOffset(writer, rw, key);
            final long stored = (long) Layouts.LONG.getAcquire(rw, entry + IndexDescriptor.ENTRY_KEY_OFFSET);
            final long pods = (long) Layouts.LONG.getAcquire(rw, entry + IndexDescriptor.ENTRY_PODS_OFFSET);
            final long[] expected = new long[4];
            assertTrue(reader.lookup(key, expected));
            assertEquals(1L << pod, expected[pod >>> 6] & (1L << pod), "the holder's bit before the windows");
            // Another pod in the entry's own encoding: the same lookup of a writer's entry for the other pod.
            writer.store(other, new long[] {key}, 0, 1);
            writer.remove(pod, new long[] {key}, 0, 1);
            final long tornPods = (long) Layouts.LONG.getAcquire(rw, entryOffset(writer, rw, key)
                + IndexDescriptor.ENTRY_PODS_OFFSET);
            writer.store(pod, new long[] {key}, 0, 1);
            writer.remove(other, new long[] {key}, 0, 1);
            assertEquals(entry, entryOffset(writer, rw, key), "the key is back in its entry");
            assertEquals(pods, (long) Layouts.LONG.getAcquire(rw, entry + IndexDescriptor.ENTRY_PODS_OFFSET));
            final long even = (long) Layouts.LONG.getAcquire(rw, versionOffset);

            final AtomicBoolean stop = new AtomicBoolean();
            final AtomicLong windows = new AtomicLong();
            final Thread hostile = new Thread(() -> {
                long version = even;
                while (!stop.get()) {
                    Layouts.LONG.setRelease(rw, versionOffset, ++version);
                    Layouts.LONG.setOpaque(rw, entry + IndexDescriptor.ENTRY_KEY_OFFSET, 0L);
                    Layouts.LONG.setOpaque(rw, entry + IndexDescriptor.ENTRY_PODS_OFFSET, tornPods);
                    for (int i = 0; i < WINDOW_SPINS; i++) {
                        Thread.onSpinWait();
                    }
                    Layouts.LONG.setOpaque(rw, entry + IndexDescriptor.ENTRY_PODS_OFFSET, pods);
                    Layouts.LONG.setOpaque(rw, entry + IndexDescriptor.ENTRY_KEY_OFFSET, stored);
                    Layouts.LONG.setRelease(rw, versionOffset, ++version);
                    windows.incrementAndGet();
                    for (int i = 0; i < WINDOW_SPINS; i++) {
                        Thread.onSpinWait();
                    }
                }
            }, "hostile-writer");
            hostile.start();
            long reads = 0;
            long wrong = 0;
            try {
                final long[] words = new long[4];
                final long[] chain = {key};
                final PrefixResult result = new PrefixResult();
                // At least half a second and enough windows and reads for many straddles; at most five seconds.
                final long start = System.nanoTime();
                final long minimum = start + TimeUnit.MILLISECONDS.toNanos(500);
                final long maximum = start + TimeUnit.SECONDS.toNanos(5);
                long now = start;
                while (now < maximum && (now < minimum || windows.get() < 300_000 || reads < 300_000)) {
                    final boolean found = reader.lookup(key, words);
                    if (!found || words[0] != expected[0] || words[1] != expected[1] || words[2] != expected[2]
                        || words[3] != expected[3]) {
                        wrong++;
                    }
                    reader.query(chain, 1, null, result);
                    if (result.count() != 1 || result.depthOf(pod) != 1) {
                        wrong++;
                    }
                    reads += 2;
                    now = System.nanoTime();
                }
            } finally {
                stop.set(true);
                hostile.join();
            }
            assertEquals(0, wrong, maxPods + "-pod cell: " + wrong + " wrong answers in " + reads + " reads over "
                + windows.get() + " odd-version windows");
            assertTrue(reads > 10_000, "reads " + reads);
        }
    }

    /** File offset of the entry holding a stored key: probed from its home, as the reader does. */
    static long entryOffset(final IndexWriter writer, final MemorySegment rw, final long key) {
        final IndexWriterContext ctx = writer.context();
        final long k = IndexDescriptor.storedKey(key);
        final int shardBits = Integer.numberOfTrailingZeros(ctx.shardCount());
        final int slotBits = Integer.numberOfTrailingZeros(ctx.slotsPerShard());
        final long tables = IndexDescriptor.tablesOffset(ctx.maxPods(), ctx.shardCount());
        final long home = IndexDescriptor.homeIndex(IndexDescriptor.spread(k), shardBits, slotBits);
        final long shardStart = home & ~(long) (ctx.slotsPerShard() - 1);
        for (int n = 0; n < ctx.slotsPerShard(); n++) {
            final long index = shardStart + ((home + n) & (ctx.slotsPerShard() - 1));
            final long e = tables + (index << IndexDescriptor.ENTRY_LENGTH_SHIFT);
            if ((long) Layouts.LONG.getAcquire(rw, e + IndexDescriptor.ENTRY_KEY_OFFSET) == k) {
                return e;
            }
        }
        throw new AssertionError("key " + key + " is not in its shard");
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
