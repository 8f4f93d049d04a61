package io.kvidx.daemon.ingest.aeron;

import io.kvidx.sbe.events.AllBlocksClearedDecoder;
import io.kvidx.sbe.events.BlockRemovedDecoder;
import io.kvidx.sbe.events.BlockStoredDecoder;
import io.kvidx.sbe.events.MessageHeaderDecoder;
import io.kvidx.sbe.events.PodDownDecoder;
import io.kvidx.sbe.events.PodHeartbeatDecoder;
import io.kvidx.sbe.events.PodRegisterDecoder;
import org.agrona.DirectBuffer;

import java.nio.ByteOrder;

/**
 * Checks the structure of one kvidx SBE event before any generated decoder touches it: schema id and version,
 * known template, root block, every group's dimensions and every var-data length lie inside the message, and
 * the message ends where the fragment ends. An Aeron fragment sits inside a larger term buffer, so a decoder
 * trusting an absurd group size would read other messages' bytes: this check comes first. On success the pod id,
 * model and sequence are available without a decoder.
 *
 * <p><b>Note:</b> not thread safe; one per transport thread.
 */
public final class SbeEventFrame {
    /** Valid. */
    public static final int OK = 0;
    /** Shorter than a header or a declared part. */
    public static final int TRUNCATED = 1;
    /** Another schema id. */
    public static final int WRONG_SCHEMA = 2;
    /** A version this receiver does not know. */
    public static final int WRONG_VERSION = 3;
    /** Unknown template id. */
    public static final int UNKNOWN_TEMPLATE = 4;
    /** A group or var-data size that does not fit the message, or a block length too small. */
    public static final int ABSURD_SIZE = 5;
    /** Bytes after the last var-data field. */
    public static final int TRAILING_BYTES = 6;
    /** Empty pod id. */
    public static final int NO_POD = 7;

    private static final int MAX_VAR_LENGTH = 1024;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private int templateId;
    private long sequence;
    private int podIdOffset;
    private int podIdLength;
    private int modelOffset;
    private int modelLength;

    /**
     * @param buffer fragment buffer.
     * @param offset message start (its SBE header).
     * @param length fragment length.
     * @return {@link #OK} or a problem code.
     */
    public int check(final DirectBuffer buffer, final int offset, final int length) {
        final int end = offset + length;
        if (length < MessageHeaderDecoder.ENCODED_LENGTH) {
            return TRUNCATED;
        }
        final int blockLength = buffer.getShort(offset, LE) & 0xFFFF;
        templateId = buffer.getShort(offset + 2, LE) & 0xFFFF;
        final int schemaId = buffer.getShort(offset + 4, LE) & 0xFFFF;
        final int version = buffer.getShort(offset + 6, LE) & 0xFFFF;
        if (schemaId != MessageHeaderDecoder.SCHEMA_ID) {
            return WRONG_SCHEMA;
        }
        if (version == 0 || version > MessageHeaderDecoder.SCHEMA_VERSION) {
            return WRONG_VERSION;
        }
        final int groups;
        final int[] minGroupBlock;
        final int minRoot;
        final int vars;
        switch (templateId) {
            case BlockStoredDecoder.TEMPLATE_ID -> {
                groups = 2;
                minGroupBlock = STORED_GROUPS;
                minRoot = BlockStoredDecoder.BLOCK_LENGTH;
                vars = 3;
            }
            case BlockRemovedDecoder.TEMPLATE_ID -> {
                groups = 1;
                minGroupBlock = REMOVED_GROUPS;
                minRoot = BlockRemovedDecoder.BLOCK_LENGTH;
                vars = 2;
            }
            case AllBlocksClearedDecoder.TEMPLATE_ID, PodRegisterDecoder.TEMPLATE_ID, PodHeartbeatDecoder.TEMPLATE_ID,
                PodDownDecoder.TEMPLATE_ID -> {
                groups = 0;
                minGroupBlock = REMOVED_GROUPS;
                minRoot = AllBlocksClearedDecoder.BLOCK_LENGTH;
                vars = 2;
            }
            default -> {
                return UNKNOWN_TEMPLATE;
            }
        }
        if (blockLength < minRoot) {
            return ABSURD_SIZE;
        }
        int p = offset + MessageHeaderDecoder.ENCODED_LENGTH;
        if ((long) p + blockLength > end) {
            return TRUNCATED;
        }
        sequence = buffer.getLong(p, LE);
        p += blockLength;
        for (int g = 0; g < groups; g++) {
            if (p + 4 > end) {
                return TRUNCATED;
            }
            final int groupBlock = buffer.getShort(p, LE) & 0xFFFF;
            final int count = buffer.getShort(p + 2, LE) & 0xFFFF;
            if (groupBlock < minGroupBlock[g] || (long) p + 4 + (long) groupBlock * count > end) {
                return ABSURD_SIZE;
            }
            p += 4 + groupBlock * count;
        }
        for (int v = 0; v < vars; v++) {
            if (p + 4 > end) {
                return TRUNCATED;
            }
            final long varLength = buffer.getInt(p, LE) & 0xFFFF_FFFFL;
            if (varLength > MAX_VAR_LENGTH || p + 4 + varLength > end) {
                return ABSURD_SIZE;
            }
            if (v == 0) {
                podIdOffset = p + 4;
                podIdLength = (int) varLength;
            } else if (v == 1) {
                modelOffset = p + 4;
                modelLength = (int) varLength;
            }
            p += 4 + (int) varLength;
        }
        if (p != end) {
            return TRAILING_BYTES;
        }
        return podIdLength == 0 ? NO_POD : OK;
    }

    private static final int[] STORED_GROUPS = {8, 4};
    private static final int[] REMOVED_GROUPS = {8};

    /**
     * @return template id of the last message checked.
     */
    public int templateId() {
        return templateId;
    }

    /**
     * @return publisher sequence of the last valid message.
     */
    public long sequence() {
        return sequence;
    }

    /**
     * @return offset of the pod id bytes.
     */
    public int podIdOffset() {
        return podIdOffset;
    }

    /**
     * @return length of the pod id bytes.
     */
    public int podIdLength() {
        return podIdLength;
    }

    /**
     * @return offset of the model bytes.
     */
    public int modelOffset() {
        return modelOffset;
    }

    /**
     * @return length of the model bytes.
     */
    public int modelLength() {
        return modelLength;
    }

    /**
     * @param problem a problem code.
     * @return its description.
     */
    public static String describe(final int problem) {
        return switch (problem) {
            case OK -> "ok";
            case TRUNCATED -> "truncated message";
            case WRONG_SCHEMA -> "wrong SBE schema id (expected " + MessageHeaderDecoder.SCHEMA_ID + ")";
            case WRONG_VERSION -> "unsupported SBE schema version (known: 1.." + MessageHeaderDecoder.SCHEMA_VERSION
                + ")";
            case UNKNOWN_TEMPLATE -> "unknown SBE template id";
            case ABSURD_SIZE -> "group or string size does not fit the message";
            case TRAILING_BYTES -> "bytes after the message's end";
            case NO_POD -> "empty pod id";
            default -> "problem " + problem;
        };
    }
}
