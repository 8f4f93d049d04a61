package io.kvidx.client.index;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PodSetTest {
    @Test
    void shouldAddRemoveAndCountAcrossWords() {
        final PodSet set = new PodSet().add(0).add(63).add(64).add(255);
        assertEquals(4, set.size());
        assertTrue(set.contains(255));
        assertEquals(1L | (1L << 63), set.word(0));
        assertEquals(1L, set.word(1));
        assertEquals(1L << 63, set.word(3));
        set.remove(63);
        assertFalse(set.contains(63));
        assertEquals(256, PodSet.all().size());
        assertEquals(0, set.clear().size());
    }

    @Test
    void shouldRejectSlotsOutsideTheCell() {
        assertThrows(IllegalArgumentException.class, () -> new PodSet().add(256));
        assertThrows(IllegalArgumentException.class, () -> new PodSet().contains(-1));
    }
}
