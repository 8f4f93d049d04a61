package io.kvidx.daemon.writer;

import io.kvidx.daemon.ingest.vllm.VllmEvent;
import io.kvidx.sbe.events.BlockRemovedDecoder;
import io.kvidx.sbe.events.BlockStoredDecoder;
import io.kvidx.sbe.events.Medium;
import io.kvidx.sbe.events.MessageHeaderDecoder;
import org.agrona.DirectBuffer;

import java.nio.ByteOrder;

/**
 * Applies kvidx SBE events (already checked by {@link io.kvidx.daemon.ingest.aeron.SbeEventFrame}) through the
 * same logic as vLLM's events: the SBE message is decoded into the reusable event view, then handed to the
 * {@link VllmApplier}.
 *
 * <p><b>Note:</b> owned by one writer agent.
 */
final class SbeApplier {
    private final MessageHeaderDecoder header = new MessageHeaderDecoder();
    private final BlockStoredDecoder stored = new BlockStoredDecoder();
    private final BlockRemovedDecoder removed = new BlockRemovedDecoder();
    private final VllmEvent event = new VllmEvent();
    private final VllmApplier applier;

    SbeApplier(final VllmApplier applier) {
        this.applier = applier;
    }

    void apply(final PodState pod, final DirectBuffer buffer, final int offset) {
        header.wrap(buffer, offset);
        applier.pod(pod);
        switch (header.templateId()) {
            case BlockStoredDecoder.TEMPLATE_ID -> {
                stored.wrapAndApplyHeader(buffer, offset, header);
                final VllmEvent e = event.prepare(VllmEvent.TYPE_BLOCK_STORED);
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
                applier.onBlockStored(e);
            }
            case BlockRemovedDecoder.TEMPLATE_ID -> {
                removed.wrapAndApplyHeader(buffer, offset, header);
                final VllmEvent e = event.prepare(VllmEvent.TYPE_BLOCK_REMOVED);
                e.attributes(false, 0, -1, medium(removed.mediumRaw()));
                final BlockRemovedDecoder.BlocksDecoder blocks = removed.blocks();
                final long[] hashes = e.hashesForWrite(blocks.count());
                int i = 0;
                while (blocks.hasNext()) {
                    hashes[i++] = blocks.next().hash();
                }
                applier.onBlockRemoved(e);
            }
            default -> applier.onAllBlocksCleared(event.prepare(VllmEvent.TYPE_ALL_BLOCKS_CLEARED));
        }
    }

    private static int medium(final short raw) {
        if (raw == Medium.CPU.value()) {
            return VllmEvent.MEDIUM_CPU;
        }
        if (raw == Medium.DISK.value()) {
            return VllmEvent.MEDIUM_DISK;
        }
        if (raw == Medium.OTHER.value()) {
            return VllmEvent.MEDIUM_OTHER;
        }
        return VllmEvent.MEDIUM_GPU;
    }
}
