package io.kvidx.bench.ingest;

import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.SplittableRandom;

/**
 * vLLM-format msgpack batches for the benchmarks, encoded with msgpack-core (as vLLM's msgspec would).
 */
final class VllmBatches {
    private VllmBatches() {
    }

    /**
     * A batch [ts, [BlockStored map event], 0] of {@code blocks} blocks with random tokens and uint64 hashes.
     *
     * @param random    random source.
     * @param blocks    blocks in the event.
     * @param blockSize tokens per block.
     * @param hashes    receives the engine hashes (length >= blocks).
     * @param tokens    receives the tokens (length >= blocks * blockSize).
     * @return the payload.
     */
    static byte[] stored(final SplittableRandom random, final int blocks, final int blockSize, final long[] hashes,
        final int[] tokens) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packDouble(1.7e9).packArrayHeader(1);
            p.packMapHeader(6);
            p.packString("type").packString("BlockStored");
            p.packString("block_hashes").packArrayHeader(blocks);
            for (int i = 0; i < blocks; i++) {
                hashes[i] = random.nextLong();
                p.packBigInteger(new BigInteger(Long.toUnsignedString(hashes[i])));
            }
            p.packString("parent_block_hash").packNil();
            p.packString("token_ids").packArrayHeader(blocks * blockSize);
            for (int i = 0; i < blocks * blockSize; i++) {
                tokens[i] = random.nextInt(151_000);
                p.packInt(tokens[i]);
            }
            p.packString("block_size").packInt(blockSize);
            p.packString("medium").packString("GPU");
            p.packInt(0);
            return p.toByteArray();
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}
