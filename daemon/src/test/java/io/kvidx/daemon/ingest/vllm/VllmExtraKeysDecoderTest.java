package io.kvidx.daemon.ingest.vllm;

import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.event.BlockEventListener;
import io.kvidx.daemon.event.BlockExtraKeys;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code extra_keys} (vllm#33304) in both event shapes, encoded by msgpack-core: decoded into per-block element spans,
 * the fields after it still read, every bad shape dropping its event only (the next event of the batch decodes), and
 * no allocation once warm.
 */
class VllmExtraKeysDecoderTest {
    private final VllmEventDecoder decoder = new VllmEventDecoder();

    /** A copy of the extra keys of the last delivered event: per block, "s:text", "b:length", "m:id@offset". */
    static final class ExtraListener implements BlockEventListener {
        final List<List<String>> blocks = new ArrayList<>();
        final List<Integer> problems = new ArrayList<>();
        boolean hasExtraKeys;
        int groupIdx = -1;

        @Override
        public void onBlockStored(final BlockEvent e) {
            problems.add(BlockEvent.PROBLEM_NONE);
            final BlockExtraKeys x = e.extraKeys();
            hasExtraKeys = x.present();
            groupIdx = e.groupIdx();
            blocks.clear();
            for (int b = 0; b < x.blockCount(); b++) {
                final List<String> elements = new ArrayList<>();
                for (int j = x.start(b); j < x.end(b); j++) {
                    final String text = new String(x.bytes(), x.offset(j), x.length(j),
                        StandardCharsets.UTF_8);
                    elements.add(switch (x.kind(j)) {
                        case BlockExtraKeys.KIND_STR -> "s:" + text;
                        case BlockExtraKeys.KIND_BIN -> "b:" + x.length(j);
                        default -> "m:" + text + "@" + x.value(j);
                    });
                }
                blocks.add(elements);
            }
        }

        @Override
        public void onBlockRemoved(final BlockEvent e) {
            problems.add(BlockEvent.PROBLEM_NONE);
        }

        @Override
        public void onAllBlocksCleared(final BlockEvent e) {
            problems.add(BlockEvent.PROBLEM_NONE);
        }

        @Override
        public void onDropped(final BlockEvent e) {
            problems.add(e.problem());
        }

        @Override
        public void onBatchEnd(final double timestamp, final int dpRank) {
        }
    }

    private ExtraListener decode(final byte[] payload) {
        final ExtraListener l = new ExtraListener();
        decoder.decode(new UnsafeBuffer(payload), 0, payload.length, l);
        return l;
    }

    private static VllmPayloads payloads(final VllmPayloads.Shape shape) {
        return new VllmPayloads(shape, VllmPayloads.HashWidth.UINT64);
    }

    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldDecodeEachBlocksExtraKeys(final VllmPayloads.Shape shape) {
        final ExtraListener l = decode(payloads(shape).storedWithExtraKeys(new long[] {1, 2, 3}, null,
            new int[6], 2, "Alice", Arrays.asList(
                List.of("Alice", List.of("img-\u00e9", -3), List.of("img-2", 1), "salt", new byte[32]),
                null, List.of("Alice", List.of("img-2", -1L)))).batch(0));
        assertEquals(List.of(BlockEvent.PROBLEM_NONE), l.problems);
        assertTrue(l.hasExtraKeys);
        assertEquals(List.of(List.of("s:Alice", "m:img-\u00e9@-3", "m:img-2@1", "s:salt", "b:32"), List.of(),
            List.of("s:Alice", "m:img-2@-1")), l.blocks);
        assertEquals(0, l.groupIdx);
    }

    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldTreatAbsentOrNilExtraKeysAsNone(final VllmPayloads.Shape shape) {
        final ExtraListener l = decode(payloads(shape).storedWithExtraKeys(new long[] {1}, null, new int[2], 2,
            null, null).batch(0));
        assertEquals(List.of(BlockEvent.PROBLEM_NONE), l.problems);
        assertFalse(l.hasExtraKeys);
    }

    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldDropOnlyTheEventWithBadExtraKeys(final VllmPayloads.Shape shape) {
        final Object[][] cases = {
            {BlockEvent.PROBLEM_EXTRA_KEYS_TYPE, 5},
            {BlockEvent.PROBLEM_EXTRA_KEYS_TYPE, List.of("x", "y")},
            {BlockEvent.PROBLEM_EXTRA_KEYS_TYPE, List.of(List.of(1.5), List.of())},
            {BlockEvent.PROBLEM_EXTRA_KEYS_TYPE, List.of(List.of(List.of("i", 1, 2)), List.of())},
            {BlockEvent.PROBLEM_EXTRA_KEYS_TYPE, List.of(List.of(List.of("i", "1")), List.of())},
            {BlockEvent.PROBLEM_EXTRA_KEYS_TYPE, List.of(List.of(List.of(new byte[2], 1)), List.of())},
            {BlockEvent.PROBLEM_EXTRA_KEYS_LENGTH, List.of(List.of())},
            {BlockEvent.PROBLEM_EXTRA_KEYS_LENGTH, List.of(List.of(), List.of(), List.of())},
            {BlockEvent.PROBLEM_EXTRA_KEYS_TOO_LARGE, List.of(List.of(new byte[ExtraKeysDecoder.MAX_EXTRA_KEY_BYTES
                + 1]), List.of())},
            {BlockEvent.PROBLEM_EXTRA_KEYS_TOO_LARGE, List.of(List.of(List.of("i".repeat(
                ExtraKeysDecoder.MAX_EXTRA_KEY_BYTES + 1), 0)), List.of())},
            {BlockEvent.PROBLEM_EXTRA_KEYS_TOO_LARGE, List.of(Collections.nCopies(
                ExtraKeysDecoder.MAX_EXTRA_KEYS_PER_BLOCK + 1, "s"), List.of())},
        };
        for (final Object[] c : cases) {
            final ExtraListener l = decode(payloads(shape)
                .storedWithExtraKeys(new long[] {1, 2}, null, new int[4], 2, null, c[1])
                .storedWithExtraKeys(new long[] {3}, null, new int[2], 2, null, List.of(List.of("ok")))
                .removed(new long[] {1}, "GPU").batch(0));
            assertEquals(List.of(c[0], BlockEvent.PROBLEM_NONE, BlockEvent.PROBLEM_NONE), l.problems,
                "extra_keys " + c[1].toString().substring(0, Math.min(80, c[1].toString().length())));
            assertEquals(List.of(List.of("s:ok")), l.blocks);
        }
    }

    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldNotAllocateWhenDecodingExtraKeysRepeatedly(final VllmPayloads.Shape shape) {
        final List<Object> extra = new ArrayList<>();
        for (int b = 0; b < 25; b++) {
            extra.add(List.of("Alice", List.of("image-" + (b / 4), 16 * (b % 4) - 20), new byte[32]));
        }
        final long[] hashes = new long[25];
        Arrays.setAll(hashes, i -> i * 31L + 1);
        final byte[] payload = payloads(shape).storedWithExtraKeys(hashes, null, new int[400], 16, "Alice", extra)
            .batch(0);
        final UnsafeBuffer buffer = new UnsafeBuffer(payload);
        final VllmEventDecoderTest.CountingListener l = new VllmEventDecoderTest.CountingListener();
        for (int i = 0; i < 20_000; i++) {
            decoder.decode(buffer, 0, payload.length, l);
        }
        final com.sun.management.ThreadMXBean mx =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        final long tid = Thread.currentThread().threadId();
        final long before = mx.getThreadAllocatedBytes(tid);
        for (int i = 0; i < 10_000; i++) {
            decoder.decode(buffer, 0, payload.length, l);
        }
        final long allocated = mx.getThreadAllocatedBytes(tid) - before;
        // 10,000 batches of 25 blocks with 3 extra keys each: anything per block or element would be >= 240 kB.
        assertTrue(allocated < 64 * 1024, "allocated " + allocated + " bytes");
        assertEquals(30_000L * 25, l.blocks);
    }
}
