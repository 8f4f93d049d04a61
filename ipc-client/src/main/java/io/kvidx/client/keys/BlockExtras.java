package io.kvidx.client.keys;

import java.util.Arrays;
import java.util.Objects;

/**
 * The extras of one block in router keys, version 1 (docs/keys.md, "Extras"): the multimodal items the block
 * overlaps, each as its identifier and its offset relative to the block's first token, and the block's prompt-embeds
 * digest. A block with neither keeps the plain key; a block with either is keyed over
 * {@code LE64(parent) || LE32 tokens || extras}, where
 * <pre>
 *   extras = LE32(k) || item(1) || ... || item(k) || digest
 *   item   = LE32(len(utf8(identifier))) || utf8(identifier) || LE32(relative offset)
 *   digest = 0x00 (none) | 0x01 || LE32(len(d)) || d
 * </pre>
 *
 * <p>Filled block by block by whoever knows the extras (the daemon from an event's {@code extra_keys},
 * {@link RequestExtras} from a request's multimodal items), then given to
 * {@link RouterKeyHasher#blockKey(long, int[], int, BlockExtras)}. It is also the scratch the message is built in:
 * reused for every block, it allocates only when a block's extras are larger than any seen before.
 *
 * <p><b>Note:</b> not thread safe; owned and written by one thread (the caller's scratch).
 */
public final class BlockExtras {
    private byte[] items = new byte[256];
    private int itemsLength;
    private int itemCount;
    private byte[] digest = new byte[32];
    private int digestLength = -1;
    private byte[] message = new byte[512];

    /**
     * Forgets the items and the digest (the next block starts empty).
     *
     * @return this.
     */
    public BlockExtras clear() {
        itemsLength = 0;
        itemCount = 0;
        digestLength = -1;
        return this;
    }

    /**
     * @return true when the block has no multimodal item and no digest (its key is the plain one).
     */
    public boolean isEmpty() {
        return itemCount == 0 && digestLength < 0;
    }

    /**
     * @return number of multimodal items added since {@link #clear()}.
     */
    public int itemCount() {
        return itemCount;
    }

    /**
     * @return true when a prompt-embeds digest was set since {@link #clear()}.
     */
    public boolean hasDigest() {
        return digestLength >= 0;
    }

    /**
     * Adds a multimodal item the block overlaps, in the order vLLM lists them (by the item's offset).
     *
     * @param utf8           the item's identifier, UTF-8.
     * @param offset         first identifier byte.
     * @param length         identifier length in bytes.
     * @param relativeOffset the item's first token minus the block's first token (negative when the item began in
     *                       an earlier block).
     * @return this.
     */
    public BlockExtras item(final byte[] utf8, final int offset, final int length, final int relativeOffset) {
        Objects.checkFromIndexSize(offset, length, utf8.length);
        final int p = reserveItem(length);
        System.arraycopy(utf8, offset, items, p + 4, length);
        finishItem(p, length, relativeOffset);
        return this;
    }

    /**
     * Adds a multimodal item the block overlaps; the identifier is encoded to UTF-8 in place (no allocation; an
     * unpaired surrogate becomes {@code '?'}, as {@link String#getBytes(java.nio.charset.Charset)} does).
     *
     * @param identifier     the item's identifier.
     * @param relativeOffset the item's first token minus the block's first token.
     * @return this.
     */
    public BlockExtras item(final CharSequence identifier, final int relativeOffset) {
        final int length = Utf8.length(identifier);
        final int p = reserveItem(length);
        Utf8.encode(identifier, items, p + 4);
        finishItem(p, length, relativeOffset);
        return this;
    }

    /**
     * Sets the block's prompt-embeds digest (vLLM: the 32-byte SHA-256 of the block's embeddings).
     *
     * @param bytes  the digest.
     * @param offset first byte.
     * @param length digest length.
     * @return this.
     */
    public BlockExtras digest(final byte[] bytes, final int offset, final int length) {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        if (digest.length < length) {
            digest = new byte[length];
        }
        System.arraycopy(bytes, offset, digest, 0, length);
        digestLength = length;
        return this;
    }

    private int reserveItem(final int idLength) {
        final int need = itemsLength + 8 + idLength;
        if (need < 0) {
            throw new IllegalArgumentException("extras too large");
        }
        if (items.length < need) {
            items = Arrays.copyOf(items, Math.max(need, items.length * 2));
        }
        return itemsLength;
    }

    private void finishItem(final int p, final int idLength, final int relativeOffset) {
        putInt(items, p, idLength);
        putInt(items, p + 4 + idLength, relativeOffset);
        itemsLength = p + 8 + idLength;
        itemCount++;
    }

    /**
     * Key of the block {@code tokens[offset .. offset + blockSize)} with these (non-empty) extras.
     */
    long key(final long parent, final int[] tokens, final int offset, final int blockSize) {
        final int tokenEnd = 8 + 4 * blockSize;
        final int length = tokenEnd + 4 + itemsLength + (digestLength < 0 ? 1 : 5 + digestLength);
        if (message.length < length) {
            message = new byte[Math.max(length, message.length * 2)];
        }
        final byte[] m = message;
        putLong(m, 0, parent);
        for (int i = 0; i < blockSize; i++) {
            putInt(m, 8 + 4 * i, tokens[offset + i]);
        }
        putInt(m, tokenEnd, itemCount);
        System.arraycopy(items, 0, m, tokenEnd + 4, itemsLength);
        int p = tokenEnd + 4 + itemsLength;
        if (digestLength < 0) {
            m[p] = 0;
        } else {
            m[p] = 1;
            putInt(m, p + 1, digestLength);
            System.arraycopy(digest, 0, m, p + 5, digestLength);
        }
        return Xxh3.hash64(m, 0, length, 0L);
    }

    static void putInt(final byte[] b, final int p, final int v) {
        b[p] = (byte)v;
        b[p + 1] = (byte)(v >>> 8);
        b[p + 2] = (byte)(v >>> 16);
        b[p + 3] = (byte)(v >>> 24);
    }

    private static void putLong(final byte[] b, final int p, final long v) {
        putInt(b, p, (int)v);
        putInt(b, p + 4, (int)(v >>> 32));
    }
}
