package io.kvidx.bench.trace;

import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Encodes a simulated engine's work for one request as one vLLM event batch, with msgpack-core, in the shape
 * vLLM's msgspec writes (docs/ingestion.md): {@code [ts, [events], nil]} with map events
 * {@code {"type": "BlockRemoved", "block_hashes": [...], "medium": "GPU"}} (the evictions, first, as vLLM evicts
 * before it stores) and one {@code {"type": "BlockStored", "block_hashes", "parent_block_hash", "token_ids",
 * "block_size", "medium"}} per contiguous run of newly stored blocks. Hashes go out as msgpack uint64 (0xcf).
 *
 * <p><b>Note:</b> not thread safe.
 */
public final class VllmEventEncoder implements BatchEncoder {
    /**
     * @param blocks the request's blocks (tokens and engine hashes of the last load).
     * @param engine the engine after serving the request.
     * @param tsSeconds batch timestamp.
     * @param pod       the pod (named by the ZeroMQ topic, not the batch).
     * @return the batch payload, or null when the request stored and evicted nothing.
     */
    @Override
    public byte[] encode(final TraceBlocks blocks, final SimEngine engine, final double tsSeconds, final int pod) {
        final int stored = engine.storedCount();
        final int removed = engine.removedCount();
        if (stored == 0 && removed == 0) {
            return null;
        }
        int runs = 0;
        for (int i = 0; i < stored; i++) {
            if (i == 0 || engine.stored(i) != engine.stored(i - 1) + 1) {
                runs++;
            }
        }
        final int bs = blocks.blockSize();
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packDouble(tsSeconds).packArrayHeader(runs + (removed > 0 ? 1 : 0));
            if (removed > 0) {
                p.packMapHeader(3);
                p.packString("type").packString("BlockRemoved");
                p.packString("block_hashes").packArrayHeader(removed);
                final long[] hashes = engine.removedEngineHashes();
                for (int i = 0; i < removed; i++) {
                    packUint64(p, hashes[i]);
                }
                p.packString("medium").packString("GPU");
            }
            int i = 0;
            while (i < stored) {
                int j = i + 1;
                while (j < stored && engine.stored(j) == engine.stored(j - 1) + 1) {
                    j++;
                }
                final int first = engine.stored(i);
                final int count = j - i;
                p.packMapHeader(6);
                p.packString("type").packString("BlockStored");
                p.packString("block_hashes").packArrayHeader(count);
                for (int b = first; b < first + count; b++) {
                    packUint64(p, blocks.engineHashes()[b]);
                }
                p.packString("parent_block_hash");
                if (first == 0) {
                    p.packNil();
                } else {
                    packUint64(p, blocks.engineHashes()[first - 1]);
                }
                p.packString("token_ids").packArrayHeader(count * bs);
                final int[] tokens = blocks.tokens();
                for (int t = first * bs; t < (first + count) * bs; t++) {
                    p.packInt(tokens[t]);
                }
                p.packString("block_size").packInt(bs);
                p.packString("medium").packString("GPU");
                i = j;
            }
            p.packNil();
            return p.toByteArray();
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    @Override
    public byte[] cleared(final int pod) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packDouble(0).packArrayHeader(1);
            p.packMapHeader(1).packString("type").packString("AllBlocksCleared");
            p.packNil();
            return p.toByteArray();
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Writes a hash as msgpack uint64 (0xcf and 8 bytes), whatever its value, as vLLM's msgspec writes them.
     *
     * @param p the packer.
     * @param v the hash's 64 bits.
     * @throws IOException from the packer.
     */
    public static void packUint64(final MessageBufferPacker p, final long v) throws IOException {
        final byte[] uint64 = new byte[9];
        uint64[0] = (byte) 0xcf;
        for (int k = 0; k < 8; k++) {
            uint64[1 + k] = (byte) (v >>> (56 - 8 * k));
        }
        p.writePayload(uint64);
    }
}
