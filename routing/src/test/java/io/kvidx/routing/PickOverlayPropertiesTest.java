package io.kvidx.routing;

import io.kvidx.routing.overlay.PickOverlay;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The overlay against a plain reference model (key to pod set and expiry) on random record/query sequences.
 */
class PickOverlayPropertiesTest {
    private static final long TTL_MS = 100;
    private static final int CHAIN = 24;

    /** One step: record (prompt, prefix, pod) or query (prompt, prefix, pod), then let time pass. */
    record Op(boolean record, int prompt, int length, int slot, int advanceMs) {
    }

    @Provide
    Arbitrary<List<Op>> ops() {
        final Arbitrary<Op> op = Combinators.combine(Arbitraries.of(true, false), Arbitraries.integers().between(0, 5),
            Arbitraries.integers().between(0, CHAIN), Arbitraries.integers().between(0, 255),
            Arbitraries.integers().between(0, 40)).as(Op::new);
        return op.list().ofMinSize(1).ofMaxSize(200);
    }

    /** Prompts 0..5 share their first (prompt * 4) blocks with prompt 0. */
    private static long[] chain(final int prompt) {
        final long[] base = TestKeys.keys(1, CHAIN);
        final long[] own = TestKeys.keys(100 + prompt, CHAIN);
        System.arraycopy(base, 0, own, 0, prompt * 4);
        return own;
    }

    private static final class Model {
        final Map<Long, BitSet> pods = new HashMap<>();
        final Map<Long, Long> expiry = new HashMap<>();

        void record(final long[] keys, final int n, final int slot, final long now) {
            for (int i = 0; i < n; i++) {
                final Long exp = expiry.get(keys[i]);
                if (exp == null || exp <= now) {
                    pods.put(keys[i], new BitSet());
                }
                pods.get(keys[i]).set(slot);
                expiry.put(keys[i], now + TimeUnit.MILLISECONDS.toNanos(TTL_MS));
            }
        }

        int depth(final long[] keys, final int n, final int slot, final long now) {
            int d = 0;
            while (d < n) {
                final Long exp = expiry.get(keys[d]);
                if (exp == null || exp <= now || !pods.get(keys[d]).get(slot)) {
                    break;
                }
                d++;
            }
            return d;
        }
    }

    @Property(tries = 200)
    void exactOverlayAgreesWithTheModel(@ForAll("ops") final List<Op> ops) {
        final PickOverlay overlay = new PickOverlay(1 << 14, TTL_MS, false);
        final Model model = new Model();
        long now = 1_000_000_000L;
        for (final Op op : ops) {
            final long[] keys = chain(op.prompt());
            if (op.record()) {
                overlay.record(keys, op.length(), op.slot(), now);
                model.record(keys, op.length(), op.slot(), now);
            } else {
                assertEquals(model.depth(keys, op.length(), op.slot(), now),
                    overlay.depthOf(keys, op.length(), op.slot(), now), () -> "after " + ops);
                final int[] depths = new int[256];
                final long[] cand = new long[4];
                cand[op.slot() >>> 6] = 1L << op.slot();
                overlay.deepen(keys, op.length(), cand, depths, now);
                assertEquals(model.depth(keys, op.length(), op.slot(), now), depths[op.slot()]);
            }
            now += TimeUnit.MILLISECONDS.toNanos(op.advanceMs());
        }
        assertEquals(0, overlay.evictions());
    }

    @Property(tries = 200)
    void sparseOverlayNeverOverstatesAndIsExactForARepeatedPrompt(@ForAll("ops") final List<Op> ops) {
        final PickOverlay sparse = new PickOverlay(1 << 14, TTL_MS, true);
        final Model model = new Model();
        long now = 1_000_000_000L;
        for (final Op op : ops) {
            final long[] keys = chain(op.prompt());
            if (op.record()) {
                sparse.record(keys, op.length(), op.slot(), now);
                model.record(keys, op.length(), op.slot(), now);
                assertEquals(op.length(), sparse.depthOf(keys, op.length(), op.slot(), now));
            } else {
                final int exact = model.depth(keys, op.length(), op.slot(), now);
                final int got = sparse.depthOf(keys, op.length(), op.slot(), now);
                assertTrue(got <= exact, () -> "sparse " + got + " > exact " + exact);
            }
            now += TimeUnit.MILLISECONDS.toNanos(op.advanceMs());
        }
    }
}
