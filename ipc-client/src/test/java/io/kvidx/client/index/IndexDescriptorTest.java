package io.kvidx.client.index;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pins every offset of the index layout: changing one is a layout change that needs a new version.
 */
class IndexDescriptorTest {
    @Test
    void shouldPinHeaderOffsets() {
        assertEquals(0x3158_4958_4449_564BL, IndexDescriptor.MAGIC);
        assertEquals(0, IndexDescriptor.MAGIC_OFFSET);
        assertEquals(8, IndexDescriptor.LAYOUT_VERSION_OFFSET);
        assertEquals(12, IndexDescriptor.HEADER_LENGTH_OFFSET);
        assertEquals(16, IndexDescriptor.SHARD_COUNT_OFFSET);
        assertEquals(20, IndexDescriptor.SLOTS_PER_SHARD_OFFSET);
        assertEquals(24, IndexDescriptor.MAX_PODS_OFFSET);
        assertEquals(28, IndexDescriptor.MAX_CHAIN_OFFSET);
        assertEquals(32, IndexDescriptor.BLOCK_SIZE_OFFSET);
        assertEquals(36, IndexDescriptor.KEY_SCHEME_OFFSET);
        assertEquals(40, IndexDescriptor.EPOCH_OFFSET);
        assertEquals(48, IndexDescriptor.WRITER_PID_OFFSET);
        assertEquals(56, IndexDescriptor.FILE_LENGTH_OFFSET);
        assertEquals(64, IndexDescriptor.HEARTBEAT_OFFSET);
        assertEquals(128, IndexDescriptor.ALIVE_BITMAP_OFFSET);
        assertEquals(160, IndexDescriptor.POD_TABLE_VERSION_OFFSET);
        assertEquals(256, IndexDescriptor.HEADER_LENGTH);
        assertEquals(256, IndexDescriptor.POD_TABLE_OFFSET);
    }

    @Test
    void shouldPinPodEntryOffsets() {
        assertEquals(256, IndexDescriptor.POD_ENTRY_LENGTH);
        assertEquals(0, IndexDescriptor.POD_SEQ_OFFSET);
        assertEquals(8, IndexDescriptor.POD_GENERATION_OFFSET);
        assertEquals(12, IndexDescriptor.POD_STATE_OFFSET);
        assertEquals(16, IndexDescriptor.POD_ID_LENGTH_OFFSET);
        assertEquals(20, IndexDescriptor.POD_MODEL_LENGTH_OFFSET);
        assertEquals(24, IndexDescriptor.POD_ID_OFFSET);
        assertEquals(112, IndexDescriptor.POD_ID_MAX_LENGTH);
        assertEquals(136, IndexDescriptor.POD_MODEL_OFFSET);
        // 3.2: the model field's last 4 bytes are the flags; 3.0 and 3.1 files have a 120-byte model there.
        assertEquals(116, IndexDescriptor.POD_MODEL_MAX_LENGTH);
        assertEquals(120, IndexDescriptor.POD_MODEL_MAX_LENGTH_BEFORE_FLAGS);
        assertEquals(252, IndexDescriptor.POD_FLAGS_OFFSET);
        assertEquals(1, IndexDescriptor.POD_FLAG_SUSPECT);
        assertEquals(0x0003_0200, IndexDescriptor.FLAGS_MIN_VERSION);
        assertEquals(IndexDescriptor.POD_FLAGS_OFFSET,
            IndexDescriptor.POD_MODEL_OFFSET + IndexDescriptor.POD_MODEL_MAX_LENGTH);
        assertEquals(IndexDescriptor.POD_ENTRY_LENGTH, IndexDescriptor.POD_FLAGS_OFFSET + 4);
        assertEquals(IndexDescriptor.POD_ENTRY_LENGTH,
            IndexDescriptor.POD_MODEL_OFFSET + IndexDescriptor.POD_MODEL_MAX_LENGTH_BEFORE_FLAGS);
        assertEquals(256 + 5 * 256, IndexDescriptor.podEntryOffset(5));
    }

    @Test
    void shouldPinShardAndEntryOffsets() {
        assertEquals(128, IndexDescriptor.SHARD_HEADER_LENGTH);
        assertEquals(0, IndexDescriptor.SHARD_VERSION_OFFSET);
        assertEquals(8, IndexDescriptor.SHARD_ENTRY_COUNT_OFFSET);
        assertEquals(12, IndexDescriptor.SHARD_OVERFLOW_IN_USE_OFFSET);
        assertEquals(16, IndexDescriptor.SHARD_EVICTIONS_OFFSET);
        assertEquals(24, IndexDescriptor.SHARD_EVICTIONS_INNER_OFFSET);
        assertEquals(32, IndexDescriptor.SHARD_HOLDERS_REFUSED_OFFSET);
        assertEquals(40, IndexDescriptor.SHARD_OVERFLOW_DEMOTIONS_OFFSET);
        assertEquals(16, IndexDescriptor.ENTRY_LENGTH);
        assertEquals(1 << IndexDescriptor.ENTRY_LENGTH_SHIFT, IndexDescriptor.ENTRY_LENGTH);
        assertEquals(0, IndexDescriptor.ENTRY_KEY_OFFSET);
        assertEquals(8, IndexDescriptor.ENTRY_PODS_OFFSET);
        assertEquals(32, IndexDescriptor.OVERFLOW_LENGTH);
        assertEquals(8, IndexDescriptor.SLOTS_PER_OVERFLOW);
        assertEquals(7, IndexDescriptor.PODS_INLINE_MAX);
    }

    @Test
    void shouldComputeRegionsOfDefaultGeometry() {
        // 256 pods x 256 B pod table after the 256 B header; 256 shard headers of 128 B; tables page aligned.
        assertEquals(256 + 65_536, IndexDescriptor.shardHeadersOffset(256));
        assertEquals(102_400, IndexDescriptor.tablesOffset(256, 256)); // 98,560 rounded up to 4 KiB
        // 32 MiB of 16-byte entries, then 256 x 1024 overflow bitmaps of 32 bytes (8 MiB).
        assertEquals(102_400 + 256L * 8192 * 16, IndexDescriptor.overflowOffset(256, 256, 8192));
        assertEquals(1024, IndexDescriptor.overflowPerShard(256, 8192));
        assertEquals(102_400 + 256L * 8192 * 16 + 256L * 1024 * 32, IndexDescriptor.fileLength(256, 256, 8192));
        assertEquals(0, IndexDescriptor.tablesOffset(1, 2) % 4096);
    }

    @Test
    void shouldDropTheOverflowAreaInADirectCell() {
        // At most 64 pods: pods words are 64-bit bitmaps, so the file ends after the tables.
        assertEquals(64, IndexDescriptor.DIRECT_MAX_PODS);
        assertTrue(IndexDescriptor.isDirect(64));
        assertFalse(IndexDescriptor.isDirect(65));
        assertEquals(0, IndexDescriptor.overflowPerShard(64, 8192));
        assertEquals(1024, IndexDescriptor.overflowPerShard(65, 8192));
        final long tables = IndexDescriptor.tablesOffset(64, 256); // 256 + 64 x 256 + 256 x 128 = 49,408 -> 53,248
        assertEquals(53_248, tables);
        assertEquals(tables + 256L * 8192 * 16, IndexDescriptor.fileLength(64, 256, 8192));
    }

    @Test
    void shouldDecodeInlinePodsWords() {
        // count 3 in byte 7; slots 5, 200, 64 in bytes 0..2
        final long word = (3L << 56) | (64L << 16) | (200L << 8) | 5L;
        assertEquals(3, IndexDescriptor.inlineCount(word));
        assertEquals(5, IndexDescriptor.inlineSlot(word, 0));
        assertEquals(200, IndexDescriptor.inlineSlot(word, 1));
        assertEquals(64, IndexDescriptor.inlineSlot(word, 2));
        assertEquals(0, IndexDescriptor.inlineCount(0L));
    }

    @Test
    void shouldPackSemanticVersion() {
        assertEquals(0x0003_0200, IndexDescriptor.LAYOUT_VERSION);
        assertEquals(0x0002_0304, IndexDescriptor.composeVersion(2, 3, 4));
        assertEquals(2, IndexDescriptor.majorVersion(0x0002_0304));
        assertEquals("2.3.4", IndexDescriptor.versionString(0x0002_0304));
    }

    @Test
    void shouldAliasKeyZeroAndSpreadByFibonacciHashing() {
        assertEquals(IndexDescriptor.ZERO_KEY_ALIAS, IndexDescriptor.storedKey(0));
        assertEquals(42, IndexDescriptor.storedKey(42));
        assertEquals(0x9E37_79B9_7F4A_7C15L, IndexDescriptor.spread(1));
    }

    @Test
    void shouldPlaceHomesAtTheFirstEntryOfTheirCacheLine() {
        // 256 shards (8 bits), 8192 slots (13 bits). Key 1 spreads to 0x9E3779B97F4A7C15: shard 0x9E, hashed slot
        // 0x06EF (the next 13 bits), home slot 0x06EC: the line's first entry.
        final long h = IndexDescriptor.spread(1);
        assertEquals(0x06EC, IndexDescriptor.homeSlot(h, 8, 13));
        assertEquals(0x9EL * 8192 + 0x06EC, IndexDescriptor.homeIndex(h, 8, 13));
        for (long key = 1; key < 10_000; key++) {
            final long spread = IndexDescriptor.spread(key);
            final int slot = IndexDescriptor.homeSlot(spread, 8, 13);
            assertEquals(0, slot & 3, "home slot of key " + key + " is not the first entry of its line");
            assertEquals((spread >>> 56) * 8192 + slot, IndexDescriptor.homeIndex(spread, 8, 13));
        }
    }

    @Test
    void shouldRejectImpossibleGeometry() {
        assertNull(IndexDescriptor.validateGeometry(256, 8192, 256, 8192));
        assertNotNull(IndexDescriptor.validateGeometry(1, 8192, 256, 8192));
        assertNotNull(IndexDescriptor.validateGeometry(100, 8192, 256, 8192));
        assertNotNull(IndexDescriptor.validateGeometry(256, 8, 256, 8192));
        assertNotNull(IndexDescriptor.validateGeometry(256, 8192, 257, 8192));
        assertNotNull(IndexDescriptor.validateGeometry(256, 8192, 0, 8192));
        assertNotNull(IndexDescriptor.validateGeometry(256, 8192, 256, 0));
    }
}
