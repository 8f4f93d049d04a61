package io.kvidx.bench;

import net.openhft.chronicle.values.Array;

/**
 * Chronicle Values interface for a 256-bit pod bitmap (4 x long): Chronicle Map generates a flat 32-byte
 * off-heap layout and a heap implementation that {@code getUsing} copies into without allocating.
 */
public interface PodBitmap {
    /**
     * @param index word 0..3.
     * @param word  the word.
     */
    @Array(length = 4)
    void setWordAt(int index, long word);

    /**
     * @param index word 0..3.
     * @return the word.
     */
    long getWordAt(int index);
}
