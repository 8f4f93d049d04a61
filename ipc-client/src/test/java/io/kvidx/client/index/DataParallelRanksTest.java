package io.kvidx.client.index;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class DataParallelRanksTest {
    @Test
    void shouldNameRanksAndReadThemBack() {
        assertEquals("pod-a", DataParallelRanks.podId("pod-a", 0));
        assertEquals("pod-a#2", DataParallelRanks.podId("pod-a", 2));
        assertEquals(2, DataParallelRanks.rankOf("pod-a#2"));
        assertEquals(1024, DataParallelRanks.rankOf("p#1024"));
        assertEquals("pod-a", DataParallelRanks.basePodId("pod-a#2"));
        assertEquals("a#b", DataParallelRanks.basePodId("a#b#7"));
    }

    @Test
    void shouldTreatOtherHashSuffixesAsPlainPods() {
        for (final String id : new String[] {"pod", "pod#", "#3", "pod#0", "pod#03", "pod#1025", "pod#x", "pod#12345",
            "pod#-1"}) {
            assertEquals(0, DataParallelRanks.rankOf(id), id);
            assertEquals(id, DataParallelRanks.basePodId(id), id);
        }
    }

    @Test
    void shouldRejectAbsurdRanksAndIdsTooLongForThePodTable() {
        assertThrows(IllegalArgumentException.class, () -> DataParallelRanks.podId("p", -1));
        assertThrows(IllegalArgumentException.class, () -> DataParallelRanks.podId("p", 1025));
        assertEquals(112, DataParallelRanks.podId("x".repeat(110), 2).length());
        assertThrows(IllegalArgumentException.class, () -> DataParallelRanks.podId("x".repeat(111), 2));
        // 37 three-byte characters: 111 UTF-8 bytes, 37 chars.
        assertThrows(IllegalArgumentException.class, () -> DataParallelRanks.podId("\u20ac".repeat(37), 1));
    }
}
