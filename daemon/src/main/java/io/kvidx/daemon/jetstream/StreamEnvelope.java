package io.kvidx.daemon.jetstream;

import io.kvidx.client.index.PodIds;
import io.kvidx.daemon.writer.WriterMessages;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The body of a JetStream message the relay publishes (ADR 0024): one writer queue message ({@link WriterMessages})
 * with the pod it is for and, for an engine batch, the engine's sequence and the batch's fingerprint. Little-endian:
 * <pre>
 *   0 +---------------+---------------+-------------------------------+
 *     | major u8 (1)  | minor u8 (0)  | type u16 ({@link WriterMessages}) |
 *   4 | pod id length u16 (1..{@link PodIds#MAX_LENGTH}) | model length u16 (0xFFFF: none) |
 *   8 | sequence i64: the engine's sequence of a batch or SBE event; -1 for a control message |
 *  16 | fingerprint u64 of the payload (0: none)                      |
 *  24 +---------------------------------------------------------------+
 *     | pod id (UTF-8) | model (UTF-8) | payload, to the end of the body |
 * </pre>
 * A reader refuses another major version; a minor version may only add types a reader then counts as unknown.
 *
 * <p><b>Note:</b> a flyweight: {@link #wrap} and the accessors on one thread (the consumer's); {@link #encode} is
 * stateless and thread safe.
 */
public final class StreamEnvelope {
    /** Major version written and read. */
    public static final int MAJOR = 1;
    /** Minor version written. */
    public static final int MINOR = 0;
    /** Offset of the major version. */
    public static final int MAJOR_OFFSET = 0;
    /** Offset of the minor version. */
    public static final int MINOR_OFFSET = 1;
    /** Offset of the writer message type. */
    public static final int TYPE_OFFSET = 2;
    /** Offset of the pod id's length. */
    public static final int POD_LENGTH_OFFSET = 4;
    /** Offset of the model's length. */
    public static final int MODEL_LENGTH_OFFSET = 6;
    /** Offset of the engine sequence. */
    public static final int SEQUENCE_OFFSET = 8;
    /** Offset of the payload's fingerprint. */
    public static final int FINGERPRINT_OFFSET = 16;
    /** Length of the fixed part; the pod id starts here. */
    public static final int HEADER_LENGTH = 24;
    /** Model length meaning "no model". */
    public static final int NO_MODEL = 0xFFFF;
    /** Longest model name in bytes. */
    public static final int MAX_MODEL_LENGTH = 1024;

    /** {@link #wrap} result: a well-formed envelope. */
    public static final int OK = 0;
    /** {@link #wrap} result: shorter than its fixed part or its strings. */
    public static final int TRUNCATED = 1;
    /** {@link #wrap} result: another major version. */
    public static final int VERSION = 2;
    /** {@link #wrap} result: a type a consumer does not apply. */
    public static final int UNKNOWN_TYPE = 3;
    /** {@link #wrap} result: a pod id that is not one ({@link PodIds}) or a model too long or not UTF-8. */
    public static final int BAD_STRING = 4;

    private DirectBuffer buffer;
    private int offset;
    private int length;
    private int podLength;
    private int modelLength;

    /**
     * @param problem a {@link #wrap} result.
     * @return what it means, for the error log.
     */
    public static String describe(final int problem) {
        return switch (problem) {
            case OK -> "ok";
            case TRUNCATED -> "truncated envelope";
            case VERSION -> "envelope of another major version (this daemon reads " + MAJOR + ")";
            case UNKNOWN_TYPE -> "envelope of an unknown message type";
            case BAD_STRING -> "envelope with an invalid pod id or model";
            default -> "envelope problem " + problem;
        };
    }

    /**
     * @param type a writer message type.
     * @return true when a relay publishes it and a consumer applies it.
     */
    public static boolean isStreamed(final int type) {
        return WriterMessages.carriesEvents(type) || type == WriterMessages.CLEAR_POD
            || type == WriterMessages.HEARTBEAT || type == WriterMessages.POD_DOWN
            || type == WriterMessages.REGISTER || type == WriterMessages.MARK_SUSPECT;
    }

    /**
     * @param podId   the pod id (valid, {@link PodIds}).
     * @param model   its model, or null.
     * @param payload payload length.
     * @return the envelope's length.
     */
    public static int length(final byte[] podId, final byte[] model, final int payload) {
        return HEADER_LENGTH + podId.length + (model == null ? 0 : model.length) + payload;
    }

    /**
     * Writes an envelope.
     *
     * @param dst         where.
     * @param at          offset in dst.
     * @param type        the writer message type.
     * @param sequence    the engine's sequence, or -1.
     * @param fingerprint the payload's fingerprint, or 0.
     * @param podId       the pod id, UTF-8.
     * @param model       the model, UTF-8, or null.
     * @param src         payload buffer.
     * @param srcOffset   payload offset.
     * @param srcLength   payload length.
     * @return the envelope's length.
     */
    public static int encode(final MutableDirectBuffer dst, final int at, final int type, final long sequence,
        final long fingerprint, final byte[] podId, final byte[] model, final DirectBuffer src, final int srcOffset,
        final int srcLength) {
        dst.putByte(at + MAJOR_OFFSET, (byte) MAJOR);
        dst.putByte(at + MINOR_OFFSET, (byte) MINOR);
        dst.putShort(at + TYPE_OFFSET, (short) type, ByteOrder.LITTLE_ENDIAN);
        dst.putShort(at + POD_LENGTH_OFFSET, (short) podId.length, ByteOrder.LITTLE_ENDIAN);
        dst.putShort(at + MODEL_LENGTH_OFFSET, (short) (model == null ? NO_MODEL : model.length),
            ByteOrder.LITTLE_ENDIAN);
        dst.putLong(at + SEQUENCE_OFFSET, sequence, ByteOrder.LITTLE_ENDIAN);
        dst.putLong(at + FINGERPRINT_OFFSET, fingerprint, ByteOrder.LITTLE_ENDIAN);
        int p = at + HEADER_LENGTH;
        dst.putBytes(p, podId);
        p += podId.length;
        if (model != null) {
            dst.putBytes(p, model);
            p += model.length;
        }
        if (srcLength > 0) {
            dst.putBytes(p, src, srcOffset, srcLength);
        }
        return p + srcLength - at;
    }

    /**
     * Wraps and checks an envelope: every length before anything is read from it.
     *
     * @param src    the body.
     * @param at     its offset.
     * @param len    its length.
     * @return {@link #OK} or the problem.
     */
    public int wrap(final DirectBuffer src, final int at, final int len) {
        this.buffer = src;
        this.offset = at;
        this.length = len;
        if (len < HEADER_LENGTH) {
            return TRUNCATED;
        }
        if ((src.getByte(at + MAJOR_OFFSET) & 0xFF) != MAJOR) {
            return VERSION;
        }
        if (!isStreamed(type())) {
            return UNKNOWN_TYPE;
        }
        podLength = src.getShort(at + POD_LENGTH_OFFSET, ByteOrder.LITTLE_ENDIAN) & 0xFFFF;
        final int m = src.getShort(at + MODEL_LENGTH_OFFSET, ByteOrder.LITTLE_ENDIAN) & 0xFFFF;
        modelLength = m == NO_MODEL ? -1 : m;
        if (podLength < 1 || podLength > PodIds.MAX_LENGTH || modelLength > MAX_MODEL_LENGTH) {
            return BAD_STRING;
        }
        if (HEADER_LENGTH + podLength + Math.max(0, modelLength) > len) {
            return TRUNCATED;
        }
        final byte[] pod = new byte[podLength];
        src.getBytes(at + HEADER_LENGTH, pod);
        if (!PodIds.isPodId(pod, 0, podLength)) {
            return BAD_STRING;
        }
        if (modelLength > 0 && !isUtf8(src, at + HEADER_LENGTH + podLength, modelLength)) {
            return BAD_STRING;
        }
        return OK;
    }

    private static boolean isUtf8(final DirectBuffer src, final int at, final int len) {
        final byte[] bytes = new byte[len];
        src.getBytes(at, bytes);
        try {
            StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(bytes));
            return true;
        } catch (final java.nio.charset.CharacterCodingException ex) {
            return false;
        }
    }

    /**
     * @return the writer message type.
     */
    public int type() {
        return buffer.getShort(offset + TYPE_OFFSET, ByteOrder.LITTLE_ENDIAN) & 0xFFFF;
    }

    /**
     * @return the engine's sequence, or -1 for a control message.
     */
    public long sequence() {
        return buffer.getLong(offset + SEQUENCE_OFFSET, ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * @return the payload's fingerprint, or 0.
     */
    public long fingerprint() {
        return buffer.getLong(offset + FINGERPRINT_OFFSET, ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * @return the pod id.
     */
    public String podId() {
        return buffer.getStringWithoutLengthUtf8(offset + HEADER_LENGTH, podLength);
    }

    /**
     * @return the model, or null.
     */
    public String model() {
        return modelLength < 0 ? null : buffer.getStringWithoutLengthUtf8(offset + HEADER_LENGTH + podLength,
            modelLength);
    }

    /**
     * @return the payload's offset in the buffer.
     */
    public int payloadOffset() {
        return offset + HEADER_LENGTH + podLength + Math.max(0, modelLength);
    }

    /**
     * @return the payload's length.
     */
    public int payloadLength() {
        return offset + length - payloadOffset();
    }
}
