package io.kvidx.bench.trace;

import io.kvidx.sbe.events.AllBlocksClearedEncoder;
import io.kvidx.sbe.events.BlockRemovedEncoder;
import io.kvidx.sbe.events.BlockStoredEncoder;
import io.kvidx.sbe.events.BooleanType;
import io.kvidx.sbe.events.Medium;
import io.kvidx.sbe.events.MessageHeaderEncoder;
import org.agrona.ExpandableArrayBuffer;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Encodes a simulated engine's work for one request as kvidx SBE messages (sbe-schemas, schema 701), in the order
 * a publisher sends them: one {@code BlockRemoved} with the evictions, then one {@code BlockStored} per contiguous
 * run of newly stored blocks (parent = the block before the run). A message is kept under
 * {@link #MAX_MESSAGE_BYTES}: a longer run is split into consecutive messages chained by their parents, as a
 * publisher on Aeron must split what does not fit one message.
 *
 * <p>Layout of the result: for each message, its length (int32, little-endian) then the message. Every message's
 * {@code sequence} (the first field after the 8-byte header, {@link #SEQUENCE_OFFSET}) is 0 here; the sender
 * writes the pod's next sequence into it when it sends ({@link AeronTransport}).
 *
 * <p><b>Note:</b> not thread safe.
 */
final class SbeBatchEncoder implements BatchEncoder {
    /** Largest message written: an eighth of the daemon's default 1 MiB Aeron terms, halved. */
    static final int MAX_MESSAGE_BYTES = 64 * 1024;
    /** Offset of the sequence field in every message of the schema. */
    static final int SEQUENCE_OFFSET = MessageHeaderEncoder.ENCODED_LENGTH;
    /** Room for header, root block, group headers and var-data (pod id, model, LoRA) of any message here. */
    private static final int OVERHEAD = 256;
    private static final byte[] NO_LORA = new byte[0];

    private final MessageHeaderEncoder header = new MessageHeaderEncoder();
    private final BlockStoredEncoder stored = new BlockStoredEncoder();
    private final BlockRemovedEncoder removed = new BlockRemovedEncoder();
    private final AllBlocksClearedEncoder cleared = new AllBlocksClearedEncoder();
    private final ExpandableArrayBuffer out = new ExpandableArrayBuffer(1 << 16);
    private final byte[] model = TraceBlocks.MODEL.getBytes(StandardCharsets.UTF_8);
    private int length;

    @Override
    public byte[] encode(final TraceBlocks blocks, final SimEngine engine, final double tsSeconds, final int pod) {
        final int storedCount = engine.storedCount();
        final int removedCount = engine.removedCount();
        if (storedCount == 0 && removedCount == 0) {
            return null;
        }
        final byte[] podId = BatchEncoder.podId(pod).getBytes(StandardCharsets.UTF_8);
        length = 0;
        final long[] evicted = engine.removedEngineHashes();
        final int perRemoved = (MAX_MESSAGE_BYTES - OVERHEAD) / Long.BYTES;
        for (int from = 0; from < removedCount; from += perRemoved) {
            removed(evicted, from, Math.min(removedCount, from + perRemoved), podId);
        }
        final int bs = blocks.blockSize();
        final int perStored = Math.min((MAX_MESSAGE_BYTES - OVERHEAD) / (Long.BYTES + Integer.BYTES * bs),
            0xFFFE / bs);
        int i = 0;
        while (i < storedCount) {
            int j = i + 1;
            while (j < storedCount && engine.stored(j) == engine.stored(j - 1) + 1) {
                j++;
            }
            final int first = engine.stored(i);
            final int end = first + (j - i);
            for (int from = first; from < end; from += perStored) {
                stored(blocks, from, Math.min(end, from + perStored), podId);
            }
            i = j;
        }
        return Arrays.copyOf(out.byteArray(), length);
    }

    @Override
    public byte[] cleared(final int pod) {
        final byte[] podId = BatchEncoder.podId(pod).getBytes(StandardCharsets.UTF_8);
        length = 0;
        final int at = Integer.BYTES;
        out.checkLimit(at + MAX_MESSAGE_BYTES);
        final AllBlocksClearedEncoder e = cleared.wrapAndApplyHeader(out, at, header).sequence(0);
        e.putPodId(podId, 0, podId.length).putModel(model, 0, model.length);
        close(at, MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
        return Arrays.copyOf(out.byteArray(), length);
    }

    private void removed(final long[] hashes, final int from, final int to, final byte[] podId) {
        final int at = length + Integer.BYTES;
        out.checkLimit(at + MAX_MESSAGE_BYTES);
        final BlockRemovedEncoder e = removed.wrapAndApplyHeader(out, at, header).sequence(0).medium(Medium.GPU);
        final BlockRemovedEncoder.BlocksEncoder group = e.blocksCount(to - from);
        for (int k = from; k < to; k++) {
            group.next().hash(hashes[k]);
        }
        e.putPodId(podId, 0, podId.length).putModel(model, 0, model.length);
        close(at, MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
    }

    private void stored(final TraceBlocks blocks, final int from, final int to, final byte[] podId) {
        final int at = length + Integer.BYTES;
        out.checkLimit(at + MAX_MESSAGE_BYTES);
        final long[] hashes = blocks.engineHashes();
        final int bs = blocks.blockSize();
        final BlockStoredEncoder e = stored.wrapAndApplyHeader(out, at, header).sequence(0).dpRank(-1)
            .blockSize(bs).medium(Medium.GPU).hasParent(from == 0 ? BooleanType.F : BooleanType.T)
            .parentHash(from == 0 ? 0 : hashes[from - 1]);
        final BlockStoredEncoder.BlocksEncoder b = e.blocksCount(to - from);
        for (int k = from; k < to; k++) {
            b.next().hash(hashes[k]);
        }
        final int[] tokens = blocks.tokens();
        final BlockStoredEncoder.TokensEncoder t = e.tokensCount((to - from) * bs);
        for (int k = from * bs; k < to * bs; k++) {
            t.next().token(tokens[k]);
        }
        e.putPodId(podId, 0, podId.length).putModel(model, 0, model.length).putLoraName(NO_LORA, 0, 0);
        close(at, MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
    }

    private void close(final int at, final int messageLength) {
        out.putInt(at - Integer.BYTES, messageLength, ByteOrder.LITTLE_ENDIAN);
        length = at + messageLength;
    }
}
