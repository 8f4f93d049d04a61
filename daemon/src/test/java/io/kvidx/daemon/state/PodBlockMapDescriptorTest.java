package io.kvidx.daemon.state;

import io.kvidx.ffm.MappedRegion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every offset of a pod's block map file is pinned: a file left by a previous daemon is re-used only when the layout
 * did not move.
 */
@Timeout(30)
class PodBlockMapDescriptorTest {
    @TempDir
    Path dir;

    @Test
    void shouldPinEveryOffset() {
        assertEquals(0x3242_5058_4449_564BL, PodBlockMapDescriptor.MAGIC);
        assertEquals(0x3142_5058_4449_564BL, PodBlockMapDescriptor.MAGIC_V1);
        assertEquals(1L << 62, PodBlockMapDescriptor.MEDIA_TIERED);
        assertEquals(256, PodBlockMapDescriptor.HEADER_LENGTH);
        assertEquals(32, PodBlockMapDescriptor.ENTRY_LENGTH);
        assertEquals(8, PodBlockMapDescriptor.SLOTS_OFFSET);
        assertEquals(12, PodBlockMapDescriptor.MAX_BLOCKS_OFFSET);
        assertEquals(16, PodBlockMapDescriptor.GENERATION_OFFSET);
        assertEquals(20, PodBlockMapDescriptor.POD_ID_LENGTH_OFFSET);
        assertEquals(24, PodBlockMapDescriptor.POD_ID_OFFSET);
        assertEquals(112, PodBlockMapDescriptor.POD_ID_MAX);
        assertEquals(136, PodBlockMapDescriptor.COUNT_OFFSET);
        assertEquals(140, PodBlockMapDescriptor.MAIN_GROUP_OFFSET);
        assertEquals(144, PodBlockMapDescriptor.CLOCK_OFFSET);
        assertEquals(152, PodBlockMapDescriptor.HAND_OFFSET);
        assertEquals(0, PodBlockMapDescriptor.ENTRY_HASH_OFFSET);
        assertEquals(8, PodBlockMapDescriptor.ENTRY_KEY_OFFSET);
        assertEquals(16, PodBlockMapDescriptor.ENTRY_STAMP_OFFSET);
        assertEquals(24, PodBlockMapDescriptor.ENTRY_MEDIA_OFFSET);
        assertEquals(256 + 3 * 32, PodBlockMapDescriptor.entry(3));
        assertEquals(256 + 4096L * 32, PodBlockMapDescriptor.length(4096));
    }

    @Test
    void shouldReuseAFileOnlyForItsPodGenerationAndSize() throws Exception {
        final Path file = dir.resolve("p.blocks");
        final byte[] id = "pod-a".getBytes(StandardCharsets.UTF_8);
        try (MappedRegion region = PodBlockMapDescriptor.create(file, 64, 40, 3, id, 9)) {
            final MemorySegment m = region.segment();
            assertEquals(256 + 64L * 32, Files.size(file));
            assertEquals(PodBlockMapDescriptor.MAGIC, m.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(9, m.get(ValueLayout.JAVA_LONG, 144), "the store clock carried over");
            assertArrayEquals(id, PodBlockMapDescriptor.podId(m));
            assertTrue(PodBlockMapDescriptor.matches(m, 64, 40, 3, id));
            assertFalse(PodBlockMapDescriptor.matches(m, 128, 40, 3, id), "another size");
            assertFalse(PodBlockMapDescriptor.matches(m, 64, 41, 3, id), "another bound");
            assertFalse(PodBlockMapDescriptor.matches(m, 64, 40, 4, id), "another generation of the slot");
            assertFalse(PodBlockMapDescriptor.matches(m, 64, 40, 3, "pod-b".getBytes(StandardCharsets.UTF_8)));
            m.set(ValueLayout.JAVA_LONG, 0, 0);
            assertFalse(PodBlockMapDescriptor.matches(m, 64, 40, 3, id), "no magic: not a whole file");
        }
    }
}
