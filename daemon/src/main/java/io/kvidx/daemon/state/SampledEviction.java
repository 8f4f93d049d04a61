package io.kvidx.daemon.state;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_HASH_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_MEDIA_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_STAMP_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.HAND_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.LONG_LAYOUT;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.MEDIA_TIERED;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.entry;

/**
 * A {@link PodBlockMap}'s eviction: chooses the least recently stored of a few mappings sampled from the eviction
 * hand on (which it moves on, in the file's header), and removes the chosen one in a second step, so that the caller
 * can remove its block from the index in between. Holds the chosen slot and its engine hash.
 *
 * <p><b>Note:</b> one writer: the pod's writer agent, through its {@link PodBlockMap}. No other thread reads it.
 */
final class SampledEviction {
    /** Mappings sampled per choice. */
    static final int SAMPLES = 8;

    private final PodBlockTable table;
    private long evictedHash;
    private boolean evictedTiered;
    private int selected = -1;

    /**
     * @param table the map's table.
     */
    SampledEviction(final PodBlockTable table) {
        this.table = table;
    }

    /**
     * Chooses the least recently stored of a few sampled mappings, without removing it.
     *
     * @return its router key (its engine hash is {@link #evictedHash()}), or 0 when the map is empty.
     */
    long selectOldest() {
        final MemorySegment s = table.segment();
        final int slots = table.slots();
        final int mask = table.mask();
        int hand = s.get(ValueLayout.JAVA_INT, HAND_OFFSET) & mask;
        int victim = -1;
        long oldest = Long.MAX_VALUE;
        int seen = 0;
        for (int n = 0; n < slots && seen < SAMPLES; n++) {
            final long e = entry(hand);
            if (s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET) != 0) {
                seen++;
                final long stamp = s.get(LONG_LAYOUT, e + ENTRY_STAMP_OFFSET);
                if (stamp < oldest) {
                    oldest = stamp;
                    victim = hand;
                }
            }
            hand = (hand + 1) & mask;
        }
        s.set(ValueLayout.JAVA_INT, HAND_OFFSET, hand);
        selected = victim;
        if (victim < 0) {
            return 0;
        }
        evictedHash = s.get(LONG_LAYOUT, entry(victim) + ENTRY_HASH_OFFSET);
        evictedTiered = (s.get(LONG_LAYOUT, entry(victim) + ENTRY_MEDIA_OFFSET) & MEDIA_TIERED) != 0;
        return s.get(LONG_LAYOUT, entry(victim) + ENTRY_KEY_OFFSET);
    }

    /**
     * Removes the mapping {@link #selectOldest()} chose (no-op when it chose none).
     */
    void evictSelected() {
        if (selected >= 0) {
            table.delete(selected);
            selected = -1;
        }
    }

    /**
     * Forgets the choice: a later {@link #evictSelected()} without a new {@link #selectOldest()} removes nothing.
     */
    void unselect() {
        selected = -1;
    }

    /**
     * @return the engine hash of the mapping {@link #selectOldest()} chose last.
     */
    long evictedHash() {
        return evictedHash;
    }

    /**
     * @return whether the mapping {@link #selectOldest()} chose last has a host tier map entry.
     */
    boolean evictedTiered() {
        return evictedTiered;
    }
}
