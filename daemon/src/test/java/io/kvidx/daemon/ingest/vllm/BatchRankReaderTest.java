package io.kvidx.daemon.ingest.vllm;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import java.io.IOException;
import java.math.BigInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The rank a transport reads before decoding: vLLM's and SGLang's positional and map-shaped batches, nil, absent,
 * absurd and malformed values.
 */
class BatchRankReaderTest {
    private final BatchRankReader reader = new BatchRankReader();

    private int read(final byte[] payload) {
        return reader.read(new UnsafeBuffer(payload), 0, payload.length);
    }

    private interface Rank {
        void write(MessageBufferPacker p) throws IOException;
    }

    private static byte[] positional(final Rank rank) throws IOException {
        final MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
        p.packArrayHeader(rank == null ? 2 : 3).packDouble(1.0);
        p.packArrayHeader(1).packMapHeader(2).packString("type").packString("BlockStored")
            .packString("token_ids").packArrayHeader(3).packInt(1).packInt(2).packInt(3);
        if (rank != null) {
            rank.write(p);
        }
        return p.toByteArray();
    }

    @Test
    void shouldReadThePositionalRank() throws IOException {
        assertEquals(0, read(positional(p -> p.packInt(0))));
        assertEquals(2, read(positional(p -> p.packInt(2))));
        assertEquals(1024, read(positional(p -> p.packInt(1024))));
        assertEquals(BatchRankReader.NO_RANK, read(positional(MessageBufferPacker::packNil)));
        assertEquals(BatchRankReader.NO_RANK, read(positional(null)));
    }

    @Test
    void shouldFlagAbsurdRanks() throws IOException {
        assertEquals(BatchRankReader.INVALID_RANK, read(positional(p -> p.packInt(-1))));
        assertEquals(BatchRankReader.INVALID_RANK, read(positional(p -> p.packInt(1025))));
        assertEquals(BatchRankReader.INVALID_RANK, read(positional(p -> p.packString("1"))));
        assertEquals(BatchRankReader.INVALID_RANK, read(positional(p -> p.packDouble(1.0))));
        assertEquals(BatchRankReader.INVALID_RANK, read(positional(p -> p.packBoolean(true))));
        assertEquals(BatchRankReader.INVALID_RANK,
            read(positional(p -> p.packBigInteger(BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE)))));
    }

    @Test
    void shouldReadBothRankKeysOfAMapBatch() throws IOException {
        for (final String key : new String[] {"data_parallel_rank", "attn_dp_rank"}) {
            final MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
            p.packMapHeader(3).packString("events").packArrayHeader(0).packInt(7).packString("x").packString(key)
                .packInt(5);
            assertEquals(5, read(p.toByteArray()), key);
        }
        final MessageBufferPacker none = MessagePack.newDefaultBufferPacker();
        none.packMapHeader(1).packString("events").packArrayHeader(0);
        assertEquals(BatchRankReader.NO_RANK, read(none.toByteArray()));
    }

    @Test
    void shouldLeaveMalformedBatchesToTheDecoder() throws IOException {
        final byte[] whole = positional(p -> p.packInt(2));
        assertEquals(BatchRankReader.NO_RANK, read(java.util.Arrays.copyOf(whole, whole.length - 1)));
        assertEquals(BatchRankReader.NO_RANK, read(new byte[] {(byte) 0xc1}));
        assertEquals(BatchRankReader.NO_RANK, read(new byte[] {(byte) 0x93, (byte) 0xdd, 0x7f, 0, 0, 0}));
        assertEquals(BatchRankReader.NO_RANK, read(new byte[0]));
    }
}
