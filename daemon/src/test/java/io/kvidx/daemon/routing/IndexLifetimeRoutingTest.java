package io.kvidx.daemon.routing;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexException;

import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.routing.Selector;
import io.kvidx.routing.SingleWorkflow;
import io.kvidx.routing.Slots;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.index.TestIndexes;
import io.kvidx.ffm.Layouts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The decision layer while the index misbehaves or changes under it: a shard held locked, the reader refreshed
 * and closed under concurrent queries, and pod slots given to other pods.
 */
@Timeout(60)
class IndexLifetimeRoutingTest {
    private static final int CHAIN = 16;

    @TempDir
    Path dir;

    private IndexWriterContext writerContext() {
        return new IndexWriterContext().dir(dir).cell("lifetime").shardCount(16).capacityBlocks(4096)
            .deleteOnClose(true);
    }

    private IndexReaderContext readerContext() {
        return new IndexReaderContext().dir(dir).cell("lifetime").attachTimeoutMs(2_000).heartbeatTimeoutMs(0);
    }

    private static long[] chain(final long seed, final int n) {
        final SplittableRandom r = new SplittableRandom(seed);
        final long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = r.nextLong();
        }
        return k;
    }

    /**
     * A shard held odd (a writer stopped mid-change, heartbeat still fresh: here the heartbeat check is off, so a
     * reader without a bound would wait forever) costs one decision its cache-awareness, not its thread: the plan
     * comes back from the fallback picker, counted as a busy index error, and the next decision after the shard is
     * released is cache-aware again.
     */
    @Test
    void shouldFallBackWithinTheBoundWhileAShardIsHeldLocked() throws Exception {
        try (IndexWriter writer = IndexWriter.create(writerContext());
             Arena arena = Arena.ofShared()) {
            for (int p = 0; p < 4; p++) {
                writer.registerPod("pod-" + p, "m");
            }
            final long[] a = chain(1, CHAIN);
            writer.store(2, a, 0, CHAIN);
            try (IndexReaderPodIndex index = new IndexReaderPodIndex(readerContext(), 100)) {
                final PodRegistry registry = new PodRegistry();
                assertEquals(4, registry.registerFromIndex(index));
                final Selector selector = new Selector(
                    RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
                final Router router = new Router(new SingleWorkflow(selector), registry, index);
                final RoutingContext ctx = router.newContext();
                assertEquals(2, router.routeKeys(ctx, a, CHAIN));
                assertFalse(ctx.plan().isFallback());

                final MemorySegment rw = mapReadWrite(writer.context().indexFile(), arena);
                final long versionOffset = shardVersionOffset(writer.context(), a[0]);
                final long even = (long) Layouts.LONG.getAcquire(rw, versionOffset);
                Layouts.LONG.setRelease(rw, versionOffset, even + 1);
                final RoutingPlan plan = CompletableFuture.supplyAsync(() -> {
                    ctx.reset().keys(a, 0, CHAIN);
                    return router.plan(ctx);
                }).get(2, TimeUnit.SECONDS);
                assertTrue(plan.isFallback(), plan.toString());
                assertTrue(plan.slot() >= 0 && plan.slot() < 4, plan.toString());
                assertEquals(1, selector.counters().indexBusy(), selector.counters().toString());
                assertEquals(1, selector.counters().indexErrors());
                assertEquals(1, selector.counters().fallbacks());
                assertEquals(1, index.reader().busyCount());

                Layouts.LONG.setRelease(rw, versionOffset, even + 2);
                assertEquals(2, router.routeKeys(ctx, a, CHAIN), "cache-aware again");
                assertFalse(ctx.plan().isFallback());
                assertEquals(1, selector.counters().fallbacks());
            }
        }
    }

    /**
     * Query threads (decisions, and raw cursor queries next to the index's other reads) run while another thread
     * re-creates the file and refreshes the index, then closes it, round after round: nothing but the typed
     * {@link IndexException} may reach a raw cursor's caller, and nothing at all a router's caller.
     */
    @Test
    @Timeout(120)
    void shouldNeverThrowIntoQueriesWhileTheIndexIsRefreshedAndClosed() throws Exception {
        final int rounds = 3;
        final int refreshesPerRound = 30;
        final int threads = 3;
        final long[] a = chain(7, CHAIN);
        final List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        final AtomicLong typed = new AtomicLong();
        final AtomicLong decisions = new AtomicLong();
        final AtomicLong fallbacks = new AtomicLong();
        IndexWriter writer = newFile(a);
        try {
            for (int round = 0; round < rounds; round++) {
                final IndexReaderPodIndex index = new IndexReaderPodIndex(readerContext(), 0);
                final PodRegistry registry = new PodRegistry();
                registry.registerFromIndex(index);
                final Router router = RoutingProfiles.single(
                    RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
                final AtomicBoolean stop = new AtomicBoolean();
                final AtomicInteger started = new AtomicInteger();
                final List<Thread> queriers = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    final Thread q = new Thread(() -> {
                        final RoutingContext ctx = router.newContext();
                        final PodIndex.Cursor cursor = index.newCursor();
                        final long[] all = {-1L, -1L, -1L, -1L};
                        final int[] depths = new int[PodRegistry.MAX_PODS];
                        started.incrementAndGet();
                        while (!stop.get()) {
                            try {
                                final RoutingPlan plan = router.plan(ctx.reset().keys(a, 0, CHAIN));
                                decisions.incrementAndGet();
                                if (plan.isFallback()) {
                                    fallbacks.incrementAndGet();
                                }
                            } catch (final Throwable ex) {
                                failures.add(ex);
                            }
                            try {
                                index.isAvailable();
                                index.aliveWord(0);
                                index.podTableVersion();
                                index.describe(1);
                                cursor.prefixDepths(a, CHAIN, all, depths);
                            } catch (final IndexException ex) {
                                typed.incrementAndGet();
                            } catch (final Throwable ex) {
                                failures.add(ex);
                            }
                        }
                    }, "querier-" + round + "-" + t);
                    q.start();
                    queriers.add(q);
                }
                while (started.get() < threads) {
                    Thread.onSpinWait();
                }
                for (int i = 0; i < refreshesPerRound; i++) {
                    // One writer per cell: the old writer lets go of the cell (its file stays) before the next one.
                    writer.close();
                    writer = newFile(a);
                    index.refresh();
                }
                index.close();
                index.close();
                Thread.sleep(50);
                stop.set(true);
                for (final Thread q : queriers) {
                    q.join(10_000);
                    assertFalse(q.isAlive(), q.getName() + " hangs");
                }
            }
        } finally {
            writer.close();
            Files.deleteIfExists(writerContext().indexFile());
        }
        if (!failures.isEmpty()) {
            final AssertionError error = new AssertionError(failures.size() + " exceptions reached query threads, "
                + "first: " + failures.getFirst());
            error.initCause(failures.getFirst());
            throw error;
        }
        assertTrue(decisions.get() > 0);
        assertTrue(typed.get() > 0, "queries after close report the index unavailable");
        assertTrue(fallbacks.get() > 0, "decisions after close fall back");
    }

    /** A new file for the cell with four pods, the chain held by slot 1; the previous file stays mapped. */
    private IndexWriter newFile(final long[] chain) {
        final IndexWriter writer = IndexWriter.create(writerContext().deleteOnClose(false));
        for (int p = 0; p < 4; p++) {
            writer.registerPod("pod-" + p, "m");
        }
        writer.store(1, chain, 0, chain.length);
        return writer;
    }

    /**
     * Pod A's slot is freed (down, swept) and given to pod C, which stores other blocks: the router must name C's
     * blocks C, never A, though the registry learnt the slot as A's. The pod table version the decision sees moved,
     * so the registry re-learns the slot before the pick.
     */
    @ParameterizedTest
    @ValueSource(ints = {64, 256})
    void shouldNeverNameTheSlotsFormerPodForItsNewPodsBlocks(final int maxPods) {
        try (IndexWriter writer = IndexWriter.create(writerContext().maxPods(maxPods))) {
            final int a = writer.registerPod("A", "m");
            final int b = writer.registerPod("B", "m");
            final long[] x = chain(11, CHAIN);
            final long[] y = chain(12, CHAIN);
            writer.store(a, x, 0, CHAIN);
            try (IndexReaderPodIndex index = new IndexReaderPodIndex(readerContext(), 100)) {
                final PodRegistry registry = new PodRegistry();
                assertEquals(2, registry.registerFromIndex(index));
                final Selector selector = new Selector(
                    RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
                final Router router = new Router(new SingleWorkflow(selector), registry, index);
                final RoutingContext ctx = router.newContext();
                assertEquals(a, router.routeKeys(ctx, x, CHAIN));
                assertEquals("A", registry.podId(a));
                assertEquals(1, registry.generation(a));
                final long versionBefore = index.podTableVersion();

                // Every other slot taken (fillers the router never learnt): C must reuse A's slot.
                TestIndexes.fillFreeSlots(writer);
                writer.podDown(a);
                while (writer.isSweeping()) {
                    writer.sweepStep();
                }
                assertEquals(b, router.routeKeys(ctx, x, CHAIN), "the free slot is no candidate");
                assertFalse(registry.isRegistered(a), "a free slot is excluded");

                final int c = writer.registerPod("C", "m");
                assertEquals(a, c, "C is given A's slot");
                writer.store(c, y, 0, CHAIN);
                assertEquals(2, index.describe(c).generation());
                assertNotEquals(versionBefore, index.podTableVersion());

                final int pick = router.routeKeys(ctx, y, CHAIN);
                assertFalse(ctx.plan().isFallback());
                assertEquals(c, pick, "C holds the whole chain");
                assertEquals("C", registry.podId(pick), "C's blocks are routed under C's name, never A's");
                assertEquals(2, registry.generation(pick));
                assertTrue(selector.counters().podTableResyncs() >= 2, selector.counters().toString());

                // A plain reader's answer carries the version it saw; the slot's entry read at that version is C.
                final PrefixResult result = new PrefixResult();
                index.reader().query(y, CHAIN, null, result);
                assertEquals(index.reader().podTableVersion(), result.podTableVersion());
                assertEquals(CHAIN, result.depthOf(c));
                assertEquals("C", index.reader().pod(c).podId());
            }
        }
    }

    /**
     * The same under concurrency: a writer thread keeps giving slot 0 to a new pod, each storing a chain no other
     * pod ever holds, while a router thread routes the newest chain. Whenever a decision credits slot 0 with blocks
     * of pod k's chain, the registry must name slot 0 pod k. The writer moves on once the router has decided on the
     * newest chain at least once, so the slot changes hands while the router decides and every pod gets its turn.
     */
    @Test
    void shouldKeepPodIdentityWhileASlotChangesHandsUnderDecisions() throws Exception {
        try (IndexWriter writer = IndexWriter.create(writerContext().maxPods(64))) {
            assertEquals(0, writer.registerPod("pod-0", "m"));
            final int other = writer.registerPod("other", "m");
            final long[][] chains = new long[50_000][];
            chains[0] = chain(1_000, CHAIN);
            writer.store(0, chains[0], 0, CHAIN);
            try (IndexReaderPodIndex index = new IndexReaderPodIndex(readerContext(), 100)) {
                final PodRegistry registry = new PodRegistry();
                registry.registerFromIndex(index);
                registry.load(other, 0, 1_000, 0);
                // Every other slot taken (fillers the router never learnt): each new pod must reuse slot 0.
                TestIndexes.fillFreeSlots(writer);
                final Router router = RoutingProfiles.single(
                    RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
                final AtomicInteger published = new AtomicInteger();
                final AtomicInteger decided = new AtomicInteger();
                final AtomicBoolean stop = new AtomicBoolean();
                final List<String> churnProblems = Collections.synchronizedList(new ArrayList<>());
                final Thread churn = new Thread(() -> {
                    for (int k = 1; k < chains.length && !stop.get(); k++) {
                        writer.podDown(0);
                        while (writer.isSweeping()) {
                            writer.sweepStep();
                        }
                        final int slot = writer.registerPod("pod-" + k, "m");
                        if (slot != 0) {
                            churnProblems.add("pod-" + k + " got slot " + slot);
                            return;
                        }
                        chains[k] = chain(1_000 + k, CHAIN);
                        writer.store(0, chains[k], 0, CHAIN);
                        published.set(k);
                        while (decided.get() < k && !stop.get()) {
                            Thread.onSpinWait();
                        }
                    }
                }, "slot-churn");
                churn.start();
                final RoutingContext ctx = router.newContext();
                int credited = 0;
                final java.util.BitSet creditedPods = new java.util.BitSet();
                final List<String> wrong = new ArrayList<>();
                final long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1_500);
                while (System.nanoTime() < end && churn.isAlive()) {
                    final int k = published.get();
                    final int pick = router.routeKeys(ctx, chains[k], CHAIN);
                    if (pick == 0 && !ctx.plan().isFallback() && ctx.get(Slots.PREFIX_DEPTHS).depth(0) > 0) {
                        credited++;
                        creditedPods.set(k);
                        if (!("pod-" + k).equals(registry.podId(0))) {
                            wrong.add("pod-" + k + "'s blocks named " + registry.podId(0));
                        }
                    }
                    decided.set(k);
                }
                stop.set(true);
                churn.join(10_000);
                assertEquals(List.of(), churnProblems);
                assertTrue(creditedPods.cardinality() >= 10, "too few pods credited with slot 0: " + creditedPods);
                assertEquals(List.of(), wrong.size() > 5 ? wrong.subList(0, 5) : wrong,
                    wrong.size() + " of " + credited + " decisions");
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
}
