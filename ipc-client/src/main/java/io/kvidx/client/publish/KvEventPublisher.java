package io.kvidx.client.publish;

import io.aeron.Publication;
import io.kvidx.sbe.events.AllBlocksClearedEncoder;
import io.kvidx.sbe.events.BlockRemovedEncoder;
import io.kvidx.sbe.events.BlockStoredEncoder;
import io.kvidx.sbe.events.BooleanType;
import io.kvidx.sbe.events.Medium;
import io.kvidx.sbe.events.MessageHeaderEncoder;
import io.kvidx.sbe.events.PodDownEncoder;
import io.kvidx.sbe.events.PodHeartbeatEncoder;
import io.kvidx.sbe.events.PodRegisterEncoder;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Publishes one pod's KV block events to kvidx daemons over Aeron (IPC or UDP), as SBE messages of the kvidx
 * event schema (sbe-schemas/src/main/resources/sbe/kvidx-events.xml). For JVM engines and sidecars; vLLM itself
 * publishes over ZeroMQ. Each message carries the pod id and model and a sequence number counting up from 0, so
 * the daemon can tell gaps and restarts.
 *
 * <p>Needs aeron-client and kvidx-sbe-schemas on the class path (optional dependencies of ipc-client); the index
 * reader does not.
 *
 * <p><b>Note:</b> not thread safe: one publisher per pod, used by one thread. Encoding allocates nothing; a
 * back-pressured offer is retried with the idle strategy until it succeeds; every method returns false (and the
 * sequence stays) when no daemon is connected or the publication is closed. The caller owns the publication.
 */
public final class KvEventPublisher {
    private static final int MAX_VAR_LENGTH = 1024;
    /** Largest group the generated encoder accepts. */
    private static final int MAX_GROUP = 65534;

    private final Publication publication;
    private final IdleStrategy idle;
    private final byte[] podId;
    private final byte[] model;
    private final UnsafeBuffer buffer;
    private final MessageHeaderEncoder header = new MessageHeaderEncoder();
    private final BlockStoredEncoder stored = new BlockStoredEncoder();
    private final BlockRemovedEncoder removed = new BlockRemovedEncoder();
    private final AllBlocksClearedEncoder cleared = new AllBlocksClearedEncoder();
    private final PodRegisterEncoder register = new PodRegisterEncoder();
    private final PodHeartbeatEncoder heartbeat = new PodHeartbeatEncoder();
    private final PodDownEncoder down = new PodDownEncoder();
    private byte[] loraName = new byte[0];
    private String loraNameString;
    private long sequence;

    /**
     * @param publication an Aeron publication on the daemon's channel and stream (owned by the caller).
     * @param podId       pod id (1..112 UTF-8 bytes).
     * @param model       model name (part of the router keys' chain seed).
     * @param idle        idle strategy while back-pressured.
     */
    public KvEventPublisher(final Publication publication, final String podId, final String model,
        final IdleStrategy idle) {
        this.publication = Objects.requireNonNull(publication, "publication");
        this.idle = Objects.requireNonNull(idle, "idle");
        this.podId = checkedUtf8(podId, "pod id");
        if (this.podId.length == 0) {
            throw new IllegalArgumentException("pod id must not be empty");
        }
        this.model = checkedUtf8(model == null ? "" : model, "model");
        this.buffer = new UnsafeBuffer(ByteBuffer.allocateDirect(Math.max(4096, publication.maxMessageLength())));
    }

    private static byte[] checkedUtf8(final String s, final String what) {
        final byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length > MAX_VAR_LENGTH) {
            throw new IllegalArgumentException(what + " longer than " + MAX_VAR_LENGTH + " bytes");
        }
        return b;
    }

    /**
     * Announces the pod.
     *
     * @return false when no daemon is connected or the publication is closed.
     */
    public boolean register() {
        final int length = MessageHeaderEncoder.ENCODED_LENGTH + register.wrapAndApplyHeader(buffer, 0, header)
            .sequence(sequence).putPodId(podId, 0, podId.length).putModel(model, 0, model.length).encodedLength();
        return offer(length);
    }

    /**
     * Tells the daemon the pod is alive.
     *
     * @return false when no daemon is connected or the publication is closed.
     */
    public boolean heartbeat() {
        final int length = MessageHeaderEncoder.ENCODED_LENGTH + heartbeat.wrapAndApplyHeader(buffer, 0, header)
            .sequence(sequence).putPodId(podId, 0, podId.length).putModel(model, 0, model.length).encodedLength();
        return offer(length);
    }

    /**
     * Takes the pod out of the index now.
     *
     * @return false when no daemon is connected or the publication is closed.
     */
    public boolean podDown() {
        final int length = MessageHeaderEncoder.ENCODED_LENGTH + down.wrapAndApplyHeader(buffer, 0, header)
            .sequence(sequence).putPodId(podId, 0, podId.length).putModel(model, 0, model.length).encodedLength();
        return offer(length);
    }

    /**
     * The pod now holds full blocks {@code hashes[0..count)} with tokens {@code tokens[0..count * blockSize)}.
     *
     * @param hashes     engine hashes of the blocks, in chain order.
     * @param count      number of blocks.
     * @param hasParent  true when the first block has a parent.
     * @param parentHash engine hash of the parent.
     * @param tokens     token ids of the blocks.
     * @param blockSize  tokens per block.
     * @param medium     where the blocks are held.
     * @param lora       LoRA adapter name, or null.
     * @param dpRank     data-parallel rank, or -1.
     * @return false when no daemon is connected or the publication is closed.
     * @throws IllegalArgumentException when the event does not fit one message (65534 entries per group, the
     *                                  publication's largest message).
     */
    public boolean blockStored(final long[] hashes, final int count, final boolean hasParent, final long parentHash,
        final int[] tokens, final int blockSize, final Medium medium, final String lora, final int dpRank) {
        final int tokenCount = count * blockSize;
        if (count > MAX_GROUP || tokenCount > MAX_GROUP || (long) count * blockSize > MAX_GROUP) {
            throw new IllegalArgumentException("at most " + MAX_GROUP + " blocks and tokens per event: " + count
                + " blocks of " + blockSize);
        }
        final byte[] loraBytes = loraBytes(lora);
        final long needed = MessageHeaderEncoder.ENCODED_LENGTH + BlockStoredEncoder.BLOCK_LENGTH
            + 4 + (long) Long.BYTES * count + 4 + (long) Integer.BYTES * tokenCount
            + 12 + podId.length + model.length + loraBytes.length;
        if (needed > buffer.capacity()) {
            throw new IllegalArgumentException("event of " + needed + " bytes exceeds the publication's largest "
                + "message (" + buffer.capacity() + " bytes): split it or use longer terms");
        }
        final BlockStoredEncoder e = stored.wrapAndApplyHeader(buffer, 0, header)
            .sequence(sequence).dpRank(dpRank).blockSize(blockSize).medium(medium)
            .hasParent(hasParent ? BooleanType.T : BooleanType.F).parentHash(parentHash);
        // Group entries lie contiguously from the message's limit (SBE layout): write them in one pass.
        e.blocksCount(count);
        int p = e.limit();
        for (int i = 0; i < count; i++) {
            buffer.putLong(p + i * Long.BYTES, hashes[i], ByteOrder.LITTLE_ENDIAN);
        }
        e.limit(p + count * Long.BYTES);
        e.tokensCount(tokenCount);
        p = e.limit();
        for (int i = 0; i < tokenCount; i++) {
            buffer.putInt(p + i * Integer.BYTES, tokens[i], ByteOrder.LITTLE_ENDIAN);
        }
        e.limit(p + tokenCount * Integer.BYTES);
        e.putPodId(podId, 0, podId.length).putModel(model, 0, model.length)
            .putLoraName(loraBytes, 0, loraBytes.length);
        return offer(MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
    }

    /**
     * The pod no longer holds these blocks on this medium.
     *
     * @param hashes engine hashes.
     * @param count  number of hashes.
     * @param medium the medium.
     * @return false when no daemon is connected or the publication is closed.
     */
    public boolean blockRemoved(final long[] hashes, final int count, final Medium medium) {
        if (count > MAX_GROUP) {
            throw new IllegalArgumentException("at most " + MAX_GROUP + " blocks per event: " + count);
        }
        final BlockRemovedEncoder e = removed.wrapAndApplyHeader(buffer, 0, header).sequence(sequence)
            .medium(medium);
        final BlockRemovedEncoder.BlocksEncoder blocks = e.blocksCount(count);
        for (int i = 0; i < count; i++) {
            blocks.next().hash(hashes[i]);
        }
        e.putPodId(podId, 0, podId.length).putModel(model, 0, model.length);
        return offer(MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
    }

    /**
     * The pod dropped every block.
     *
     * @return false when no daemon is connected or the publication is closed.
     */
    public boolean allBlocksCleared() {
        final int length = MessageHeaderEncoder.ENCODED_LENGTH + cleared.wrapAndApplyHeader(buffer, 0, header)
            .sequence(sequence).putPodId(podId, 0, podId.length).putModel(model, 0, model.length).encodedLength();
        return offer(length);
    }

    /**
     * @return sequence number of the next message.
     */
    public long sequence() {
        return sequence;
    }

    private byte[] loraBytes(final String lora) {
        if (lora == null) {
            return EMPTY;
        }
        if (!lora.equals(loraNameString)) {
            loraName = checkedUtf8(lora, "LoRA name");
            loraNameString = lora;
        }
        return loraName;
    }

    private static final byte[] EMPTY = new byte[0];

    private boolean offer(final int length) {
        idle.reset();
        while (true) {
            final long result = publication.offer(buffer, 0, length);
            if (result > 0) {
                sequence++;
                return true;
            }
            if (result == Publication.CLOSED || result == Publication.MAX_POSITION_EXCEEDED
                || result == Publication.NOT_CONNECTED) {
                return false;
            }
            idle.idle();
        }
    }
}
