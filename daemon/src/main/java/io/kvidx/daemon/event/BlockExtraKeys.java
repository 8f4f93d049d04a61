package io.kvidx.daemon.event;

import org.agrona.DirectBuffer;

import java.util.Arrays;

/**
 * The {@code extra_keys} (vllm#33304) of one BlockStored, part of its {@link BlockEvent} view
 * ({@link BlockEvent#extraKeys()}): per block, a run of elements (str, bin or multimodal {@code [identifier, offset]}),
 * each a span over one shared byte array. Their meaning is the applier's. Filled by vLLM's decoder; valid
 * only during the listener callback, like the rest of the view. Arrays grow to the largest extra keys seen and are
 * then reused: filling allocates nothing per element.
 *
 * <p><b>Note:</b> not thread safe; owned by the event view it belongs to, written by that view's decoder only.
 */
public final class BlockExtraKeys {
    /** An element that is a str (LoRA name, cache salt). */
    public static final int KIND_STR = 1;
    /** An element that is a bin (prompt-embeds digest). */
    public static final int KIND_BIN = 2;
    /** An element that is a multimodal key {@code [identifier, offset in the block]}. */
    public static final int KIND_MM = 3;

    private boolean present;
    private int blockCount;
    /** End (exclusive) of each block's elements in the element arrays; a block starts where the previous ended. */
    private int[] blockEnd = new int[64];
    private int count;
    private byte[] kind = new byte[64];
    /** Element bytes (str or bin payload, multimodal identifier) in {@link #bytes}. */
    private int[] offset = new int[64];
    private int[] length = new int[64];
    /** A multimodal element's offset (the two's complement bits of the msgpack integer). */
    private long[] value = new long[64];
    private byte[] bytes = new byte[1024];
    private int bytesLength;

    BlockExtraKeys() {
    }

    void reset() {
        present = false;
        blockCount = 0;
        count = 0;
        bytesLength = 0;
    }

    /**
     * Starts the extra keys of an event with {@code n} entries (one per block when well formed), dropping any
     * elements held.
     *
     * @param n number of entries.
     */
    public void begin(final int n) {
        if (blockEnd.length < n) {
            blockEnd = Arrays.copyOf(blockEnd, Math.max(n, blockEnd.length * 2));
        }
        present = true;
        blockCount = n;
        count = 0;
        bytesLength = 0;
    }

    /**
     * Ends block {@code block}'s run: the elements appended since the previous block's end are its own.
     *
     * @param block block index.
     */
    public void endBlock(final int block) {
        blockEnd[block] = count;
    }

    /**
     * Appends one element whose payload is the {@code bytesToCopy} bytes of {@code src} at {@code index}.
     *
     * @param elementKind one of {@code KIND_*}.
     * @param src         holds the payload.
     * @param index       where the payload starts in {@code src}.
     * @param bytesToCopy payload length.
     * @param mmOffset    a multimodal element's offset (0 for the others).
     */
    public void append(final int elementKind, final DirectBuffer src, final int index, final int bytesToCopy,
        final long mmOffset) {
        if (count == kind.length) {
            final int n = count * 2;
            kind = Arrays.copyOf(kind, n);
            offset = Arrays.copyOf(offset, n);
            length = Arrays.copyOf(length, n);
            value = Arrays.copyOf(value, n);
        }
        if (bytes.length - bytesLength < bytesToCopy) {
            bytes = Arrays.copyOf(bytes, Math.max(bytesLength + bytesToCopy, bytes.length * 2));
        }
        final int i = count++;
        kind[i] = (byte) elementKind;
        offset[i] = bytesLength;
        length[i] = bytesToCopy;
        value[i] = mmOffset;
        bytesLength += bytesToCopy;
        src.getBytes(index, bytes, offset[i], bytesToCopy);
    }

    /**
     * @return payload bytes of the elements appended so far (for the decoder's limits).
     */
    public int bytesLength() {
        return bytesLength;
    }

    /**
     * @return true when the BlockStored carries {@code extra_keys} (present and not nil).
     */
    public boolean present() {
        return present;
    }

    /**
     * @return number of {@code extra_keys} entries (one per block when well formed).
     */
    public int blockCount() {
        return blockCount;
    }

    /**
     * @param block block index.
     * @return index of the block's first element (elements of a nil entry: none).
     */
    public int start(final int block) {
        return block == 0 ? 0 : blockEnd[block - 1];
    }

    /**
     * @param block block index.
     * @return one past the index of the block's last element.
     */
    public int end(final int block) {
        return blockEnd[block];
    }

    /**
     * @param element element index.
     * @return one of {@code KIND_*}.
     */
    public int kind(final int element) {
        return kind[element];
    }

    /**
     * @return the bytes every element's payload lies in.
     */
    public byte[] bytes() {
        return bytes;
    }

    /**
     * @param element element index.
     * @return where its payload (str, bin, or a multimodal identifier) starts in {@link #bytes()}.
     */
    public int offset(final int element) {
        return offset[element];
    }

    /**
     * @param element element index.
     * @return its payload length in bytes.
     */
    public int length(final int element) {
        return length[element];
    }

    /**
     * @param element a multimodal element's index.
     * @return its offset relative to the block's first token.
     */
    public long value(final int element) {
        return value[element];
    }
}
