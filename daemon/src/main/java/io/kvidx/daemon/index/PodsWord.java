package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;

/**
 * The writer's half of the inline pods word encoding (the reader's half, {@link IndexDescriptor#inlineCount} and
 * {@link IndexDescriptor#inlineSlot}, is in the layout descriptor): finding, adding and removing a pod slot in an
 * inline list, and testing a slot against a sweep's pod mask.
 *
 * <p>An entry's pods word takes one of three forms (spec: docs/index-layout.md):
 * <pre>
 *   direct cell (at most 64 pods): a plain bitmap, bit s set when pod slot s holds the block
 *
 *   general cell, inline list (1 to 7 holders), bit 63 clear:
 *    byte 7    byte 6    byte 5    byte 4    byte 3    byte 2    byte 1    byte 0
 *   +---------+---------+---------+---------+---------+---------+---------+---------+
 *   | count n | slot 6  | slot 5  | slot 4  | slot 3  | slot 2  | slot 1  | slot 0  |
 *   +---------+---------+---------+---------+---------+---------+---------+---------+
 *   bytes 0 .. n-1 list the holders in no order; the other slot bytes are 0
 *
 *   general cell, overflow (from an 8th holder on, until demoted): PODS_OVERFLOW_FLAG (bit 63) | index of a
 *   bitmap of the shard's {@link OverflowPool}
 * </pre>
 * A sweep's pod mask is four words {@code m0..m3}: word {@code w} holds slots {@code 64w .. 64w+63}, as in an
 * overflow bitmap.
 *
 * <p><b>Note:</b> stateless; the words it returns are stored by {@link EntryTable} under the shard's lock.
 */
final class PodsWord {
    /** The slot bytes of an inline pods word (count byte cleared). */
    static final long INLINE_SLOTS_MASK = 0x00FF_FFFF_FFFF_FFFFL;

    private PodsWord() {
    }

    /**
     * @param pods an inline pods word.
     * @param slot pod slot.
     * @return the index of {@code slot} in the list, or -1 when it is not listed.
     */
    static int inlineIndexOf(final long pods, final int slot) {
        for (int i = 0, count = IndexDescriptor.inlineCount(pods); i < count; i++) {
            if (IndexDescriptor.inlineSlot(pods, i) == slot) {
                return i;
            }
        }
        return -1;
    }

    /**
     * @param pods an inline pods word listing fewer than {@link IndexDescriptor#PODS_INLINE_MAX} slots (0: none).
     * @param slot pod slot, not listed yet.
     * @return the word with {@code slot} appended.
     */
    static long inlineAdd(final long pods, final int slot) {
        final int count = IndexDescriptor.inlineCount(pods);
        return (pods & INLINE_SLOTS_MASK) | ((long) slot << (count << 3)) | ((long) (count + 1) << 56);
    }

    /**
     * @param pods  an inline pods word.
     * @param index 0 .. count-1.
     * @return the word without the slot at {@code index}: the last slot moves into its place.
     */
    static long inlineRemoveAt(final long pods, final int index) {
        final int last = IndexDescriptor.inlineCount(pods) - 1;
        final long lastSlot = IndexDescriptor.inlineSlot(pods, last);
        long word = pods & ~(0xFFL << (last << 3));
        if (index != last) {
            word = (word & ~(0xFFL << (index << 3))) | (lastSlot << (index << 3));
        }
        return (word & INLINE_SLOTS_MASK) | ((long) last << 56);
    }

    /**
     * @return true when {@code slot} is set in the pod mask {@code m0..m3}.
     */
    static boolean inMask(final int slot, final long m0, final long m1, final long m2, final long m3) {
        final long mask = switch (slot >>> 6) {
            case 0 -> m0;
            case 1 -> m1;
            case 2 -> m2;
            default -> m3;
        };
        return (mask & (1L << slot)) != 0;
    }
}
