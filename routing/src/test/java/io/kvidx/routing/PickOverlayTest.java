package io.kvidx.routing;

import io.kvidx.routing.overlay.PickOverlay;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PickOverlayTest {
    private static final long T0 = 1_000_000_000L;

    @Test
    void shouldRecordAndAnswerDepths() {
        final PickOverlay overlay = new PickOverlay(1024, 2_000, false);
        final long[] chain = TestKeys.keys(1, 12);
        overlay.record(chain, 12, 3, T0);
        overlay.record(chain, 5, 9, T0);
        assertEquals(12, overlay.depthOf(chain, 12, 3, T0));
        assertEquals(5, overlay.depthOf(chain, 12, 9, T0));
        assertEquals(0, overlay.depthOf(chain, 12, 4, T0));
        final long[] other = TestKeys.keys(2, 12);
        System.arraycopy(chain, 0, other, 0, 3);
        assertEquals(3, overlay.depthOf(other, 12, 3, T0), "shared prefix only");
    }

    @Test
    void shouldDeepenOnlyWhereTheOverlayKnowsMore() {
        final PickOverlay overlay = new PickOverlay(1024, 2_000, false);
        final long[] chain = TestKeys.keys(3, 10);
        overlay.record(chain, 6, 1, T0);
        overlay.record(chain, 2, 200, T0);
        final int[] depths = new int[256];
        depths[0] = 4;
        depths[1] = 8;
        final long[] cand = new long[4];
        cand[0] = 0b11;
        cand[3] = 1L << (200 - 192);
        overlay.deepen(chain, 10, cand, depths, T0);
        assertEquals(4, depths[0]);
        assertEquals(8, depths[1], "the index already knew more");
        assertEquals(2, depths[200]);
        overlay.record(chain, 10, 1, T0);
        overlay.deepen(chain, 10, cand, depths, T0);
        assertEquals(10, depths[1]);
    }

    @Test
    void shouldForgetPicksAfterTheTtl() {
        final PickOverlay overlay = new PickOverlay(1024, 2_000, false);
        final long[] chain = TestKeys.keys(4, 8);
        overlay.record(chain, 8, 7, T0);
        assertEquals(8, overlay.depthOf(chain, 8, 7, T0 + TimeUnit.MILLISECONDS.toNanos(1_999)));
        assertEquals(0, overlay.depthOf(chain, 8, 7, T0 + TimeUnit.MILLISECONDS.toNanos(2_001)));
    }

    @Test
    void shouldStayBoundedAndEvictTheOldest() {
        final PickOverlay overlay = new PickOverlay(64, 60_000, false);
        for (int i = 0; i < 1000; i++) {
            overlay.record(TestKeys.keys(100 + i, 4), 4, i % 256, T0 + i);
        }
        assertEquals(64, overlay.capacity());
        assertTrue(overlay.evictions() > 0);
        final long[] last = TestKeys.keys(1099, 4);
        assertEquals(4, overlay.depthOf(last, 4, 999 % 256, T0 + 1000), "the newest survive");
    }

    @Test
    void shouldForgetAPod() {
        final PickOverlay overlay = new PickOverlay(256, 60_000, false);
        final long[] chain = TestKeys.keys(5, 4);
        overlay.record(chain, 4, 1, T0);
        overlay.record(chain, 4, 2, T0);
        overlay.forgetPod(1);
        assertEquals(0, overlay.depthOf(chain, 4, 1, T0));
        assertEquals(4, overlay.depthOf(chain, 4, 2, T0));
    }

    @Test
    void shouldRecordFewBlocksWhenSparse() {
        final PickOverlay overlay = new PickOverlay(1024, 2_000);
        final long[] chain = TestKeys.keys(6, 32);
        overlay.record(chain, 32, 5, T0);
        assertEquals(32, overlay.depthOf(chain, 32, 5, T0), "a repeated prompt is exact");
        final long[] partly = TestKeys.keys(7, 32);
        System.arraycopy(chain, 0, partly, 0, 20);
        assertEquals(16, overlay.depthOf(partly, 32, 5, T0), "rounded down to the last checked block (15)");
        final int[] depths = new int[256];
        final long[] cand = {1L << 5, 0, 0, 0};
        overlay.deepen(partly, 32, cand, depths, T0);
        assertEquals(16, depths[5]);
        overlay.deepen(chain, 32, cand, depths, T0);
        assertEquals(32, depths[5]);
        final long[] one = TestKeys.keys(8, 1);
        overlay.record(one, 1, 9, T0);
        assertEquals(1, overlay.depthOf(one, 1, 9, T0));
    }
}
