package io.kvidx.routing;

/**
 * A request's chain of block keys; key i identifies the prefix of blocks 0..i.
 *
 * <p><b>Note:</b> not thread safe; owned by one {@link RoutingContext}.
 */
public final class BlockKeys {
    private long[] keys = new long[1024];
    private int length;

    /**
     * Copies keys in.
     *
     * @param source keys.
     * @param offset first key.
     * @param count  number of keys.
     */
    public void set(final long[] source, final int offset, final int count) {
        ensureCapacity(count);
        System.arraycopy(source, offset, keys, 0, count);
        length = count;
    }

    /**
     * Makes room for at least {@code capacity} keys (keeps none of the current ones).
     *
     * @param capacity keys needed.
     * @return the buffer to write into; call {@link #length(int)} afterwards.
     */
    public long[] ensureCapacity(final int capacity) {
        if (capacity > keys.length) {
            keys = new long[Math.max(capacity, keys.length * 2)];
        }
        return keys;
    }

    /**
     * @param length keys now valid in the buffer.
     */
    public void length(final int length) {
        if (length < 0 || length > keys.length) {
            throw new IllegalArgumentException("length " + length + " outside [0, " + keys.length + "]");
        }
        this.length = length;
    }

    /**
     * @return the buffer (valid up to {@link #length()}).
     */
    public long[] keys() {
        return keys;
    }

    /**
     * @return number of keys.
     */
    public int length() {
        return length;
    }
}
