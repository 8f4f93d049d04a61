package io.kvidx.routing;

import io.kvidx.routing.overlay.PickOverlay;
import io.kvidx.routing.plugins.BlockKeysPreparer;
import io.kvidx.routing.plugins.HashKeyPreparer;
import io.kvidx.routing.plugins.PrefixQueryPreparer;
import io.kvidx.routing.plugins.SessionKeyPreparer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PreparersTest {
    private final PodRegistry registry = PluginTestSupport.registry(4);

    @Test
    void shouldTurnTokensIntoBlockKeys() {
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final int[] prompt = TestKeys.tokens(1, 4 * 9 + 3);
        ctx.tokens(prompt, 0, prompt.length);
        new BlockKeysPreparer("k", TestKeys.KEYS, TestKeys.BLOCK).prepare(ctx);
        final BlockKeys keys = ctx.get(Slots.BLOCK_KEYS);
        assertEquals(9, keys.length(), "only full blocks are keyed");
        assertArrayEquals(TestKeys.chain(prompt), java.util.Arrays.copyOf(keys.keys(), keys.length()));
    }

    @Test
    void shouldGrowTheKeyBufferForLongPrompts() {
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final int[] prompt = TestKeys.tokens(2, 4 * 5000);
        ctx.tokens(prompt, 0, prompt.length);
        new BlockKeysPreparer("k", TestKeys.KEYS, TestKeys.BLOCK).prepare(ctx);
        assertEquals(5000, ctx.get(Slots.BLOCK_KEYS).length());
    }

    @Test
    void shouldHashTheSessionHeader() {
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final SessionKeyPreparer p = new SessionKeyPreparer("s", null);
        ctx.request().header("X-Session-Id", "alice");
        p.prepare(ctx);
        final long alice = ctx.get(Slots.SESSION_KEY).get();
        assertTrue(ctx.get(Slots.SESSION_KEY).isPresent());
        ctx.reset();
        ctx.request().header("x-session-id", "bob");
        p.prepare(ctx);
        assertNotEquals(alice, ctx.get(Slots.SESSION_KEY).get());
        ctx.reset();
        p.prepare(ctx);
        assertFalse(ctx.get(Slots.SESSION_KEY).isPresent());
    }

    @Test
    void shouldDeriveTheSameHashKeyForTheSamePromptStart() {
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final HashKeyPreparer p = new HashKeyPreparer("h", "x-user", HashKeyPreparer.Source.TOKENS, 16);
        final int[] a = TestKeys.tokens(1, 16, 2, 64);
        final int[] b = TestKeys.tokens(1, 16, 3, 64);
        ctx.tokens(a, 0, a.length);
        p.prepare(ctx);
        final long ka = ctx.get(Slots.HASH_KEY).get();
        ctx.reset().tokens(b, 0, b.length);
        p.prepare(ctx);
        assertEquals(ka, ctx.get(Slots.HASH_KEY).get());
        ctx.reset().tokens(b, 0, b.length).request().header("x-user", "u1");
        p.prepare(ctx);
        assertEquals(RoutingContext.hash("u1"), ctx.get(Slots.HASH_KEY).get(), "the header wins");
        final HashKeyPreparer byKeys = new HashKeyPreparer("hk", null, HashKeyPreparer.Source.KEYS, 2);
        ctx.reset().keys(TestKeys.keys(5, 8), 0, 8);
        byKeys.prepare(ctx);
        assertEquals(RoutingContext.mix(TestKeys.keys(5, 8)[1]), ctx.get(Slots.HASH_KEY).get());
    }

    @Test
    void shouldQueryDepthsFromTheIndexAndTheOverlay() {
        final MapPodIndex index = new MapPodIndex();
        for (int s = 0; s < 4; s++) {
            index.pod(s, "pod-" + s, "m");
        }
        final long[] chain = TestKeys.keys(7, 10);
        index.store(1, chain, 10).store(2, chain, 3);
        final PickOverlay overlay = new PickOverlay(256, 2_000, false);
        overlay.record(chain, 6, 2, System.nanoTime());
        overlay.record(chain, 2, 3, System.nanoTime());
        final RoutingContext ctx = PluginTestSupport.context(registry, index);
        ctx.keys(chain, 0, chain.length);
        new PrefixQueryPreparer("q", PrefixQueryPreparer.Mode.INDEX, null).prepare(ctx);
        final PodDepths d = ctx.get(Slots.PREFIX_DEPTHS);
        assertArrayEquals(new int[] {0, 10, 3, 0}, java.util.Arrays.copyOf(d.depths(), 4));
        assertEquals(10, d.chainLength());
        new PrefixQueryPreparer("q", PrefixQueryPreparer.Mode.INDEX_AND_OVERLAY, overlay).prepare(ctx);
        assertArrayEquals(new int[] {0, 10, 6, 2}, java.util.Arrays.copyOf(d.depths(), 4));
        new PrefixQueryPreparer("q", PrefixQueryPreparer.Mode.APPROXIMATE, overlay).prepare(ctx);
        assertArrayEquals(new int[] {0, 0, 6, 2}, java.util.Arrays.copyOf(d.depths(), 4));
    }
}
