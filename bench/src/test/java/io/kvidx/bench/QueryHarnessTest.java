package io.kvidx.bench;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class QueryHarnessTest {
    private static final Workload WORKLOAD = Workload.generate(8, 4, 4_000, 42);

    @Test
    void shouldCycleThroughTheFirstChainsOfTheQueryOrderOnly() {
        final RecordingStore store = new RecordingStore();
        final QueryHarness harness = QueryHarness.cycling(WORKLOAD, 4);
        final Histogram h = QueryHarness.newHistogram();
        int cursor = harness.warmup(store, 0, 20);
        cursor = harness.measure(store, cursor, 20, h, new long[1]);

        final Set<String> expected = new HashSet<>();
        final int[] order = WORKLOAD.queryOrder();
        for (int i = 0; i < 4; i++) {
            expected.add(Arrays.toString(WORKLOAD.chain(order[i])));
        }
        assertEquals(expected, store.seen, "the cycling harness queries exactly the first four chains");
        assertTrue(h.getTotalCount() > 4, "timed " + h.getTotalCount());
        assertTrue(cursor >= 0 && cursor < 4, "cursor " + cursor);
    }

    @Test
    void shouldVisitMoreChainsWithoutCycling() {
        final RecordingStore store = new RecordingStore();
        new QueryHarness(WORKLOAD).measure(store, 0, 20, QueryHarness.newHistogram(), new long[1]);
        assertTrue(store.seen.size() > 4, "the full harness goes on through the query order: " + store.seen.size());
    }

    @Test
    void shouldRejectAChainCountThatIsNotAPowerOfTwoInRange() {
        for (final int chains : new int[] {0, 3, -4, Integer.highestOneBit(WORKLOAD.queryOrder().length) << 1}) {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> QueryHarness.cycling(WORKLOAD, chains));
            assertTrue(e.getMessage().contains("power of two"), e.getMessage());
        }
    }

    /** Records every chain it is asked about. */
    private static final class RecordingStore implements QueryStore {
        final Set<String> seen = new HashSet<>();

        @Override
        public String name() {
            return "recording";
        }

        @Override
        public int query(final long[] keys, final int length) {
            seen.add(Arrays.toString(Arrays.copyOf(keys, length)));
            return 0;
        }

        @Override
        public int depthOf(final int pod) {
            return 0;
        }

        @Override
        public long footprintBytes() {
            return -1;
        }

        @Override
        public void close() {
        }
    }
}
