package io.kvidx.client.keys;

import java.util.Arrays;
import java.util.Objects;

/**
 * What besides its tokens, model, LoRA adapter and cache salt goes into a request's router keys: its multimodal
 * items, each an identifier (vLLM's multimodal hash or the caller's UUID) with its placeholder range
 * {@code [offset, offset + length)} in token positions, and optionally one prompt-embeds digest per block.
 * {@link RouterKeyHasher#keys(long, int[], int, RequestExtras, long[])} walks the items block by block exactly as
 * vLLM's {@code _gen_mm_extra_hash_keys} does, so a router computes the keys the daemon computes from the engine's
 * {@code extra_keys}.
 *
 * <p>Items are kept sorted by offset (vLLM's order; items added out of order are inserted in place, equal offsets
 * keep the order they were added in). Identifiers are copied as UTF-8 into arrays reused across requests: after
 * {@link #clear()}, filling it again allocates only when a request has more or longer items than any before.
 *
 * <p><b>Note:</b> not thread safe; owned and written by one thread (a router keeps one per routing context).
 */
public final class RequestExtras {
    /** Length of one prompt-embeds digest: vLLM's SHA-256 of the block's embeddings. */
    public static final int EMBEDS_DIGEST_LENGTH = 32;

    private byte[] ids = new byte[256];
    private int idsLength;
    private int[] idStart = new int[8];
    private int[] idLength = new int[8];
    private int[] offsets = new int[8];
    private int[] lengths = new int[8];
    private int count;
    private byte[] digests = new byte[0];
    private int digestBlocks;
    private final BlockExtras block = new BlockExtras();

    /**
     * Forgets the items and digests.
     *
     * @return this.
     */
    public RequestExtras clear() {
        idsLength = 0;
        count = 0;
        digestBlocks = 0;
        return this;
    }

    /**
     * @return true when there is no multimodal item and no digest: the request's keys are the plain ones.
     */
    public boolean isEmpty() {
        return count == 0 && digestBlocks == 0;
    }

    /**
     * Adds a multimodal item.
     *
     * @param identifier the item's identifier.
     * @param offset     its first placeholder token, {@code >= 0}.
     * @param length     its number of placeholder tokens, {@code >= 1}.
     * @return this.
     */
    public RequestExtras addMultiModal(final CharSequence identifier, final int offset, final int length) {
        Objects.requireNonNull(identifier, "identifier");
        checkRange(offset, length);
        final int n = Utf8.length(identifier);
        final int p = reserveId(n);
        Utf8.encode(identifier, ids, p);
        insert(p, n, offset, length);
        return this;
    }

    /**
     * Adds a multimodal item whose identifier is given as UTF-8 bytes.
     *
     * @param utf8       identifier bytes.
     * @param idOffset   first identifier byte.
     * @param idLen      identifier length in bytes.
     * @param offset     the item's first placeholder token, {@code >= 0}.
     * @param length     its number of placeholder tokens, {@code >= 1}.
     * @return this.
     */
    public RequestExtras addMultiModal(final byte[] utf8, final int idOffset, final int idLen, final int offset,
        final int length) {
        Objects.checkFromIndexSize(idOffset, idLen, utf8.length);
        checkRange(offset, length);
        final int p = reserveId(idLen);
        System.arraycopy(utf8, idOffset, ids, p, idLen);
        insert(p, idLen, offset, length);
        return this;
    }

    /**
     * Sets the prompt-embeds digests of the first {@code blocks} blocks (vLLM: SHA-256 of each block's slice of the
     * prompt embeddings), {@link #EMBEDS_DIGEST_LENGTH} bytes each, block 0 first.
     *
     * @param source digests.
     * @param offset first byte.
     * @param blocks number of blocks.
     * @return this.
     */
    public RequestExtras promptEmbedsDigests(final byte[] source, final int offset, final int blocks) {
        if (blocks < 0) {
            throw new IllegalArgumentException("blocks must be >= 0: " + blocks);
        }
        final int n = Math.multiplyExact(blocks, EMBEDS_DIGEST_LENGTH);
        Objects.checkFromIndexSize(offset, n, source.length);
        if (digests.length < n) {
            digests = new byte[n];
        }
        System.arraycopy(source, offset, digests, 0, n);
        digestBlocks = blocks;
        return this;
    }

    /**
     * @return number of multimodal items.
     */
    public int itemCount() {
        return count;
    }

    /**
     * @param i item index, in offset order.
     * @return its first placeholder token.
     */
    public int itemOffset(final int i) {
        Objects.checkIndex(i, count);
        return offsets[i];
    }

    /**
     * @param i item index, in offset order.
     * @return its number of placeholder tokens.
     */
    public int itemLength(final int i) {
        Objects.checkIndex(i, count);
        return lengths[i];
    }

    /**
     * @param i item index, in offset order.
     * @return XXH3-64 of its identifier's UTF-8 bytes (to fold the item into other hashes without allocating).
     */
    public long itemIdentifierHash(final int i) {
        Objects.checkIndex(i, count);
        return Xxh3.hash64(ids, idStart[i], idLength[i], 0L);
    }

    /**
     * @return number of blocks with a prompt-embeds digest.
     */
    public int digestBlocks() {
        return digestBlocks;
    }

    /**
     * Fills {@link #block()} with the extras of block {@code blockIndex} = {@code [start, end)}, walking the items
     * from {@code cursor} as vLLM's {@code _gen_mm_extra_hash_keys}: items ending at or before {@code start} are
     * passed, an overlapping item is added with {@code offset - start}, the walk stops at the first item that
     * begins at or after {@code end} or extends past it.
     *
     * @return the cursor for the next block.
     */
    int fill(final int blockIndex, final int start, final int end, final int cursor) {
        final BlockExtras b = block.clear();
        int i = cursor;
        while (i < count) {
            final int off = offsets[i];
            final long itemEnd = (long)off + lengths[i];
            if (end <= off) {
                break;
            }
            if (start >= itemEnd) {
                i++;
                continue;
            }
            b.item(ids, idStart[i], idLength[i], off - start);
            if (end >= itemEnd) {
                i++;
            } else {
                break;
            }
        }
        if (blockIndex < digestBlocks) {
            b.digest(digests, blockIndex * EMBEDS_DIGEST_LENGTH, EMBEDS_DIGEST_LENGTH);
        }
        return i;
    }

    /**
     * @return the block scratch {@link #fill} writes.
     */
    BlockExtras block() {
        return block;
    }

    private static void checkRange(final int offset, final int length) {
        if (offset < 0 || length < 1 || (long)offset + length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("bad multimodal range: offset " + offset + ", length " + length);
        }
    }

    private int reserveId(final int n) {
        final int need = idsLength + n;
        if (need < 0) {
            throw new IllegalArgumentException("identifiers too large");
        }
        if (ids.length < need) {
            ids = Arrays.copyOf(ids, Math.max(need, ids.length * 2));
        }
        return idsLength;
    }

    private void insert(final int idPos, final int idLen, final int offset, final int length) {
        if (count == offsets.length) {
            final int n = count * 2;
            idStart = Arrays.copyOf(idStart, n);
            idLength = Arrays.copyOf(idLength, n);
            offsets = Arrays.copyOf(offsets, n);
            lengths = Arrays.copyOf(lengths, n);
        }
        int i = count;
        while (i > 0 && offsets[i - 1] > offset) {
            idStart[i] = idStart[i - 1];
            idLength[i] = idLength[i - 1];
            offsets[i] = offsets[i - 1];
            lengths[i] = lengths[i - 1];
            i--;
        }
        idStart[i] = idPos;
        idLength[i] = idLen;
        offsets[i] = offset;
        lengths[i] = length;
        idsLength = idPos + idLen;
        count++;
    }
}
