package io.kvidx.routing;

/**
 * Token ids of a request, in a growable array reused across decisions.
 *
 * <p><b>Note:</b> not thread safe; owned by one {@link RoutingContext}.
 */
public final class TokenIds {
    private int[] ids = new int[4096];
    private int length;

    /**
     * Copies the tokens in (grows the buffer only when a longer prompt arrives).
     *
     * @param tokens source.
     * @param offset first token.
     * @param count  number of tokens.
     */
    public void set(final int[] tokens, final int offset, final int count) {
        if (count > ids.length) {
            ids = new int[Math.max(count, ids.length * 2)];
        }
        System.arraycopy(tokens, offset, ids, 0, count);
        length = count;
    }

    /**
     * Makes room for at least {@code capacity} tokens (keeps none of the current ones), for a writer that fills the
     * buffer itself (e.g. a tokenizer).
     *
     * @param capacity tokens needed.
     * @return the buffer to write into; call {@link #length(int)} afterwards.
     */
    public int[] ensureCapacity(final int capacity) {
        if (capacity > ids.length) {
            ids = new int[Math.max(capacity, ids.length * 2)];
        }
        return ids;
    }

    /**
     * @param length tokens now valid in the buffer.
     */
    public void length(final int length) {
        if (length < 0 || length > ids.length) {
            throw new IllegalArgumentException("length " + length + " outside [0, " + ids.length + "]");
        }
        this.length = length;
    }

    /**
     * @return the buffer (valid up to {@link #length()}).
     */
    public int[] ids() {
        return ids;
    }

    /**
     * @return number of tokens.
     */
    public int length() {
        return length;
    }

    /**
     * Forgets the tokens.
     */
    public void clear() {
        length = 0;
    }
}
