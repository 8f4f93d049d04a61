package io.kvidx.daemon.state;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static io.kvidx.daemon.state.PodBlockMapDescriptor.CLOCK_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.COUNT_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_HASH_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_LENGTH;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_MEDIA_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_STAMP_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.HEADER_LENGTH;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.LONG_LAYOUT;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.entry;

/**
 * Flyweight over the hash table of a mapped {@link PodBlockMap} file ({@link PodBlockMapDescriptor}): open
 * addressing with linear probing from {@code mix(hash)}, backward-shift deletion, and the mapping count of the
 * header, which every insertion and deletion keeps. It knows where an engine hash lives, not what its entry means
 * (router key, store stamp and media bits are the map's): {@link PodBlockMap} reads and writes entry fields at the
 * slots it returns. Re-wrapped when the map grows into a new file.
 *
 * <p>A crash can leave a backward shift half done (an entry twice, in its old and new slot):
 * {@link #reinsertAll(int)} repairs a re-used file.
 *
 * <p><b>Note:</b> one writer: the pod's writer agent, through its {@link PodBlockMap}. No other thread reads it.
 */
final class PodBlockTable {
    private MemorySegment s;
    private int slots;
    private int mask;

    /**
     * @param s     the mapped file.
     * @param slots its table slots (a power of two).
     */
    void wrap(final MemorySegment s, final int slots) {
        this.s = s;
        this.slots = slots;
        this.mask = slots - 1;
    }

    /**
     * @return the mapped file.
     */
    MemorySegment segment() {
        return s;
    }

    /**
     * @return table slots (a power of two).
     */
    int slots() {
        return slots;
    }

    /**
     * @return table slots - 1.
     */
    int mask() {
        return mask;
    }

    /**
     * @return mappings held.
     */
    int size() {
        return s.get(ValueLayout.JAVA_INT, COUNT_OFFSET);
    }

    /**
     * @param hash engine hash.
     * @return its slot, or -1 when absent.
     */
    int find(final long hash) {
        final MemorySegment s = this.s;
        int i = home(hash);
        for (int n = 0; n < slots; n++) {
            final long e = entry(i);
            if (s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET) == 0) {
                return -1;
            }
            if (s.get(LONG_LAYOUT, e + ENTRY_HASH_OFFSET) == hash) {
                return i;
            }
            i = (i + 1) & mask;
        }
        return -1;
    }

    /**
     * Probes for a hash up to the empty entry that ends its run; the table must have an empty entry (its load stays
     * below 1).
     *
     * @param hash engine hash.
     * @return its slot, or {@code ~slot} (negative) of the empty entry where it would go.
     */
    int probe(final long hash) {
        final MemorySegment s = this.s;
        int i = home(hash);
        while (true) {
            final long e = entry(i);
            if (s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET) == 0) {
                return ~i;
            }
            if (s.get(LONG_LAYOUT, e + ENTRY_HASH_OFFSET) == hash) {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /**
     * Removes the entry at a slot by shifting back the entries after it whose probe run crosses it, and decrements
     * the mapping count.
     *
     * @param at a held slot.
     */
    void delete(final int at) {
        final MemorySegment s = this.s;
        int hole = at;
        int j = at;
        while (true) {
            j = (j + 1) & mask;
            final long ej = entry(j);
            if (s.get(LONG_LAYOUT, ej + ENTRY_KEY_OFFSET) == 0) {
                break;
            }
            final int home = home(s.get(LONG_LAYOUT, ej + ENTRY_HASH_OFFSET));
            final boolean stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                final long eh = entry(hole);
                s.set(LONG_LAYOUT, eh + ENTRY_HASH_OFFSET, s.get(LONG_LAYOUT, ej + ENTRY_HASH_OFFSET));
                s.set(LONG_LAYOUT, eh + ENTRY_KEY_OFFSET, s.get(LONG_LAYOUT, ej + ENTRY_KEY_OFFSET));
                s.set(LONG_LAYOUT, eh + ENTRY_STAMP_OFFSET, s.get(LONG_LAYOUT, ej + ENTRY_STAMP_OFFSET));
                s.set(LONG_LAYOUT, eh + ENTRY_MEDIA_OFFSET, s.get(LONG_LAYOUT, ej + ENTRY_MEDIA_OFFSET));
                hole = j;
            }
        }
        // Four plain stores: a slice's fill or a bulk copy costs more than the entry's 32 bytes.
        final long eh = entry(hole);
        s.set(LONG_LAYOUT, eh + ENTRY_KEY_OFFSET, 0L);
        s.set(LONG_LAYOUT, eh + ENTRY_HASH_OFFSET, 0L);
        s.set(LONG_LAYOUT, eh + ENTRY_STAMP_OFFSET, 0L);
        s.set(LONG_LAYOUT, eh + ENTRY_MEDIA_OFFSET, 0L);
        s.set(ValueLayout.JAVA_INT, COUNT_OFFSET, size() - 1);
    }

    /**
     * Empties every entry and sets the mapping count to 0.
     */
    void clear() {
        s.asSlice(HEADER_LENGTH, (long) slots * ENTRY_LENGTH).fill((byte) 0);
        s.set(ValueLayout.JAVA_INT, COUNT_OFFSET, 0);
    }

    /**
     * Copies every entry into the empty table of a larger file, each at its slot there, and sets that file's
     * mapping count.
     *
     * @param b        the larger file, its entries empty.
     * @param newSlots its table slots (a power of two).
     */
    void rehashInto(final MemorySegment b, final int newSlots) {
        final int newMask = newSlots - 1;
        int count = 0;
        for (int i = 0; i < slots; i++) {
            final long e = entry(i);
            if (s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET) == 0) {
                continue;
            }
            int j = homeIn(s.get(LONG_LAYOUT, e + ENTRY_HASH_OFFSET), newMask);
            while (b.get(LONG_LAYOUT, entry(j) + ENTRY_KEY_OFFSET) != 0) {
                j = (j + 1) & newMask;
            }
            MemorySegment.copy(s, e, b, entry(j), ENTRY_LENGTH);
            count++;
        }
        b.set(ValueLayout.JAVA_INT, COUNT_OFFSET, count);
    }

    /**
     * Re-inserts every entry of a re-used file: repairs a shift a crash left half done, drops duplicates, keeps at
     * most {@code maxBlocks} entries, and sets the store clock to at least the newest stamp.
     *
     * @param maxBlocks most mappings.
     */
    void reinsertAll(final int maxBlocks) {
        final MemorySegment s = this.s;
        final long[] all = new long[4 * Math.min(slots, maxBlocks + 16)];
        // (A re-used file may be any power-of-two size up to the largest; it keeps its size.)
        int n = 0;
        for (int i = 0; i < slots && n < all.length / 4; i++) {
            final long e = entry(i);
            final long key = s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET);
            if (key != 0) {
                all[4 * n] = s.get(LONG_LAYOUT, e + ENTRY_HASH_OFFSET);
                all[4 * n + 1] = key;
                all[4 * n + 2] = s.get(LONG_LAYOUT, e + ENTRY_STAMP_OFFSET);
                all[4 * n + 3] = s.get(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET);
                n++;
            }
        }
        clear();
        long clock = s.get(LONG_LAYOUT, CLOCK_OFFSET);
        int count = 0;
        for (int k = 0; k < n && count < maxBlocks; k++) {
            final long hash = all[4 * k];
            final int i = probe(hash);
            if (i >= 0) {
                continue;
            }
            final long e = entry(~i);
            s.set(LONG_LAYOUT, e + ENTRY_HASH_OFFSET, hash);
            s.set(LONG_LAYOUT, e + ENTRY_KEY_OFFSET, all[4 * k + 1]);
            s.set(LONG_LAYOUT, e + ENTRY_STAMP_OFFSET, all[4 * k + 2]);
            s.set(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET, all[4 * k + 3]);
            clock = Math.max(clock, all[4 * k + 2]);
            count++;
        }
        s.set(ValueLayout.JAVA_INT, COUNT_OFFSET, count);
        s.set(LONG_LAYOUT, CLOCK_OFFSET, clock);
    }

    /**
     * Calls {@code visitor} for every mapping (cold: checks and tests).
     *
     * @param visitor receives engine hash, router key, media bits.
     */
    void forEach(final PodBlockMap.Visitor visitor) {
        for (int i = 0; i < slots; i++) {
            final long e = entry(i);
            final long key = s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET);
            if (key != 0) {
                visitor.visit(s.get(LONG_LAYOUT, e + ENTRY_HASH_OFFSET), key,
                    s.get(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET) & ~PodBlockMapDescriptor.MEDIA_TIERED);
            }
        }
    }

    void retier(final PodBlockMap.TierVisitor visitor) {
        for (int i = 0; i < slots; i++) {
            final long e = entry(i);
            final long key = s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET);
            if (key != 0) {
                final long media = s.get(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET) & ~PodBlockMapDescriptor.MEDIA_TIERED;
                final boolean tiered = visitor.visit(s.get(LONG_LAYOUT, e + ENTRY_HASH_OFFSET), key, media);
                s.set(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET, tiered ? media | PodBlockMapDescriptor.MEDIA_TIERED : media);
            }
        }
    }

    /**
     * @param hash engine hash.
     * @return its home slot.
     */
    int home(final long hash) {
        return homeIn(hash, mask);
    }

    private static int homeIn(final long hash, final int mask) {
        return (int) ((hash * 0x9E37_79B9_7F4A_7C15L) >>> 32) & mask;
    }
}
