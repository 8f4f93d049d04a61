package io.kvidx.daemon.ingest.vllm;

import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.event.BlockEventListener;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class VllmEventDecoderTest {
    private final VllmEventDecoder decoder = new VllmEventDecoder();

    static Stream<Arguments> shapesAndWidths() {
        return Stream.of(VllmPayloads.Shape.values()).flatMap(s -> Stream.of(VllmPayloads.HashWidth.values())
            .map(w -> Arguments.of(s, w)));
    }

    private RecordingListener decode(final byte[] payload) {
        final RecordingListener l = new RecordingListener();
        decoder.decode(new UnsafeBuffer(payload), 0, payload.length, l);
        return l;
    }

    @ParameterizedTest
    @MethodSource("shapesAndWidths")
    void shouldDecodeRealCaptureInEveryShapeAndHashWidth(final VllmPayloads.Shape shape,
        final VllmPayloads.HashWidth width) {
        final Capture c = Capture.load("kv_event_lora.json");
        final byte[] payload = new VllmPayloads(shape, width)
            .stored(c.blockHashes(), null, c.tokenIds(), c.blockSize(), "Alice", c.medium())
            .removed(Arrays.copyOfRange(c.blockHashes(), 20, 25), "GPU")
            .cleared()
            .batch(3);
        final RecordingListener l = decode(payload);
        assertEquals(3, l.events.size());
        final RecordingListener.Seen stored = l.events.get(0);
        assertEquals(BlockEvent.TYPE_BLOCK_STORED, stored.type());
        assertEquals(BlockEvent.PROBLEM_NONE, stored.problem());
        assertArrayEquals(c.blockHashes(), stored.hashes());
        assertEquals(Long.parseUnsignedLong("9643097150530800701"), stored.hashes()[0]);
        assertArrayEquals(c.tokenIds(), stored.tokens());
        assertEquals(16, stored.blockSize());
        assertFalse(stored.hasParent());
        assertEquals(BlockEvent.MEDIUM_GPU, stored.medium());
        assertEquals("Alice", stored.loraName());
        assertEquals(BlockEvent.TYPE_BLOCK_REMOVED, l.events.get(1).type());
        assertArrayEquals(Arrays.copyOfRange(c.blockHashes(), 20, 25), l.events.get(1).hashes());
        assertEquals(BlockEvent.TYPE_ALL_BLOCKS_CLEARED, l.events.get(2).type());
        assertEquals(3, l.dpRank);
        assertEquals(1_763_800_000.25, l.ts);
    }

    @Test
    void shouldReadUnsignedHashesAboveTwoToThe63() {
        final Capture c = Capture.load("kv_event_base.json");
        final RecordingListener l = decode(new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
            .stored(c.blockHashes(), Long.parseUnsignedLong("17705339885301241772"), c.tokenIds(), 16, null, null)
            .batch(null));
        assertEquals("17705339885301241772", Long.toUnsignedString(l.events.get(0).hashes()[0]));
        assertTrue(l.events.get(0).hasParent());
        assertEquals("17705339885301241772", Long.toUnsignedString(l.events.get(0).parent()));
        assertEquals(-1, l.dpRank);
        assertEquals(BlockEvent.MEDIUM_DEFAULT, l.events.get(0).medium());
    }

    @Test
    void shouldDecodeMapShapedBatchWithoutDpRank() {
        final RecordingListener l = decode(new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .removed(new long[] {1, 2, -3}, null).mapBatch());
        assertEquals(1, l.events.size());
        assertArrayEquals(new long[] {1, 2, -3}, l.events.get(0).hashes());
        assertEquals(-1, l.dpRank);
        assertEquals(1.5, l.ts);
    }

    @Test
    void shouldClassifyKvCacheGroupKindsAndDropAKindOfTheWrongType() throws Exception {
        // Map events: full_attention, mla_attention, sliding_window, mamba, a kind that is not a string; then a
        // legacy array event with group_idx and kv_cache_spec_kind at positions 9 and 10, and a BlockRemoved with
        // group_idx at position 3.
        final org.msgpack.core.MessageBufferPacker p = org.msgpack.core.MessagePack.newDefaultBufferPacker();
        p.packArrayHeader(3).packDouble(1.0).packArrayHeader(7);
        final Object[] kinds = {"full_attention", "mla_attention", "sliding_window", "mamba", 5};
        for (int i = 0; i < kinds.length; i++) {
            p.packMapHeader(6).packString("type").packString("BlockStored");
            p.packString("block_hashes").packArrayHeader(1).packLong(i + 1);
            p.packString("token_ids").packArrayHeader(1).packInt(7);
            p.packString("block_size").packInt(1);
            p.packString("group_idx").packInt(i);
            p.packString("kv_cache_spec_kind");
            if (kinds[i] instanceof String k) {
                p.packString(k);
            } else {
                p.packInt((Integer) kinds[i]);
            }
        }
        p.packArrayHeader(11).packString("BlockStored").packArrayHeader(1).packLong(9).packNil()
            .packArrayHeader(1).packInt(7).packInt(1).packNil().packString("GPU").packNil().packNil()
            .packInt(3).packString("sliding_window");
        p.packArrayHeader(4).packString("BlockRemoved").packArrayHeader(1).packLong(9).packString("GPU").packInt(3);
        p.packInt(0);
        final RecordingListener l = decode(p.toByteArray());
        assertEquals(7, l.events.size());
        final int full = BlockEvent.SPEC_KIND_FULL_ATTENTION;
        final int other = BlockEvent.SPEC_KIND_OTHER;
        final int[] expected = {full, full, other, other};
        for (int i = 0; i < expected.length; i++) {
            assertEquals(BlockEvent.PROBLEM_NONE, l.events.get(i).problem());
            assertEquals(i, l.events.get(i).groupIdx());
            assertEquals(expected[i], l.events.get(i).specKind(), "event " + i);
        }
        assertEquals(BlockEvent.PROBLEM_FIELD_TYPE, l.events.get(4).problem(), "a kind must be a string");
        assertEquals(3, l.events.get(5).groupIdx());
        assertEquals(other, l.events.get(5).specKind());
        assertEquals(BlockEvent.TYPE_BLOCK_REMOVED, l.events.get(6).type());
        assertEquals(3, l.events.get(6).groupIdx());
        assertEquals(BlockEvent.SPEC_KIND_ABSENT, l.events.get(6).specKind());
    }

    @Test
    void shouldReportUnknownEventTypesAndKeepDecoding() {
        final RecordingListener l = decode(new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .unknown().removed(new long[] {5}, null).batch(0));
        assertEquals(2, l.events.size());
        assertEquals(BlockEvent.PROBLEM_UNKNOWN_TYPE, l.events.get(0).problem());
        assertEquals(BlockEvent.TYPE_BLOCK_REMOVED, l.events.get(1).type());
        assertEquals(BlockEvent.PROBLEM_NONE, l.events.get(1).problem());
    }

    @Test
    void shouldDropEventWithHashOfWrongWidthAndKeepTheNext() {
        // [ts, [["BlockRemoved", [bin5]], ["BlockRemoved", [7]]], 0]
        final byte[] payload = {
            (byte) 0x93, 0x00, (byte) 0x92,
            (byte) 0x92, (byte) 0xac, 'B', 'l', 'o', 'c', 'k', 'R', 'e', 'm', 'o', 'v', 'e', 'd',
            (byte) 0x91, (byte) 0xc4, 0x05, 1, 2, 3, 4, 5,
            (byte) 0x92, (byte) 0xac, 'B', 'l', 'o', 'c', 'k', 'R', 'e', 'm', 'o', 'v', 'e', 'd',
            (byte) 0x91, 0x07,
            0x00};
        final RecordingListener l = decode(payload);
        assertEquals(2, l.events.size());
        assertEquals(BlockEvent.PROBLEM_HASH_WIDTH, l.events.get(0).problem());
        assertEquals(BlockEvent.PROBLEM_NONE, l.events.get(1).problem());
        assertArrayEquals(new long[] {7}, l.events.get(1).hashes());
    }

    @Test
    void shouldThrowOnlyTypedExceptionForEveryTruncation() {
        final Capture c = Capture.load("kv_event_base.json");
        for (final VllmPayloads.Shape shape : VllmPayloads.Shape.values()) {
            final byte[] payload = new VllmPayloads(shape, VllmPayloads.HashWidth.BIN32)
                .stored(c.blockHashes(), null, c.tokenIds(), 16, "x", "CPU").cleared().batch(1);
            for (int len = 0; len < payload.length; len++) {
                final int n = len;
                assertThrows(VllmDecodeException.class,
                    () -> decoder.decode(new UnsafeBuffer(payload), 0, n, new RecordingListener()));
            }
        }
    }

    @Test
    void shouldRejectAbsurdLengthsWithoutAllocating() {
        final byte[] hugeArray = {(byte) 0x93, 0x00, (byte) 0xdd, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff};
        assertThrows(VllmDecodeException.class,
            () -> decoder.decode(new UnsafeBuffer(hugeArray), 0, hugeArray.length, new RecordingListener()));
        final byte[] hugeMap = {(byte) 0xdf, (byte) 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff};
        assertThrows(VllmDecodeException.class,
            () -> decoder.decode(new UnsafeBuffer(hugeMap), 0, hugeMap.length, new RecordingListener()));
        final byte[] hugeBin = {(byte) 0x92, 0x00, (byte) 0x91, (byte) 0x92, (byte) 0xa1, 'X',
            (byte) 0xc6, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xf0};
        assertThrows(VllmDecodeException.class,
            () -> decoder.decode(new UnsafeBuffer(hugeBin), 0, hugeBin.length, new RecordingListener()));
    }

    @Test
    void shouldRejectTrailingBytesAndWrongOuterShape() {
        final byte[] ok = new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64).cleared()
            .batch(0);
        final byte[] trailing = Arrays.copyOf(ok, ok.length + 1);
        assertThrows(VllmDecodeException.class,
            () -> decoder.decode(new UnsafeBuffer(trailing), 0, trailing.length, new RecordingListener()));
        final byte[] str = {(byte) 0xa1, 'x'};
        assertThrows(VllmDecodeException.class,
            () -> decoder.decode(new UnsafeBuffer(str), 0, str.length, new RecordingListener()));
    }

    @Test
    void shouldNotAllocateWhenDecodingRepeatedly() {
        final Capture c = Capture.load("kv_event_base.json");
        final byte[] payload = new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(c.blockHashes(), null, c.tokenIds(), 16, "Alice", "GPU")
            .removed(c.blockHashes(), "GPU").batch(0);
        final UnsafeBuffer buffer = new UnsafeBuffer(payload);
        final CountingListener l = new CountingListener();
        for (int i = 0; i < 20_000; i++) {
            decoder.decode(buffer, 0, payload.length, l);
        }
        final com.sun.management.ThreadMXBean mx =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        final long tid = Thread.currentThread().threadId();
        final long before = mx.getThreadAllocatedBytes(tid);
        final int rounds = 10_000;
        for (int i = 0; i < rounds; i++) {
            decoder.decode(buffer, 0, payload.length, l);
        }
        final long allocated = mx.getThreadAllocatedBytes(tid) - before;
        // 10,000 batches of 50 blocks: anything per block or per batch would be >= 240 kB.
        assertTrue(allocated < 64 * 1024, "allocated " + allocated + " bytes for " + rounds + " batches");
        assertEquals(30_000L * 50, l.blocks);
    }

    static final class CountingListener implements BlockEventListener {
        long blocks;

        @Override
        public void onBlockStored(final BlockEvent event) {
            blocks += event.hashCount();
        }

        @Override
        public void onBlockRemoved(final BlockEvent event) {
            blocks += event.hashCount();
        }

        @Override
        public void onAllBlocksCleared(final BlockEvent event) {
        }

        @Override
        public void onDropped(final BlockEvent event) {
        }
    }
}
