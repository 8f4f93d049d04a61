package io.kvidx.daemon.ingest;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pod allow-lists: globs and exact ids, every refusal counted, one error log entry per refused pod id (bounded), the
 * cached verdict the same as the first.
 */
@Timeout(10)
class PodAllowListTest {
    @Test
    void shouldCountEveryRefusalAndLogEachPodIdOnce() {
        final IngestCounters counters = IngestCounters.local();
        final IngestErrors errors = new IngestErrors();
        final PodAllowList allow = new PodAllowList("Aeron", "aeron.pods", List.of("pod-a", "pod-b*"),
            counters.get(CounterType.PODS_NOT_ALLOWED), errors, CounterType.PODS_NOT_ALLOWED.typeId() * 64);
        assertFalse(allow.allowsAll());
        for (int i = 0; i < 3; i++) {
            assertTrue(allow.allows(bytes("xxpod-axx"), 2, 5));
            assertTrue(allow.allows(bytes("pod-b7"), 0, 6));
            assertFalse(allow.allows(bytes("evil"), 0, 4));
            assertFalse(allow.allows(bytes("pod-c"), 0, 5));
        }
        assertEquals(6, counters.value(CounterType.PODS_NOT_ALLOWED));
        assertEquals(2, errors.distinctCount());
        assertTrue(errors.dump().lines().anyMatch(l -> l.startsWith("3x ")
            && l.endsWith("Aeron: pod evil is not in aeron.pods; its events are dropped")), errors.dump());
        // Many distinct strangers: the log stays bounded.
        for (int i = 0; i < PodAllowList.CACHED_IDS_MAX * 2; i++) {
            assertFalse(allow.allows(bytes("stranger-" + i), 0, ("stranger-" + i).length()));
        }
        assertEquals(PodAllowList.LOGGED_IDS_MAX + 1, errors.distinctCount());
        assertTrue(allow.allows(bytes("pod-a"), 0, 5), "verdicts survive the cache being emptied");
        counters.close();
    }

    @Test
    void shouldAllowEveryPodWithoutPatternsAndRefuseEmptyOnes() {
        final IngestCounters counters = IngestCounters.local();
        final PodAllowList all = new PodAllowList("ZeroMQ", "zmqTopicPods", List.of(),
            counters.get(CounterType.PODS_NOT_ALLOWED), new IngestErrors(), 0);
        assertTrue(all.allowsAll());
        assertTrue(all.allows(bytes("anything"), 0, 8));
        assertEquals(0, counters.value(CounterType.PODS_NOT_ALLOWED));
        assertThrows(IllegalArgumentException.class, () -> new PodAllowList("ZeroMQ", "zmqTopicPods", List.of(""),
            counters.get(CounterType.PODS_NOT_ALLOWED), new IngestErrors(), 0));
        counters.close();
    }

    private static byte[] bytes(final String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
