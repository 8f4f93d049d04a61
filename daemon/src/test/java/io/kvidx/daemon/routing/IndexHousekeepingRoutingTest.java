package io.kvidx.daemon.routing;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.ffm.Layouts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Deciding threads never do the index's housekeeping (attach, header reads, unmapping, waiting for retired
 * readers): {@link IndexReaderPodIndex}'s own thread does, and follows a re-created file within about
 * {@link IndexReaderPodIndex#REPLACED_CHECK_INTERVAL_MS}, stale writer or not.
 *
 * <p>Decision times are wall-clock ({@link System#nanoTime()} around each decision), so on a loaded host a thread
 * that loses its CPU shows up in the maximum: the bounds below leave room for that, and the figures are printed.
 */
@Timeout(60)
class IndexHousekeepingRoutingTest {
    private static final int CHAIN = 16;
    private static final int DECIDERS = 8;
    /** The bound on a decision's p99 (the figure for "no decision waits for the index's housekeeping"). */
    private static final long DECISION_BOUND_NS = TimeUnit.MILLISECONDS.toNanos(1);
    /**
     * What a descheduled thread (or a GC pause) may add on a small shared host with more deciders than cores: half
     * of {@link IndexReaderPodIndex#RETIRE_WAIT_MS}, which a decision that waits for a retirement reaches.
     */
    private static final long PREEMPTION_ALLOWANCE_NS = TimeUnit.MILLISECONDS.toNanos(500);

    @TempDir
    Path dir;

    private IndexWriterContext writerContext(final int shardCount) {
        return new IndexWriterContext().dir(dir).cell("housekeeping").shardCount(shardCount).capacityBlocks(4096)
            .deleteOnClose(false);
    }

    private IndexReaderContext readerContext(final long heartbeatTimeoutMs) {
        return new IndexReaderContext().dir(dir).cell("housekeeping").attachTimeoutMs(2_000)
            .heartbeatTimeoutMs(heartbeatTimeoutMs);
    }

    private static long[] chain(final long seed) {
        final SplittableRandom r = new SplittableRandom(seed);
        final long[] k = new long[CHAIN];
        for (int i = 0; i < CHAIN; i++) {
            k[i] = r.nextLong();
        }
        return k;
    }

    /** A new file for the cell (replacing any), four pods, the chain held by {@code holder}; the caller closes it. */
    private IndexWriter newFile(final int shardCount, final long[] chain, final int holder) {
        final IndexWriter writer = IndexWriter.create(writerContext(shardCount));
        for (int p = 0; p < 4; p++) {
            writer.registerPod("pod-" + p, "m");
        }
        writer.store(holder, chain, 0, CHAIN);
        return writer;
    }

    /**
     * The daemon's heartbeat stopped, and it keeps being restarted (a new file, fresh for a moment, then stale
     * again): eight threads decide for three seconds while the index turns unavailable, is replaced, attached,
     * re-learnt and retired under them. No decision waits for any of that: no deciding thread ever blocks on a
     * monitor or parks (the JVM's own per-thread counts), and the p99 stays under 1 ms.
     */
    @Test
    void shouldDecideWithoutWaitingWhileTheWriterIsStale() throws Exception {
        final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        threads.setThreadContentionMonitoringEnabled(true);
        final long[] a = chain(1);
        final IndexWriter[] writer = {newFile(16, a, 1)};
        try (IndexReaderPodIndex index = new IndexReaderPodIndex(readerContext(100), 10)) {
            final PodRegistry registry = new PodRegistry();
            assertEquals(4, registry.registerFromIndex(index));
            final Router router = RoutingProfiles.single(
                RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
            Thread.sleep(200);
            assertFalse(index.isAvailable(), "the writer's heartbeat stopped");

            final AtomicBoolean stop = new AtomicBoolean();
            final List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
            final AtomicInteger restarted = new AtomicInteger();
            final Thread restarts = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        LockSupportSleep.millis(250);
                        // A restart: the old daemon is gone (its lock released), the new one re-creates the file.
                        writer[0].close();
                        writer[0] = newFile(16, a, restarted.incrementAndGet() % 4);
                    }
                } catch (final Throwable ex) {
                    failures.add(ex);
                }
            }, "daemon-restarts");
            final Histogram[] times = new Histogram[DECIDERS];
            final long[] waits = new long[DECIDERS];
            final CountDownLatch ready = new CountDownLatch(DECIDERS);
            final List<Thread> deciders = new ArrayList<>();
            for (int t = 0; t < DECIDERS; t++) {
                final int id = t;
                final Thread d = new Thread(() -> {
                    final RoutingContext ctx = router.newContext();
                    final Histogram h = new Histogram();
                    for (int i = 0; i < 10_000; i++) {
                        router.routeKeys(ctx, a, CHAIN);
                    }
                    final ThreadInfo before = threads.getThreadInfo(Thread.currentThread().threadId());
                    ready.countDown();
                    while (!stop.get()) {
                        final long start = System.nanoTime();
                        try {
                            router.routeKeys(ctx, a, CHAIN);
                        } catch (final Throwable ex) {
                            failures.add(ex);
                            break;
                        }
                        h.record(System.nanoTime() - start);
                    }
                    final ThreadInfo after = threads.getThreadInfo(Thread.currentThread().threadId());
                    waits[id] = after.getBlockedCount() - before.getBlockedCount() + after.getWaitedCount()
                        - before.getWaitedCount();
                    times[id] = h;
                }, "decider-" + t);
                d.start();
                deciders.add(d);
            }
            assertTrue(ready.await(30, TimeUnit.SECONDS));
            restarts.start();
            // At least 3 s and 5 restarts: a condition, not a clock (a loaded CI host restarts more slowly).
            final long started = System.nanoTime();
            while (System.nanoTime() - started < 3_000_000_000L
                || restarted.get() < 5 && System.nanoTime() - started < 60_000_000_000L) {
                Thread.sleep(50);
            }
            stop.set(true);
            restarts.join(10_000);
            for (final Thread d : deciders) {
                d.join(10_000);
                assertFalse(d.isAlive(), d.getName() + " hangs");
            }
            assertEquals(List.of(), failures);
            final Histogram all = Histogram.sum(times);
            System.out.println("stale writer, " + DECIDERS + " deciders, " + restarted.get() + " restarts: " + all
                + "; blocked or parked " + Arrays.stream(waits).sum() + " times");
            assertTrue(restarted.get() >= 5, "restarts: " + restarted.get());
            assertTrue(all.count() > 10_000, all.toString());
            assertTrue(all.percentileNs(0.99) < DECISION_BOUND_NS, "p99 above 1 ms: " + all);
            // The exact check: no deciding thread ever blocked on a monitor or parked. The wall-clock maximum is
            // printed, not asserted: with eight deciders on a two-core host it is the scheduler's (tens to hundreds
            // of ms when other builds share the host), and the retiring-reader test bounds a single decider's.
            assertEquals(0, Arrays.stream(waits).sum(), "deciding threads blocked or parked: " + all);
        } finally {
            writer[0].close();
        }
    }

    /**
     * A query is stuck on the old file (a shard held locked there, a long read bound) when the daemon re-creates
     * the file: retiring the old reader waits up to {@link IndexReaderPodIndex#RETIRE_WAIT_MS} for it, and the
     * decisions on the new file (which re-learn the pod table first) must not wait with it. Against the former
     * implementation, whose {@code describe} took the lock the retirement holds, the first decision took ~1 s.
     */
    @Test
    void shouldNotWaitForARetiringReaderWhileDeciding() throws Exception {
        final long[] a = chain(2);
        final long[] b = chain(3);
        final long readBoundNs = TimeUnit.SECONDS.toNanos(3);
        try (IndexWriter first = newFile(16, a, 1);
             Arena arena = Arena.ofShared();
             IndexReaderPodIndex index = new IndexReaderPodIndex(readerContext(0).readBoundNs(readBoundNs), 10)) {
            final PodRegistry registry = new PodRegistry();
            assertEquals(4, registry.registerFromIndex(index));
            final Router router = RoutingProfiles.single(
                RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
            final IndexReader old = index.reader();

            final MemorySegment rw = mapReadWrite(first.context().indexFile(), arena);
            final long versionOffset = shardVersionOffset(first.context(), a[0]);
            final long even = (long) Layouts.LONG.getAcquire(rw, versionOffset);
            Layouts.LONG.setRelease(rw, versionOffset, even + 1);
            final CountDownLatch querying = new CountDownLatch(1);
            final Thread stuck = new Thread(() -> {
                final PodIndex.Cursor cursor = index.newCursor();
                querying.countDown();
                try {
                    cursor.prefixDepths(a, CHAIN, new long[] {-1L, -1L, -1L, -1L}, new int[PodRegistry.MAX_PODS]);
                } catch (final IndexException expected) {
                    // busy past the read bound, or the reader was retired
                }
            }, "stuck-query");
            stuck.start();
            querying.await(5, TimeUnit.SECONDS);
            Thread.sleep(50);

            first.close();
            try (IndexWriter second = newFile(16, b, 2)) {
                // What a router's own housekeeping called before the index had a thread of its own.
                final Thread refresher = new Thread(index::refresh, "refresher");
                refresher.start();
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                while (index.reader() == old && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
                assertNotSame(old, index.reader(), "the new file is attached");

                final RoutingContext ctx = router.newContext();
                long max = 0;
                int cacheAware = 0;
                final long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
                while (System.nanoTime() < end) {
                    final long start = System.nanoTime();
                    final int pick = router.routeKeys(ctx, b, CHAIN);
                    max = Math.max(max, System.nanoTime() - start);
                    if (pick == 2 && !ctx.plan().isFallback()) {
                        cacheAware++;
                    }
                }
                System.out.println("decisions while a reader retires: max " + max / 1_000 + " us, " + cacheAware
                    + " cache-aware");
                assertTrue(max < PREEMPTION_ALLOWANCE_NS, "a decision waited " + max / 1_000 + " us");
                assertTrue(cacheAware > 0, "decides on the new file");
                Layouts.LONG.setRelease(rw, versionOffset, even + 2);
                stuck.join(10_000);
                refresher.join(10_000);
            }
        }
    }

    /**
     * The daemon re-creates the file with another geometry (twice the shards); its old file is never touched again
     * but its heartbeat has not aged past the timeout yet: routers answer from the new file within about the
     * replaced-check interval, not once the old heartbeat goes stale.
     */
    @Test
    void shouldFollowAFileReCreatedWithAnotherGeometryWithinASecond() throws Exception {
        final long[] a = chain(4);
        final IndexWriter first = newFile(16, a, 1);
        try (IndexReaderPodIndex index = new IndexReaderPodIndex(readerContext(10_000), 100)) {
            final PodRegistry registry = new PodRegistry();
            assertEquals(4, registry.registerFromIndex(index));
            final Router router = RoutingProfiles.single(
                RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
            final RoutingContext ctx = router.newContext();
            assertEquals(1, router.routeKeys(ctx, a, CHAIN));
            assertEquals(16, index.reader().shardCount());

            first.close();
            try (IndexWriter second = newFile(32, a, 3)) {
                final long start = System.nanoTime();
                final long deadline = start + TimeUnit.SECONDS.toNanos(10);
                while (System.nanoTime() < deadline
                    && (router.routeKeys(ctx, a, CHAIN) != 3 || ctx.plan().isFallback())) {
                    LockSupportSleep.millis(1);
                }
                final long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                System.out.println("followed the re-created file in " + tookMs + " ms");
                assertEquals(3, router.routeKeys(ctx, a, CHAIN), "answers from the new file");
                assertFalse(ctx.plan().isFallback());
                assertEquals(32, index.reader().shardCount());
                assertTrue(tookMs < 1_000, "took " + tookMs + " ms");
            }
        }
    }

    private static long shardVersionOffset(final IndexWriterContext ctx, final long key) {
        final long h = IndexDescriptor.spread(IndexDescriptor.storedKey(key));
        final int shard = (int) (h >>> (64 - Integer.numberOfTrailingZeros(ctx.shardCount())));
        return IndexDescriptor.shardHeadersOffset(ctx.maxPods()) + (long) shard * IndexDescriptor.SHARD_HEADER_LENGTH
            + IndexDescriptor.SHARD_VERSION_OFFSET;
    }

    private static MemorySegment mapReadWrite(final Path file, final Arena arena) throws Exception {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return channel.map(FileChannel.MapMode.READ_WRITE, 0, channel.size(), arena);
        }
    }

    /** Sleeps without a checked exception. */
    private static final class LockSupportSleep {
        static void millis(final long ms) {
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(ms));
        }
    }

    /** Decision times in 1 us buckets up to 10 ms, and the exact maximum. */
    private static final class Histogram {
        private final long[] buckets = new long[10_001];
        private long count;
        private long maxNs;
        private long overMs;

        void record(final long ns) {
            buckets[(int) Math.min(ns / 1_000, buckets.length - 1)]++;
            count++;
            maxNs = Math.max(maxNs, ns);
            if (ns > DECISION_BOUND_NS) {
                overMs++;
            }
        }

        static Histogram sum(final Histogram[] parts) {
            final Histogram h = new Histogram();
            for (final Histogram p : parts) {
                for (int i = 0; i < h.buckets.length; i++) {
                    h.buckets[i] += p.buckets[i];
                }
                h.count += p.count;
                h.maxNs = Math.max(h.maxNs, p.maxNs);
                h.overMs += p.overMs;
            }
            return h;
        }

        long count() {
            return count;
        }

        long maxNs() {
            return maxNs;
        }

        /** Upper bound of the bucket holding the quantile. */
        long percentileNs(final double q) {
            final long rank = (long) Math.ceil(q * count);
            long seen = 0;
            for (int i = 0; i < buckets.length; i++) {
                seen += buckets[i];
                if (seen >= rank) {
                    return (i + 1) * 1_000L;
                }
            }
            return maxNs;
        }

        @Override
        public String toString() {
            return count + " decisions, p50 < " + percentileNs(0.5) / 1_000 + " us, p99 < " + percentileNs(0.99) / 1_000
                + " us, p99.9 < " + percentileNs(0.999) / 1_000 + " us, p99.99 < " + percentileNs(0.9999) / 1_000
                + " us, max " + maxNs / 1_000 + " us, " + overMs + " over 1 ms";
        }
    }
}
