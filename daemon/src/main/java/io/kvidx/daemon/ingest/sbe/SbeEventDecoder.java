package io.kvidx.daemon.ingest.sbe;

import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.event.BlockEventListener;
import io.kvidx.daemon.event.EventDecoder;
import io.kvidx.sbe.events.BlockRemovedDecoder;
import io.kvidx.sbe.events.BlockStoredDecoder;
import io.kvidx.sbe.events.Medium;
import io.kvidx.sbe.events.MessageHeaderDecoder;
import org.agrona.DirectBuffer;

import java.nio.ByteOrder;

/**
 * Decodes one kvidx SBE event (BlockStored, BlockRemoved or AllBlocksCleared, already checked by the transport's
 * {@code SbeEventFrame}) into the reusable {@link BlockEvent} view and hands it to the listener, so the writers apply
 * it through the same logic as the engines' msgpack events. The schema carries no batch timestamp:
 * {@link BlockEventListener#onBatchEnd} is not called.
 *
 * <p><b>Note:</b> not thread safe; one decoder per writer thread.
 */
public final class SbeEventDecoder implements EventDecoder {
    private final MessageHeaderDecoder header = new MessageHeaderDecoder();
    private final BlockStoredDecoder stored = new BlockStoredDecoder();
    private final BlockRemovedDecoder removed = new BlockRemovedDecoder();
    private final BlockEvent event = new BlockEvent();

    /**
     * Decodes one SBE event whose frame the transport checked (every length within the message).
     *
     * @param buffer  the message's buffer.
     * @param offset  where its SBE message header starts.
     * @param length  message length (checked by the transport).
     * @param listener receives the event.
     * @return 1.
     */
    @Override
    public int decode(final DirectBuffer buffer, final int offset, final int length,
        final BlockEventListener listener) {
        header.wrap(buffer, offset);
        switch (header.templateId()) {
            case BlockStoredDecoder.TEMPLATE_ID -> {
                stored.wrapAndApplyHeader(buffer, offset, header);
                final BlockEvent e = event.prepare(BlockEvent.TYPE_BLOCK_STORED);
                e.attributes(stored.hasParentRaw() == 1, stored.parentHash(), stored.blockSize(),
                    medium(stored.mediumRaw()));
                // Group entries lie contiguously from the message's limit (SBE layout); read them in one pass
                // instead of one generated next() per entry. The frame check guaranteed they fit.
                final BlockStoredDecoder.BlocksDecoder blocks = stored.blocks();
                final int blockCount = blocks.count();
                final int blockStride = blocks.actingBlockLength();
                final long[] hashes = e.hashesForWrite(blockCount);
                int p = stored.limit();
                for (int i = 0; i < blockCount; i++) {
                    hashes[i] = buffer.getLong(p + i * blockStride, ByteOrder.LITTLE_ENDIAN);
                }
                stored.limit(p + blockCount * blockStride);
                final BlockStoredDecoder.TokensDecoder tokens = stored.tokens();
                final int tokenCount = tokens.count();
                final int tokenStride = tokens.actingBlockLength();
                final int[] t = e.tokensForWrite(tokenCount);
                p = stored.limit();
                for (int i = 0; i < tokenCount; i++) {
                    t[i] = buffer.getInt(p + i * tokenStride, ByteOrder.LITTLE_ENDIAN);
                }
                stored.limit(p + tokenCount * tokenStride);
                stored.skipPodId();
                stored.skipModel();
                final int loraLength = stored.loraNameLength();
                if (loraLength > 0) {
                    stored.getLoraName(e.loraNameForWrite(loraLength), 0, loraLength);
                } else {
                    e.loraNameForWrite(-1);
                }
                listener.onBlockStored(e);
            }
            case BlockRemovedDecoder.TEMPLATE_ID -> {
                removed.wrapAndApplyHeader(buffer, offset, header);
                final BlockEvent e = event.prepare(BlockEvent.TYPE_BLOCK_REMOVED);
                e.attributes(false, 0, -1, medium(removed.mediumRaw()));
                final BlockRemovedDecoder.BlocksDecoder blocks = removed.blocks();
                final long[] hashes = e.hashesForWrite(blocks.count());
                int i = 0;
                while (blocks.hasNext()) {
                    hashes[i++] = blocks.next().hash();
                }
                listener.onBlockRemoved(e);
            }
            default -> listener.onAllBlocksCleared(event.prepare(BlockEvent.TYPE_ALL_BLOCKS_CLEARED));
        }
        return 1;
    }

    private static int medium(final short raw) {
        if (raw == Medium.CPU.value()) {
            return BlockEvent.MEDIUM_CPU;
        }
        if (raw == Medium.DISK.value()) {
            return BlockEvent.MEDIUM_DISK;
        }
        if (raw == Medium.OTHER.value()) {
            return BlockEvent.MEDIUM_OTHER;
        }
        return BlockEvent.MEDIUM_GPU;
    }
}
