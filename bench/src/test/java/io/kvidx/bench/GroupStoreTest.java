package io.kvidx.bench;

import io.kvidx.client.index.IndexDescriptor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GroupStoreTest {
    @ParameterizedTest
    @ValueSource(ints = {32, 30, 3})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldAnswerAsTheNaiveStoreWhateverGroupTheChainEndsIn(final int chainLength) {
        // 30 and 3 blocks end in a partial group, which only the block-by-block lookups answer.
        final Workload w = Workload.generate(24, chainLength, 6_000, 7L);
        try (NaiveStore naive = NaiveStore.load(w);
             KvidxStore kvidx = KvidxStore.load(w, 0)) {
            for (final GroupStore.Mode mode : new GroupStore.Mode[] {GroupStore.Mode.GROUPS,
                GroupStore.Mode.GROUPS_AND_LINES}) {
                try (GroupStore groups = GroupStore.build(mode, kvidx, w)) {
                    Verifier.check(w, naive, groups, 2_000);
                }
            }
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldTimeOnlyLoadsAndGroupLookupsInTheBoundMode() {
        final Workload w = Workload.generate(24, 32, 6_000, 7L);
        try (KvidxStore kvidx = KvidxStore.load(w, 0);
             GroupStore bound = GroupStore.build(GroupStore.Mode.BOUND, kvidx, w)) {
            long before = bound.sink();
            boolean moved = false;
            for (int i = 0; i < 100; i++) {
                bound.query(w.chain(i), w.chain(i).length);
                moved |= bound.sink() != before;
                before = bound.sink();
            }
            assertTrue(moved, "the loads feed the sink");
            assertThrows(UnsupportedOperationException.class, () -> bound.depthOf(0));
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldRefuseAGeneralCellAndDeleteItsTableOnClose() throws Exception {
        final Workload w = Workload.generate(24, 32, 2_000, 7L);
        try (KvidxStore wide = KvidxStore.load(w, 0, null, IndexDescriptor.MAX_PODS);
             KvidxStore direct = KvidxStore.load(w, 0)) {
            assertThrows(IllegalArgumentException.class, () -> GroupStore.build(GroupStore.Mode.GROUPS, wide, w));
            final Path table;
            try (GroupStore groups = GroupStore.build(GroupStore.Mode.GROUPS, direct, w)) {
                table = direct.dir().resolve("groups-group4");
                assertTrue(Files.exists(table), "table beside the index");
            }
            assertFalse(Files.exists(table), "deleted on close");
        }
    }
}
