package io.kvidx.daemon.state;

import io.kvidx.ffm.MappedRegion;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;

/**
 * One pod's engine hash to router key (and storage media) map, in a mapped file of the cell's state directory so
 * that a restarted daemon can apply the pod's next BlockRemoved events (which carry only engine hashes). The table
 * starts at 4,096 slots and doubles (into a new file renamed over the old) while it is more than 70 % full, up to
 * the size for {@code maxBlocks} mappings, so that it stays as dense as the pod's live blocks; at most
 * {@code maxBlocks} mappings; storing one more evicts the least recently
 * stored mapping (sampled), and the caller removes that block from the index for the pod, so the map and the
 * index never disagree and a pod that never removes blocks cannot grow the daemon (ADR 0007).
 *
 * <pre>
 *   0 +---------------------------------------------------------------+
 *     | magic u64 = "KVIDXPB1"                                        |
 *   8 | table slots i32 (power of two)   | max blocks i32             |
 *  16 | pod generation i32               | pod id length i32          |
 *  24 | pod id, UTF-8, 112 bytes (whose slot and generation own it)   |
 * 136 | mappings i32                     | main KV cache group + 1 i32 |
 * 144 | store clock u64                                               |
 * 152 | eviction hand i32 | reserved .. 255                           |
 * 256 +---------------------------------------------------------------+
 *     | entries, 32 bytes each: engine hash u64 | router key u64      |
 *     |   (0 = empty) | store stamp u64 | media bits u64             |
 *     +---------------------------------------------------------------+
 * </pre>
 * Open addressing with linear probing from {@code mix(hash)}, backward-shift deletion. A crash can leave a shift
 * half done: {@link #open} re-inserts every entry of a re-used file, which also drops duplicates.
 *
 * <p><b>Note:</b> one writer: the pod's writer agent. No other thread reads it.
 */
public final class PodBlockMap implements AutoCloseable {
    /** Native-order 64-bit loads and stores without the alignment check (every field is 8-byte aligned). */
    private static final ValueLayout.OfLong LONG_LAYOUT = ValueLayout.JAVA_LONG_UNALIGNED;
    static final long MAGIC = 0x3142_5058_4449_564BL;
    static final int HEADER_LENGTH = 256;
    static final int ENTRY_LENGTH = 32;
    private static final int SLOTS_OFFSET = 8;
    private static final int MAX_BLOCKS_OFFSET = 12;
    private static final int GENERATION_OFFSET = 16;
    private static final int POD_ID_LENGTH_OFFSET = 20;
    private static final int POD_ID_OFFSET = 24;
    private static final int POD_ID_MAX = 112;
    private static final int COUNT_OFFSET = 136;
    private static final int MAIN_GROUP_OFFSET = 140;
    private static final int CLOCK_OFFSET = 144;
    private static final int HAND_OFFSET = 152;
    private static final int EVICTION_SAMPLES = 8;
    private static final double MAX_LOAD = 0.7;

    private final Path file;
    private MappedRegion region;
    private MemorySegment s;
    private int slots;
    private int mask;
    private final int maxSlots;
    private final int maxBlocks;
    private final boolean restored;
    private long evictedHash;
    private int selected = -1;
    private boolean lastReleaseRemoved;
    private long lastMedia;

    private PodBlockMap(final Path file, final MappedRegion region, final int slots, final int maxBlocks,
        final boolean restored) {
        this.file = file;
        this.region = region;
        this.s = region.segment();
        this.slots = slots;
        this.mask = slots - 1;
        this.maxSlots = slotsFor(maxBlocks);
        this.maxBlocks = maxBlocks;
        this.restored = restored;
    }

    /**
     * @param maxBlocks most mappings.
     * @return the table slots a map of that size uses (a power of two, load at most 0.7).
     */
    public static int slotsFor(final int maxBlocks) {
        final long wanted = (long) Math.ceil(maxBlocks / MAX_LOAD);
        return (int) Math.max(16, Long.highestOneBit(Math.max(1, wanted - 1)) << 1);
    }

    /**
     * @param maxBlocks most mappings.
     * @return the largest file length of such a map (it starts small and doubles as it fills).
     */
    public static long fileLength(final int maxBlocks) {
        return HEADER_LENGTH + (long) slotsFor(maxBlocks) * ENTRY_LENGTH;
    }

    /** Slots a new map starts with: small, so that a pod holding few blocks touches little memory. */
    private static final int INITIAL_SLOTS = 4096;

    /**
     * Opens a pod's map: the existing file is re-used (and its entries re-inserted) when it belongs to the same pod
     * id and slot generation and has the same size; otherwise the map starts empty.
     *
     * @param file       the map's file.
     * @param podId      the pod.
     * @param generation the generation of the pod's index slot.
     * @param maxBlocks  most mappings, 1..2^28.
     * @return the map.
     */
    public static PodBlockMap open(final Path file, final String podId, final int generation, final int maxBlocks) {
        if (maxBlocks < 1 || maxBlocks > (1 << 28)) {
            throw new IllegalArgumentException("max blocks per pod must be in [1, 2^28]: " + maxBlocks);
        }
        final byte[] id = podId.getBytes(StandardCharsets.UTF_8);
        if (id.length > POD_ID_MAX) {
            throw new IllegalArgumentException("pod id longer than " + POD_ID_MAX + " bytes: " + podId);
        }
        final int maxSlots = slotsFor(maxBlocks);
        try {
            final long size = Files.exists(file) ? Files.size(file) : 0;
            final long found = (size - HEADER_LENGTH) / ENTRY_LENGTH;
            if (size > HEADER_LENGTH && (size - HEADER_LENGTH) % ENTRY_LENGTH == 0 && Long.bitCount(found) == 1
                && found <= maxSlots) {
                final int slots = (int) found;
                final MappedRegion region = MappedRegion.mapReadWrite(file, size);
                final MemorySegment m = region.segment();
                if (m.get(LONG_LAYOUT, 0) == MAGIC && m.get(ValueLayout.JAVA_INT, SLOTS_OFFSET) == slots
                    && m.get(ValueLayout.JAVA_INT, MAX_BLOCKS_OFFSET) == maxBlocks
                    && m.get(ValueLayout.JAVA_INT, GENERATION_OFFSET) == generation
                    && m.get(ValueLayout.JAVA_INT, POD_ID_LENGTH_OFFSET) == id.length
                    && Arrays.equals(id, m.asSlice(POD_ID_OFFSET, id.length).toArray(ValueLayout.JAVA_BYTE))) {
                    final PodBlockMap map = new PodBlockMap(file, region, slots, maxBlocks, true);
                    map.reinsertAll();
                    return map;
                }
                region.close();
            }
            final int slots = Math.min(INITIAL_SLOTS, maxSlots);
            final MappedRegion region = createFile(file, slots, maxBlocks, generation, id, 0);
            return new PodBlockMap(file, region, slots, maxBlocks, false);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot open the block map " + file, ex);
        }
    }

    private static MappedRegion createFile(final Path file, final int slots, final int maxBlocks,
        final int generation, final byte[] id, final long clock) throws IOException {
        final MappedRegion region = MappedRegion.createPrivate(file, HEADER_LENGTH + (long) slots * ENTRY_LENGTH);
        final MemorySegment m = region.segment();
        m.set(ValueLayout.JAVA_INT, SLOTS_OFFSET, slots);
        m.set(ValueLayout.JAVA_INT, MAX_BLOCKS_OFFSET, maxBlocks);
        m.set(ValueLayout.JAVA_INT, GENERATION_OFFSET, generation);
        m.set(ValueLayout.JAVA_INT, POD_ID_LENGTH_OFFSET, id.length);
        MemorySegment.copy(id, 0, m, ValueLayout.JAVA_BYTE, POD_ID_OFFSET, id.length);
        m.set(LONG_LAYOUT, CLOCK_OFFSET, clock);
        m.set(LONG_LAYOUT, 0, MAGIC);
        return region;
    }

    /**
     * Doubles the table: builds the larger one in a new file, re-inserts every entry, then renames it over the old
     * one (a crash leaves the old or the new file, each whole), so the table stays as dense as the pod's live blocks
     * and its cache footprint follows them.
     */
    private void grow() {
        final Path temp = file.resolveSibling(file.getFileName() + ".grow");
        final int newSlots = slots * 2;
        final byte[] id = s.asSlice(POD_ID_OFFSET, s.get(ValueLayout.JAVA_INT, POD_ID_LENGTH_OFFSET))
            .toArray(ValueLayout.JAVA_BYTE);
        try {
            final MappedRegion bigger = createFile(temp, newSlots, maxBlocks,
                s.get(ValueLayout.JAVA_INT, GENERATION_OFFSET), id, s.get(LONG_LAYOUT, CLOCK_OFFSET));
            final MemorySegment b = bigger.segment();
            b.set(ValueLayout.JAVA_INT, MAIN_GROUP_OFFSET, s.get(ValueLayout.JAVA_INT, MAIN_GROUP_OFFSET));
            final int newMask = newSlots - 1;
            int count = 0;
            for (int i = 0; i < slots; i++) {
                final long e = entry(i);
                if (s.get(LONG_LAYOUT, e + 8) == 0) {
                    continue;
                }
                int j = homeIn(s.get(LONG_LAYOUT, e), newMask);
                while (b.get(LONG_LAYOUT, entry(j) + 8) != 0) {
                    j = (j + 1) & newMask;
                }
                MemorySegment.copy(s, e, b, entry(j), ENTRY_LENGTH);
                count++;
            }
            b.set(ValueLayout.JAVA_INT, COUNT_OFFSET, count);
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            region.close();
            region = bigger;
            s = b;
            slots = newSlots;
            mask = newMask;
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot grow the block map " + file + " to " + newSlots + " slots", ex);
        }
    }

    /**
     * @return true when the map was re-used from a previous daemon (its mappings are the pod's), false when new.
     */
    public boolean restored() {
        return restored;
    }

    /**
     * @return mappings held.
     */
    public int size() {
        return s.get(ValueLayout.JAVA_INT, COUNT_OFFSET);
    }

    /**
     * @return most mappings.
     */
    public int maxBlocks() {
        return maxBlocks;
    }

    /**
     * @return true when one more new mapping needs an eviction first ({@link #evictOldest()}).
     */
    public boolean isFull() {
        return size() >= maxBlocks;
    }

    /**
     * @param hash engine hash.
     * @return its router key, or 0 when absent.
     */
    public long get(final long hash) {
        final MemorySegment s = this.s;
        final int i = find(hash);
        return i < 0 ? 0 : s.get(LONG_LAYOUT, entry(i) + 8);
    }

    /**
     * @param hash engine hash.
     * @return its media bits, or 0 when absent.
     */
    public long media(final long hash) {
        final MemorySegment s = this.s;
        final int i = find(hash);
        return i < 0 ? 0 : s.get(LONG_LAYOUT, entry(i) + 24);
    }

    /**
     * Loads the home entry of a hash (to overlap its cache miss with others').
     *
     * @param hash engine hash.
     * @return a value to consume.
     */
    public long touch(final long hash) {
        final MemorySegment s = this.s;
        return s.get(LONG_LAYOUT, entry(home(hash)));
    }

    /**
     * Records that the pod holds a block on one more medium: maps the hash to its router key and ORs the medium's
     * bit into its media bits. The map must not be full when the hash is new.
     *
     * @param hash      engine hash.
     * @param routerKey router key, not 0.
     * @param mediumBit the medium's bit.
     * @return the previous router key, or 0 when the hash was new.
     */
    public long store(final long hash, final long routerKey, final long mediumBit) {
        final MemorySegment s = this.s;
        if (routerKey == 0) {
            throw new IllegalArgumentException("router key 0 marks empty entries");
        }
        final long clock = s.get(LONG_LAYOUT, CLOCK_OFFSET) + 1;
        s.set(LONG_LAYOUT, CLOCK_OFFSET, clock);
        int i = home(hash);
        while (true) {
            final long e = entry(i);
            final long key = s.get(LONG_LAYOUT, e + 8);
            if (key == 0) {
                final int count = s.get(ValueLayout.JAVA_INT, COUNT_OFFSET);
                if (count >= maxBlocks) {
                    throw new IllegalStateException("block map full: evict before storing a new hash");
                }
                if (count + 1 > slots * MAX_LOAD && slots < maxSlots) {
                    grow();
                    return store(hash, routerKey, mediumBit);
                }
                s.set(LONG_LAYOUT, e, hash);
                s.set(LONG_LAYOUT, e + 16, clock);
                s.set(LONG_LAYOUT, e + 24, mediumBit);
                s.set(LONG_LAYOUT, e + 8, routerKey);
                s.set(ValueLayout.JAVA_INT, COUNT_OFFSET, count + 1);
                lastMedia = mediumBit;
                return 0;
            }
            if (s.get(LONG_LAYOUT, e) == hash) {
                final long media = s.get(LONG_LAYOUT, e + 24) | mediumBit;
                s.set(LONG_LAYOUT, e + 8, routerKey);
                s.set(LONG_LAYOUT, e + 16, clock);
                s.set(LONG_LAYOUT, e + 24, media);
                lastMedia = media;
                return key;
            }
            i = (i + 1) & mask;
        }
    }

    /**
     * Records that the pod dropped a block from one medium: clears the medium's bit, and removes the mapping when
     * no medium holds the block any more ({@link #lastReleaseRemoved()} tells which).
     *
     * @param hash      engine hash.
     * @param mediumBit the medium's bit.
     * @return the block's router key, or 0 when the hash was not mapped.
     */
    public long release(final long hash, final long mediumBit) {
        final MemorySegment s = this.s;
        lastReleaseRemoved = false;
        lastMedia = 0;
        final int i = find(hash);
        if (i < 0) {
            return 0;
        }
        final long e = entry(i);
        final long key = s.get(LONG_LAYOUT, e + 8);
        final long left = s.get(LONG_LAYOUT, e + 24) & ~mediumBit;
        lastMedia = left;
        if (left != 0) {
            s.set(LONG_LAYOUT, e + 24, left);
            return key;
        }
        delete(i);
        lastReleaseRemoved = true;
        return key;
    }

    /**
     * @return the media bits of the block the last {@link #store} or {@link #release} changed, after the change
     * (0 when the release removed the mapping or found none): saves a second lookup to learn them.
     */
    public long lastMedia() {
        return lastMedia;
    }

    /**
     * @return true when the last {@link #release} removed the mapping (no medium holds the block any more).
     */
    public boolean lastReleaseRemoved() {
        return lastReleaseRemoved;
    }

    /**
     * @param hash engine hash.
     * @return the router key it mapped to, or 0 when absent.
     */
    public long remove(final long hash) {
        final int i = find(hash);
        if (i < 0) {
            return 0;
        }
        final long key = s.get(LONG_LAYOUT, entry(i) + 8);
        delete(i);
        return key;
    }

    /**
     * @param hash      engine hash.
     * @param mediumBit a medium's bit.
     * @return the hash's router key when releasing that medium would remove its mapping (it is mapped and no other
     * medium holds it), else 0. Changes nothing: the caller removes the block from the index first, then
     * {@link #release}s it, so that a crash in between leaves a mapping the replayed removal finds again.
     */
    public long keyIfLastMedium(final long hash, final long mediumBit) {
        final MemorySegment s = this.s;
        final int i = find(hash);
        if (i < 0) {
            return 0;
        }
        final long e = entry(i);
        return (s.get(LONG_LAYOUT, e + 24) & ~mediumBit) == 0 ? s.get(LONG_LAYOUT, e + 8) : 0;
    }

    /**
     * Chooses the least recently stored of a few sampled mappings, without removing it: the caller removes its
     * block from the index first, then calls {@link #evictSelected()}, so that a crash in between leaves a mapping
     * (which a later eviction or removal takes out of the index again) rather than an indexed block no mapping
     * reaches.
     *
     * @return its router key (its engine hash is {@link #evictedHash()}), or 0 when the map is empty.
     */
    public long selectOldest() {
        int hand = s.get(ValueLayout.JAVA_INT, HAND_OFFSET) & mask;
        int victim = -1;
        long oldest = Long.MAX_VALUE;
        int seen = 0;
        for (int n = 0; n < slots && seen < EVICTION_SAMPLES; n++) {
            final long e = entry(hand);
            if (s.get(LONG_LAYOUT, e + 8) != 0) {
                seen++;
                final long stamp = s.get(LONG_LAYOUT, e + 16);
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
        evictedHash = s.get(LONG_LAYOUT, entry(victim));
        return s.get(LONG_LAYOUT, entry(victim) + 8);
    }

    /**
     * Removes the mapping {@link #selectOldest()} chose (no-op when it chose none).
     */
    public void evictSelected() {
        if (selected >= 0) {
            delete(selected);
            selected = -1;
        }
    }

    /**
     * Removes the least recently stored of a few sampled mappings.
     *
     * @return its router key (its engine hash is {@link #evictedHash()}), or 0 when the map is empty.
     */
    public long evictOldest() {
        final long key = selectOldest();
        evictSelected();
        return key;
    }

    /**
     * @return the engine hash of the mapping {@link #selectOldest()} chose last.
     */
    public long evictedHash() {
        return evictedHash;
    }

    /**
     * The pod's main KV cache group: the group whose blocks the index holds (see the writer's
     * {@code AttentionGroups}); kept here so that a restarted daemon applies the group's removals before the
     * engine's next BlockStored names the group's kind again.
     *
     * @return the group index, or -1 when not learned yet.
     */
    public int mainGroup() {
        return s.get(ValueLayout.JAVA_INT, MAIN_GROUP_OFFSET) - 1;
    }

    /**
     * @param group the pod's main KV cache group (0 or more), or -1 to forget it.
     */
    public void mainGroup(final int group) {
        if (group < -1 || group == Integer.MAX_VALUE) {
            throw new IllegalArgumentException("KV cache group out of range: " + group);
        }
        s.set(ValueLayout.JAVA_INT, MAIN_GROUP_OFFSET, group + 1);
    }

    /**
     * Removes every mapping.
     */
    public void clear() {
        if (size() > 0) {
            s.asSlice(HEADER_LENGTH, (long) slots * ENTRY_LENGTH).fill((byte) 0);
            s.set(ValueLayout.JAVA_INT, COUNT_OFFSET, 0);
        }
    }

    /**
     * Calls {@code visitor} for every mapping (cold: checks and tests).
     *
     * @param visitor receives engine hash, router key, media bits.
     */
    public void forEach(final Visitor visitor) {
        for (int i = 0; i < slots; i++) {
            final long e = entry(i);
            final long key = s.get(LONG_LAYOUT, e + 8);
            if (key != 0) {
                visitor.visit(s.get(LONG_LAYOUT, e), key, s.get(LONG_LAYOUT, e + 24));
            }
        }
    }

    /** Receives mappings. */
    @FunctionalInterface
    public interface Visitor {
        /**
         * @param hash      engine hash.
         * @param routerKey router key.
         * @param media     media bits.
         */
        void visit(long hash, long routerKey, long media);
    }

    private int find(final long hash) {
        final MemorySegment s = this.s;
        int i = home(hash);
        for (int n = 0; n < slots; n++) {
            final long e = entry(i);
            if (s.get(LONG_LAYOUT, e + 8) == 0) {
                return -1;
            }
            if (s.get(LONG_LAYOUT, e) == hash) {
                return i;
            }
            i = (i + 1) & mask;
        }
        return -1;
    }

    private void delete(final int at) {
        final MemorySegment s = this.s;
        int hole = at;
        int j = at;
        while (true) {
            j = (j + 1) & mask;
            final long ej = entry(j);
            if (s.get(LONG_LAYOUT, ej + 8) == 0) {
                break;
            }
            final int home = home(s.get(LONG_LAYOUT, ej));
            final boolean stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                MemorySegment.copy(s, ej, s, entry(hole), ENTRY_LENGTH);
                hole = j;
            }
        }
        s.asSlice(entry(hole), ENTRY_LENGTH).fill((byte) 0);
        s.set(ValueLayout.JAVA_INT, COUNT_OFFSET, size() - 1);
    }

    /** Re-inserts every entry of a re-used file: repairs a shift a crash left half done, drops duplicates. */
    private void reinsertAll() {
        final long[] all = new long[4 * Math.min(slots, maxBlocks + 16)];
        // (A re-used file may be any power-of-two size up to the largest; it keeps its size.)
        int n = 0;
        for (int i = 0; i < slots && n < all.length / 4; i++) {
            final long e = entry(i);
            final long key = s.get(LONG_LAYOUT, e + 8);
            if (key != 0) {
                all[4 * n] = s.get(LONG_LAYOUT, e);
                all[4 * n + 1] = key;
                all[4 * n + 2] = s.get(LONG_LAYOUT, e + 16);
                all[4 * n + 3] = s.get(LONG_LAYOUT, e + 24);
                n++;
            }
        }
        s.asSlice(HEADER_LENGTH, (long) slots * ENTRY_LENGTH).fill((byte) 0);
        s.set(ValueLayout.JAVA_INT, COUNT_OFFSET, 0);
        long clock = s.get(LONG_LAYOUT, CLOCK_OFFSET);
        int count = 0;
        for (int k = 0; k < n && count < maxBlocks; k++) {
            final long hash = all[4 * k];
            int i = home(hash);
            boolean duplicate = false;
            while (s.get(LONG_LAYOUT, entry(i) + 8) != 0) {
                if (s.get(LONG_LAYOUT, entry(i)) == hash) {
                    duplicate = true;
                    break;
                }
                i = (i + 1) & mask;
            }
            if (duplicate) {
                continue;
            }
            final long e = entry(i);
            s.set(LONG_LAYOUT, e, hash);
            s.set(LONG_LAYOUT, e + 8, all[4 * k + 1]);
            s.set(LONG_LAYOUT, e + 16, all[4 * k + 2]);
            s.set(LONG_LAYOUT, e + 24, all[4 * k + 3]);
            clock = Math.max(clock, all[4 * k + 2]);
            count++;
        }
        s.set(ValueLayout.JAVA_INT, COUNT_OFFSET, count);
        s.set(LONG_LAYOUT, CLOCK_OFFSET, clock);
    }

    private int home(final long hash) {
        return homeIn(hash, mask);
    }

    private static int homeIn(final long hash, final int mask) {
        return (int) ((hash * 0x9E37_79B9_7F4A_7C15L) >>> 32) & mask;
    }

    private static long entry(final int i) {
        return HEADER_LENGTH + (long) i * ENTRY_LENGTH;
    }

    /**
     * @return the map's file.
     */
    public Path path() {
        return file;
    }

    @Override
    public void close() {
        region.close();
    }
}
