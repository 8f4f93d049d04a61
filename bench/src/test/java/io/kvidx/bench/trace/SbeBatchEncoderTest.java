package io.kvidx.bench.trace;

import io.kvidx.sbe.events.BlockRemovedDecoder;
import io.kvidx.sbe.events.BlockStoredDecoder;
import io.kvidx.sbe.events.BooleanType;
import io.kvidx.sbe.events.MessageHeaderDecoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SbeBatchEncoderTest {
    @Test
    void shouldSplitALongRunIntoChainedMessagesThatCarryEveryBlockAndToken() {
        // 60 trace blocks of 512 tokens = 1,920 engine blocks of 16 in one stored run: more than one 64 KiB message
        // holds (906 blocks of 8 + 64 bytes), so the run is split in three.
        final long[] ids = new long[60];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = 7 + i;
        }
        final TraceBlocks blocks = new TraceBlocks(16, 8192);
        final int len = blocks.load(new TraceRequest(0, ids.length * 512, 0, ids));
        assertEquals(60 * 32, len);
        final SimEngine engine = new SimEngine(8192, 8192);
        engine.serve(blocks.engineHashes(), blocks.routerKeys(), len);
        final byte[] batch = new SbeBatchEncoder().encode(blocks, engine, 1.5, 3);

        final UnsafeBuffer buffer = new UnsafeBuffer(batch);
        final MessageHeaderDecoder header = new MessageHeaderDecoder();
        final BlockStoredDecoder stored = new BlockStoredDecoder();
        final List<Long> hashes = new ArrayList<>();
        final List<Integer> tokens = new ArrayList<>();
        long parent = 0;
        int messages = 0;
        int p = 0;
        while (p < batch.length) {
            final int length = buffer.getInt(p, ByteOrder.LITTLE_ENDIAN);
            assertTrue(length <= SbeBatchEncoder.MAX_MESSAGE_BYTES, "message of " + length + " bytes");
            header.wrap(buffer, p + 4);
            assertEquals(BlockStoredDecoder.TEMPLATE_ID, header.templateId());
            stored.wrapAndApplyHeader(buffer, p + 4, header);
            assertEquals(0, stored.sequence());
            assertEquals(messages == 0 ? BooleanType.F : BooleanType.T, stored.hasParent());
            if (messages > 0) {
                assertEquals(parent, stored.parentHash(), "each message chains to the last block of the one before");
            }
            for (final BlockStoredDecoder.BlocksDecoder b : stored.blocks()) {
                hashes.add(b.hash());
                parent = b.hash();
            }
            for (final BlockStoredDecoder.TokensDecoder t : stored.tokens()) {
                tokens.add(t.token());
            }
            assertEquals("pod-3", stored.podId());
            assertEquals(TraceBlocks.MODEL, stored.model());
            assertEquals("", stored.loraName());
            assertEquals(p + 4 + length, stored.limit(), "the length prefix is the message's length");
            p += 4 + length;
            messages++;
        }
        assertTrue(messages >= 3, messages + " messages");
        final long[] expectHashes = java.util.Arrays.copyOf(blocks.engineHashes(), len);
        assertArrayEquals(expectHashes, hashes.stream().mapToLong(Long::longValue).toArray());
        assertArrayEquals(java.util.Arrays.copyOf(blocks.tokens(), len * 16),
            tokens.stream().mapToInt(Integer::intValue).toArray());
    }

    @Test
    void shouldPutTheEvictionsFirst() {
        final TraceBlocks blocks = new TraceBlocks(16, 32);
        final SimEngine engine = new SimEngine(32, 32);
        blocks.load(new TraceRequest(0, 512, 0, new long[] {1}));
        engine.serve(blocks.engineHashes(), blocks.routerKeys(), 32);
        final long[] first = java.util.Arrays.copyOf(blocks.engineHashes(), 32);
        blocks.load(new TraceRequest(1, 512, 0, new long[] {2}));
        engine.serve(blocks.engineHashes(), blocks.routerKeys(), 32);
        final byte[] batch = new SbeBatchEncoder().encode(blocks, engine, 2, 0);
        final UnsafeBuffer buffer = new UnsafeBuffer(batch);
        final MessageHeaderDecoder header = new MessageHeaderDecoder().wrap(buffer, 4);
        assertEquals(BlockRemovedDecoder.TEMPLATE_ID, header.templateId());
        final BlockRemovedDecoder removed = new BlockRemovedDecoder().wrapAndApplyHeader(buffer, 4, header);
        final List<Long> gone = new ArrayList<>();
        for (final BlockRemovedDecoder.BlocksDecoder b : removed.blocks()) {
            gone.add(b.hash());
        }
        gone.sort(null);
        final long[] sorted = first.clone();
        java.util.Arrays.sort(sorted);
        assertArrayEquals(sorted, gone.stream().mapToLong(Long::longValue).toArray());
    }
}
