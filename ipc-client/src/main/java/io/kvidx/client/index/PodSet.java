package io.kvidx.client.index;

/**
 * A mutable set of pod slots (0..255) as a 256-bit bitmap, used to pass candidate pods to a query.
 *
 * <p><b>Note:</b> not thread safe; a router keeps one per thread or per request context.
 */
public final class PodSet {
    private final long[] words = new long[IndexDescriptor.POD_WORDS];

    /**
     * @return a set holding every slot 0..255.
     */
    public static PodSet all() {
        final PodSet set = new PodSet();
        set.addAll();
        return set;
    }

    /**
     * @param slot pod slot.
     * @return this.
     */
    public PodSet add(final int slot) {
        check(slot);
        words[slot >>> 6] |= 1L << slot;
        return this;
    }

    /**
     * @param slot pod slot.
     * @return this.
     */
    public PodSet remove(final int slot) {
        check(slot);
        words[slot >>> 6] &= ~(1L << slot);
        return this;
    }

    /**
     * @param slot pod slot.
     * @return true when the slot is in the set.
     */
    public boolean contains(final int slot) {
        check(slot);
        return (words[slot >>> 6] & (1L << slot)) != 0;
    }

    /**
     * @return this, holding every slot.
     */
    public PodSet addAll() {
        java.util.Arrays.fill(words, -1L);
        return this;
    }

    /**
     * @return this, empty.
     */
    public PodSet clear() {
        java.util.Arrays.fill(words, 0L);
        return this;
    }

    /**
     * @return number of slots in the set.
     */
    public int size() {
        int n = 0;
        for (final long w : words) {
            n += Long.bitCount(w);
        }
        return n;
    }

    /**
     * @param index word index 0..3.
     * @return the bitmap word holding slots index*64 .. index*64+63.
     */
    public long word(final int index) {
        return words[index];
    }

    private static void check(final int slot) {
        if (slot < 0 || slot >= IndexDescriptor.MAX_PODS) {
            throw new IllegalArgumentException("pod slot must be in [0, " + IndexDescriptor.MAX_PODS + "): " + slot);
        }
    }
}
