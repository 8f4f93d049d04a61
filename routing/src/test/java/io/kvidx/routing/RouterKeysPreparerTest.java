package io.kvidx.routing;

import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.client.keys.RequestExtras;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.routing.plugins.HashKeyPreparer;
import io.kvidx.routing.plugins.RouterKeysPreparer;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

class RouterKeysPreparerTest {
    private final RouterKeyHasher hasher = new RouterKeyHasher(16);

    private long[] prepared(final RoutingContext ctx) {
        final BlockKeys keys = ctx.get(Slots.BLOCK_KEYS);
        return Arrays.copyOf(keys.keys(), keys.length());
    }

    @Test
    void shouldKeyTheChainSeededByModelLoraAndSalt() {
        final RouterKeysPreparer p = new RouterKeysPreparer("rk", hasher);
        final RoutingContext ctx = PluginTestSupport.context(PluginTestSupport.registry(1), null);
        final int[] prompt = TestKeys.tokens(3, 16 * 5 + 7);
        ctx.tokens(prompt, 0, prompt.length).request().model("llama").lora("sql").cacheSalt("s");
        p.prepare(ctx);
        final long[] expected = new long[5];
        assertEquals(5, hasher.keys(RouterKeyHasher.chainSeed("llama", "sql", "s"), prompt, prompt.length,
            expected));
        assertArrayEquals(expected, prepared(ctx));
        ctx.reset().tokens(prompt, 0, prompt.length).request().model("llama");
        p.prepare(ctx);
        final long[] base = prepared(ctx);
        assertFalse(Arrays.equals(expected, base), "another adapter, other keys");
        final long[] viaFunction = new long[8];
        final int n = RouterKeysPreparer.keyFunction(hasher, "llama", null, null).keys(prompt, prompt.length,
            viaFunction);
        assertArrayEquals(base, Arrays.copyOf(viaFunction, n), "fixed-seed key function agrees");
    }

    @Test
    void shouldKeyTheRequestsMultimodalItemsAndTreatAnEmptySaltAsNone() {
        final RouterKeysPreparer p = new RouterKeysPreparer("rk", hasher);
        final RoutingContext ctx = PluginTestSupport.context(PluginTestSupport.registry(1), null);
        final int[] prompt = new int[16 * 4];
        Arrays.fill(prompt, 151_655);
        ctx.tokens(prompt, 0, prompt.length).request().model("vl").multiModal("image-a", 16, 32).cacheSalt("");
        p.prepare(ctx);
        final long[] expected = new long[4];
        hasher.keys(RouterKeyHasher.chainSeed("vl", null, null), prompt, prompt.length,
            new RequestExtras().addMultiModal("image-a", 16, 32), expected);
        final long[] imageA = prepared(ctx);
        assertArrayEquals(expected, imageA);
        ctx.reset().tokens(prompt, 0, prompt.length).request().model("vl").multiModal("image-b", 16, 32);
        p.prepare(ctx);
        final long[] imageB = prepared(ctx);
        assertEquals(imageA[0], imageB[0], "the text block before the image is shared");
        assertFalse(imageA[1] == imageB[1] || imageA[3] == imageB[3], "the image's blocks are not");
        ctx.reset().tokens(prompt, 0, prompt.length).request().model("vl");
        p.prepare(ctx);
        assertFalse(prepared(ctx)[1] == imageA[1], "reset forgets the items");

        // The consistent-hash key of a prompt start separates the images too.
        final HashKeyPreparer hk = new HashKeyPreparer("hk", null, HashKeyPreparer.Source.TOKENS, 64);
        ctx.reset().tokens(prompt, 0, prompt.length).request().multiModal("image-a", 16, 32);
        hk.prepare(ctx);
        final long a = ctx.get(Slots.HASH_KEY).get();
        ctx.reset().tokens(prompt, 0, prompt.length).request().multiModal("image-b", 16, 32);
        hk.prepare(ctx);
        assertFalse(a == ctx.get(Slots.HASH_KEY).get());
    }

    @Test
    void shouldKeyMultimodalRequestsWithoutAllocating() {
        final RouterKeysPreparer p = new RouterKeysPreparer("rk", hasher);
        final RoutingContext ctx = PluginTestSupport.context(PluginTestSupport.registry(1), null);
        final int[] prompt = TestKeys.tokens(5, 2048);
        final String[] images = {"sha256:0123456789abcdef", "sha256:fedcba9876543210", "uuid-1"};
        final com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean)
            ManagementFactory.getThreadMXBean();
        final long id = Thread.currentThread().threadId();
        final long[] perRound = new long[5];
        for (int round = 0; round < perRound.length; round++) {
            final long before = mx.getThreadAllocatedBytes(id);
            for (int i = 0; i < 5_000; i++) {
                ctx.reset().tokens(prompt, 0, prompt.length).request().model("vl").cacheSalt("tenant")
                    .multiModal(images[i % 3], 30, 400).multiModal(images[(i + 1) % 3], 900, 64);
                p.prepare(ctx);
            }
            perRound[round] = mx.getThreadAllocatedBytes(id) - before;
        }
        AllocationFreeRoutingTest.assertSteadyStateAllocationFree(perRound, 5_000);
    }

    @Test
    void shouldRefuseABlockSizeOtherThanTheIndexs() {
        final MapPodIndex index = new MapPodIndex() {
            @Override
            public int blockSize() {
                return 64;
            }
        };
        final PodRegistry registry = PluginTestSupport.registry(2);
        assertThrows(IllegalArgumentException.class,
            () -> RoutingProfiles.cacheAware("ca", index, registry, hasher, null));
    }

    @Test
    void shouldKeyWithoutAllocatingOnceTheModelIsKnown() {
        final RouterKeysPreparer p = new RouterKeysPreparer("rk", hasher);
        final RoutingContext ctx = PluginTestSupport.context(PluginTestSupport.registry(1), null);
        final int[] prompt = TestKeys.tokens(4, 2048);
        final String[] models = {"a", "b", "c"};
        final com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean)
            ManagementFactory.getThreadMXBean();
        final long id = Thread.currentThread().threadId();
        final long[] perRound = new long[5];
        for (int round = 0; round < perRound.length; round++) {
            final long calibrate = mx.getThreadAllocatedBytes(id);
            final long overhead = mx.getThreadAllocatedBytes(id) - calibrate;
            final long before = mx.getThreadAllocatedBytes(id);
            for (int i = 0; i < 5_000; i++) {
                ctx.reset().tokens(prompt, 0, prompt.length).request().model(models[i % 3]);
                p.prepare(ctx);
            }
            perRound[round] = mx.getThreadAllocatedBytes(id) - before - overhead;
        }
        AllocationFreeRoutingTest.assertSteadyStateAllocationFree(perRound, 5_000);
    }
}
