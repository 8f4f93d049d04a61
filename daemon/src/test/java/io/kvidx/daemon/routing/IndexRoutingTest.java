package io.kvidx.daemon.routing;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodRole;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.routing.Selector;
import io.kvidx.routing.SingleWorkflow;
import io.kvidx.routing.overlay.PickOverlay;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The decision layer over a real shared-memory index written by {@link IndexWriter}.
 */
@Timeout(30)
class IndexRoutingTest {
    @TempDir
    Path dir;

    private IndexWriterContext writerContext() {
        return new IndexWriterContext().dir(dir).cell("routing").shardCount(16).capacityBlocks(4096)
            .deleteOnClose(true);
    }

    private IndexReaderContext readerContext(final long heartbeatTimeoutMs) {
        return new IndexReaderContext().dir(dir).cell("routing").attachTimeoutMs(2_000)
            .heartbeatTimeoutMs(heartbeatTimeoutMs);
    }

    private static long[] chain(final long seed, final int n) {
        final SplittableRandom r = new SplittableRandom(seed);
        final long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = r.nextLong();
        }
        return k;
    }

    @Test
    void shouldRouteToTheDeepestPrefixOnARealIndex() {
        try (IndexWriter writer = IndexWriter.create(writerContext())) {
            final int[] slots = new int[6];
            for (int p = 0; p < slots.length; p++) {
                slots[p] = writer.registerPod("pod-" + p, "m");
            }
            final long[] a = chain(1, 32);
            final long[] b = chain(2, 32);
            writer.store(slots[1], a, 0, 32);
            writer.store(slots[2], a, 0, 10);
            writer.store(slots[4], b, 0, 20);
            try (IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(readerContext(0)), 100)) {
                final PodRegistry registry = new PodRegistry();
                assertEquals(6, registry.registerFromIndex(index));
                assertEquals("pod-4", registry.podId(slots[4]));
                final Router router = RoutingProfiles.single(
                    RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
                final RoutingContext ctx = router.newContext();
                assertEquals(slots[1], router.routeKeys(ctx, a, a.length));
                assertEquals(slots[4], router.routeKeys(ctx, b, b.length));
                registry.load(slots[1], 0, 50, 0);
                final int shortPick = router.routeKeys(ctx, a, 10);
                assertTrue(shortPick == slots[2], "both hold all 10 blocks; the idle pod wins: " + shortPick);
                writer.podDown(slots[1]);
                assertEquals(slots[2], router.routeKeys(ctx, a, a.length), "a pod marked down is skipped");
                final Router rr = RoutingProfiles.single(RoutingProfiles.roundRobin("rr", index, registry, true),
                    registry, index);
                final RoutingContext rrCtx = rr.newContext();
                final int[] counts = new int[256];
                int held = 0;
                for (int i = 0; i < 50; i++) {
                    final int slot = rr.routeKeys(rrCtx, a, a.length);
                    counts[slot]++;
                    held += rr.heldDepth(rrCtx, slot);
                }
                assertEquals(10 * 10, held, "round robin hits pod 2's 10 blocks once per 5 requests");
                assertEquals(10, router.heldDepth(ctx, slots[2]));
                assertEquals(0, router.heldDepth(ctx, slots[3]));
                assertEquals(0, counts[slots[1]]);
                for (int p = 0; p < slots.length; p++) {
                    if (p != 1) {
                        assertEquals(10, counts[slots[p]], "round robin over the 5 alive pods");
                    }
                }
            }
        }
    }

    @Test
    void shouldRouteTokenIdsByRouterKeys() {
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        try (IndexWriter writer = IndexWriter.create(writerContext().blockSize(16))) {
            final PodRegistry registry = new PodRegistry();
            for (int p = 0; p < 4; p++) {
                final int slot = writer.registerPod("pod-" + p, "llama");
                registry.register(slot, "pod-" + p, "llama", PodRole.BOTH, null);
            }
            final int[] prompt = new int[16 * 12 + 5];
            for (int i = 0; i < prompt.length; i++) {
                prompt[i] = 1000 + i * 7;
            }
            final long[] keys = new long[12];
            hasher.keys(RouterKeyHasher.chainSeed("llama", null, null), prompt, prompt.length, keys);
            writer.store(2, keys, 0, 12);
            final long[] loraKeys = new long[12];
            hasher.keys(RouterKeyHasher.chainSeed("llama", "sql", null), prompt, prompt.length, loraKeys);
            writer.store(3, loraKeys, 0, 6);
            try (IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(readerContext(0)), 100)) {
                assertEquals(16, index.blockSize());
                final Router router = RoutingProfiles.single(
                    RoutingProfiles.cacheAware("ca", index, registry, hasher, null), registry, index);
                final RoutingContext ctx = router.newContext();
                ctx.reset().tokens(prompt, 0, prompt.length).request().model("llama");
                assertEquals(2, router.plan(ctx).slot());
                ctx.reset().tokens(prompt, 0, prompt.length).request().model("llama").lora("sql");
                assertEquals(3, router.plan(ctx).slot(), "the adapter's own chain");
                org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> RoutingProfiles.cacheAware("ca", index, registry, new RouterKeyHasher(64), null));
            }
        }
    }

    @Test
    void shouldFallBackWhileTheHeartbeatIsStaleAndRecover() {
        try (IndexWriter writer = IndexWriter.create(writerContext())) {
            final int s0 = writer.registerPod("p0", "m");
            final int s1 = writer.registerPod("p1", "m");
            final long[] a = chain(3, 16);
            writer.store(s1, a, 0, 16);
            writer.heartbeat(System.currentTimeMillis());
            try (IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(readerContext(500)), 10)) {
                final PodRegistry registry = new PodRegistry();
                registry.register(s0, "p0", "m", PodRole.BOTH, null).register(s1, "p1", "m", PodRole.BOTH, null);
                registry.load(s1, 0, 3, 0);
                final Selector selector = new Selector(
                    RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
                final Router router = new Router(new SingleWorkflow(selector), registry, index);
                final RoutingContext ctx = router.newContext();
                assertEquals(s1, router.routeKeys(ctx, a, a.length));
                writer.heartbeat(System.currentTimeMillis() - 60_000);
                assertFalse(index.isAvailable());
                assertEquals(s0, router.routeKeys(ctx, a, a.length), "power-of-two picks the idle pod");
                assertTrue(ctx.plan().isFallback());
                assertEquals(1, selector.counters().fallbacks());
                writer.heartbeat(System.currentTimeMillis());
                assertEquals(s1, router.routeKeys(ctx, a, a.length), "cache-aware again");
                assertFalse(ctx.plan().isFallback());
                assertEquals(1, selector.counters().fallbacks());
            }
        }
    }

    @Test
    void shouldFallBackWhileTheIndexIsMissingAndAttachWhenItAppears() {
        final PodRegistry registry = new PodRegistry();
        registry.register(0, "p0", "m", PodRole.BOTH, null).register(1, "p1", "m", PodRole.BOTH, null);
        try (IndexReaderPodIndex index = new IndexReaderPodIndex(readerContext(5_000), 0)) {
            assertFalse(index.isAvailable());
            final Selector selector = new Selector(
                RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
            final Router router = new Router(new SingleWorkflow(selector), registry, index);
            final RoutingContext ctx = router.newContext();
            final long[] a = chain(4, 8);
            for (int i = 0; i < 20; i++) {
                assertNotEquals(-1, router.routeKeys(ctx, a, a.length));
                assertTrue(ctx.plan().isFallback());
            }
            assertEquals(20, selector.counters().fallbacks());
            try (IndexWriter writer = IndexWriter.create(writerContext())) {
                final int s0 = writer.registerPod("p0", "m");
                final int s1 = writer.registerPod("p1", "m");
                assertEquals(0, s0);
                writer.store(s1, a, 0, 8);
                registry.load(s1, 0, 5, 0);
                // The index's housekeeping thread attaches (never a deciding thread): within a retry interval.
                final long deadline = System.currentTimeMillis() + 2_000;
                while (!index.isAvailable() && System.currentTimeMillis() < deadline) {
                    Thread.onSpinWait();
                }
                for (int i = 0; i < 5; i++) {
                    assertEquals(s1, router.routeKeys(ctx, a, a.length), "attached: cache-aware");
                    assertFalse(ctx.plan().isFallback());
                }
                assertEquals(20, selector.counters().fallbacks());
            }
        }
    }

    @Test
    void shouldFollowAReCreatedIndex() throws InterruptedException {
        final PodRegistry registry = new PodRegistry();
        registry.register(0, "p0", "m", PodRole.BOTH, null).register(1, "p1", "m", PodRole.BOTH, null);
        final long[] a = chain(6, 8);
        final IndexWriter first = IndexWriter.create(writerContext());
        first.registerPod("p0", "m");
        first.registerPod("p1", "m");
        first.store(0, a, 0, 8);
        try (IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(readerContext(300)), 50)) {
            final Router router = RoutingProfiles.single(
                RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
            final RoutingContext ctx = router.newContext();
            assertEquals(0, router.routeKeys(ctx, a, a.length));
            first.close();
            try (IndexWriter second = IndexWriter.create(writerContext())) {
                second.registerPod("p0", "m");
                second.registerPod("p1", "m");
                second.store(1, a, 0, 8);
                registry.load(0, 0, 9, 0);
                final long deadline = System.currentTimeMillis() + 10_000;
                while (System.currentTimeMillis() < deadline) {
                    second.heartbeat(System.currentTimeMillis());
                    if (router.routeKeys(ctx, a, a.length) == 1 && !ctx.plan().isFallback()) {
                        break;
                    }
                    Thread.sleep(20);
                }
                assertEquals(1, router.routeKeys(ctx, a, a.length), "follows the new file");
                assertFalse(ctx.plan().isFallback());
            }
        }
    }

    @Test
    void shouldKeepABurstTogetherBeforeTheEventsArrive() {
        try (IndexWriter writer = IndexWriter.create(writerContext())) {
            final PodRegistry registry = new PodRegistry();
            for (int p = 0; p < 8; p++) {
                final int slot = writer.registerPod("pod-" + p, "m");
                registry.register(slot, "pod-" + p, "m", PodRole.BOTH, null);
            }
            try (IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(readerContext(0)), 100)) {
                final Router router = RoutingProfiles.single(RoutingProfiles.cacheAware("ca", index, registry,
                    null, 16, new PickOverlay(4096, 2_000)), registry, index);
                final RoutingContext ctx = router.newContext();
                final long[] burst = chain(5, 24);
                final int first = router.routeKeys(ctx, burst, burst.length);
                for (int i = 0; i < 10; i++) {
                    registry.requestStarted(first, 100);
                    assertEquals(first, router.routeKeys(ctx, burst, burst.length));
                }
                writer.store(first, burst, 0, burst.length);
                assertEquals(first, router.routeKeys(ctx, burst, burst.length), "and the index agrees later");
            }
        }
    }

    @Test
    void shouldDecideWithoutAllocatingOnTheRealIndex() {
        try (IndexWriter writer = IndexWriter.create(writerContext())) {
            final PodRegistry registry = new PodRegistry();
            final long[][] chains = new long[64][];
            for (int p = 0; p < 32; p++) {
                final int slot = writer.registerPod("pod-" + p, "m");
                registry.register(slot, "pod-" + p, "m", PodRole.BOTH, null).load(slot, p % 3, p % 5, 0);
            }
            for (int i = 0; i < chains.length; i++) {
                chains[i] = chain(100 + i, 32);
                writer.store(i % 32, chains[i], 0, 1 + i % 32);
                writer.store((i * 7) % 32, chains[i], 0, 32 - i % 16);
            }
            try (IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(readerContext(0)), 100)) {
                final Router router = RoutingProfiles.single(
                    RoutingProfiles.cacheAware("ca", index, registry, null, 16, null), registry, index);
                final RoutingContext ctx = router.newContext();
                final com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean)
                    java.lang.management.ManagementFactory.getThreadMXBean();
                final long id = Thread.currentThread().threadId();
                final long[] perRound = new long[5];
                int sum = 0;
                for (int round = 0; round < perRound.length; round++) {
                    final long calibrate = mx.getThreadAllocatedBytes(id);
                    final long overhead = mx.getThreadAllocatedBytes(id) - calibrate;
                    final long before = mx.getThreadAllocatedBytes(id);
                    for (int i = 0; i < 20_000; i++) {
                        sum += router.routeKeys(ctx, chains[i & 63], 32);
                    }
                    perRound[round] = mx.getThreadAllocatedBytes(id) - before - overhead;
                }
                assertTrue(sum > 0);
                final String rounds = java.util.Arrays.toString(perRound);
                assertTrue(java.util.Arrays.stream(perRound).anyMatch(b -> b == 0), "always allocating: " + rounds);
                for (int r = 2; r < perRound.length; r++) {
                    assertTrue(perRound[r] < 1_000, "allocation in steady state: " + rounds);
                }
            }
        }
    }
}
