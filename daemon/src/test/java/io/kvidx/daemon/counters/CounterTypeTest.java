package io.kvidx.daemon.counters;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CounterTypeTest {
    @Test
    void shouldHaveUniqueTypeIdsAndLabelsInAeronsUserRange() {
        final Set<Integer> ids = new HashSet<>();
        final Set<String> labels = new HashSet<>();
        for (final CounterType type : CounterType.values()) {
            assertTrue(ids.add(type.typeId()), "duplicate type id " + type.typeId() + " (" + type + ")");
            assertTrue(labels.add(type.label()), "duplicate label " + type.label());
            assertTrue(type.typeId() >= 1000, "type ids below 1000 belong to Aeron: " + type);
        }
    }

    @Test
    void shouldRegisterEveryCounterLocally() {
        try (IngestCounters counters = IngestCounters.local()) {
            counters.get(CounterType.BLOCKS_STORED).getAndAdd(3);
            final int[] seen = {0};
            counters.reader().forEach((id, typeId, key, label) -> seen[0]++);
            assertEquals(CounterType.values().length, seen[0]);
            assertEquals(3, counters.value(CounterType.BLOCKS_STORED));
            assertTrue(counters.describe().contains("kvidx blocks stored: 3"));
        }
    }

    @Test
    void shouldLogEachProblemOncePerPod() {
        final IngestErrors errors = new IngestErrors();
        assertTrue(errors.report(1, 7, () -> "first"));
        for (int i = 0; i < 100; i++) {
            errors.report(1, 7, () -> "first");
        }
        assertTrue(errors.report(1, 8, () -> "other pod"));
        assertTrue(errors.report(2, 7, () -> "other kind"));
        assertEquals(3, errors.distinctCount(), errors.dump());
        errors.forget(1, 7);
        assertTrue(errors.report(1, 7, () -> "again"));
    }
}
