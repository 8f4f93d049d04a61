package io.kvidx.client.index;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How a querying thread's recent searches choose its next search's loads (ADR 0023, decision 6): a fresh result loads
 * in bulk; searches that probe a handful of the 64 lines a bulk load brings in (the Mooncake trace's: 7–13 probes,
 * every holder at one depth) turn it narrow within about 14 searches; searches that probe many of them (workload B:
 * about 12 of a 32-block chain) keep it, or bring it back, in bulk.
 */
class PrefixResultLoadChoiceTest {
    @Test
    void shouldStartInBulk() {
        assertTrue(new PrefixResult().bulkPays());
    }

    @Test
    void shouldTurnNarrowAfterSearchesOfAHandfulOfProbes() {
        final PrefixResult result = new PrefixResult();
        int searches = 0;
        while (result.bulkPays()) {
            result.searched(10, 750); // the trace's 129–512-block bucket: 10 probes
            searches++;
            assertTrue(searches <= 20, "still bulk after " + searches + " narrow searches");
        }
        assertTrue(searches >= 8, "one search alone must not decide: " + searches);
    }

    @Test
    void shouldStayInBulkOnWorkloadBAndComeBackToIt() {
        final PrefixResult result = new PrefixResult();
        for (int i = 0; i < 100; i++) {
            result.searched(12, 32); // workload B: about 12 probes of a 32-block chain
            assertTrue(result.bulkPays(), "workload B's searches turned narrow after " + (i + 1));
        }
        for (int i = 0; i < 30; i++) {
            result.searched(7, 64);
        }
        assertFalse(result.bulkPays());
        result.searched(45, 750); // one wide search among narrow ones does not flip it back at once
        assertFalse(result.bulkPays());
        int searches = 1;
        while (!result.bulkPays()) {
            result.searched(45, 750); // ADR 0023's synthetic shape: 45 probes
            searches++;
            assertTrue(searches <= 12, "still narrow after " + searches + " wide searches");
        }
    }

    @Test
    void shouldCountAShortChainAgainstItsOwnLength() {
        final PrefixResult result = new PrefixResult();
        for (int i = 0; i < 50; i++) {
            result.searched(3, 4); // a 4-block chain probed 3 times: most of what its bulk load brings in
        }
        assertTrue(result.bulkPays());
    }
}
