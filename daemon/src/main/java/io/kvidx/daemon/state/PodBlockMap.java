package io.kvidx.daemon.state;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

import static io.kvidx.daemon.state.PodBlockMapDescriptor.CLOCK_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.COUNT_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_HASH_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_MEDIA_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_STAMP_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.LONG_LAYOUT;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.MAIN_GROUP_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.MEDIA_TIERED;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.entry;

/**
 * One pod's engine hash to router key (and storage media) map, in a mapped file of the cell's state directory so
 * that a restarted daemon can apply the pod's next BlockRemoved events (which carry only engine hashes). The table
 * starts at 4,096 slots and doubles (into a new file renamed over the old) while it is more than 70 % full, up to
 * the size for {@code maxBlocks} mappings, so that it stays as dense as the pod's live blocks; at most
 * {@code maxBlocks} mappings; storing one more evicts the least recently
 * stored mapping (sampled), and the caller removes that block from the index for the pod, so the map and the
 * index never disagree and a pod that never removes blocks cannot grow the daemon (ADR 0007).
 *
 * <p>The file's layout is {@link PodBlockMapDescriptor}'s; opening, re-using and growing the file are
 * {@link PodBlockMapFile}'s; the hash table in it (open addressing, linear probing, backward-shift deletion) is
 * {@link PodBlockTable}'s, and the choice of the mapping to evict {@link SampledEviction}'s. This class gives the
 * entries their meaning: router key, store stamp and media bits. A crash can leave a shift half done: {@link #open}
 * re-inserts every entry of a re-used file, which also drops duplicates.
 *
 * <p><b>Note:</b> one writer: the pod's writer agent. No other thread reads it.
 */
public final class PodBlockMap implements AutoCloseable {
    private static final double MAX_LOAD = 0.7;

    private final PodBlockTable table = new PodBlockTable();
    private final SampledEviction eviction = new SampledEviction(table);
    private final PodBlockMapFile file;
    private final int maxSlots;
    private final int maxBlocks;
    private boolean lastReleaseRemoved;
    private long lastMedia;
    private boolean lastTiered;
    /** The entry the last {@link #store} wrote (its offset in the table's segment), -1 after a release. */
    private long lastEntry = -1;

    private PodBlockMap(final Path file, final String podId, final int generation, final int maxBlocks) {
        this.file = PodBlockMapFile.open(file, podId, generation, maxBlocks, table);
        this.maxSlots = slotsFor(maxBlocks);
        this.maxBlocks = maxBlocks;
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
        return PodBlockMapDescriptor.length(slotsFor(maxBlocks));
    }

    /**
     * Opens a pod's map: the existing file is re-used (and its entries re-inserted) when it belongs to the same pod
     * id and slot generation and has the same size; otherwise the map starts empty ({@link PodBlockMapFile}).
     *
     * @param file       the map's file.
     * @param podId      the pod.
     * @param generation the generation of the pod's index slot.
     * @param maxBlocks  most mappings, 1..2^28.
     * @return the map.
     */
    public static PodBlockMap open(final Path file, final String podId, final int generation, final int maxBlocks) {
        return new PodBlockMap(file, podId, generation, maxBlocks);
    }

    /**
     * @return true when the map was re-used from a previous daemon (its mappings are the pod's), false when new.
     */
    public boolean restored() {
        return file.restored();
    }

    /**
     * @return mappings held.
     */
    public int size() {
        return table.size();
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
        final MemorySegment s = table.segment();
        final int i = table.find(hash);
        return i < 0 ? 0 : s.get(LONG_LAYOUT, entry(i) + ENTRY_KEY_OFFSET);
    }

    /**
     * @param hash engine hash.
     * @return its media bits, or 0 when absent.
     */
    public long media(final long hash) {
        final MemorySegment s = table.segment();
        final int i = table.find(hash);
        return i < 0 ? 0 : s.get(LONG_LAYOUT, entry(i) + ENTRY_MEDIA_OFFSET) & ~MEDIA_TIERED;
    }

    /**
     * Loads the home entry of a hash and the entry two slots on (to overlap their cache misses with others'): the
     * two cache lines a lookup, an insertion or a deletion's backward shift mostly touches (entries are 32 bytes,
     * two per line).
     *
     * @param hash engine hash.
     * @return a value to consume.
     */
    public long touch(final long hash) {
        final MemorySegment s = table.segment();
        final int home = table.home(hash);
        return s.get(LONG_LAYOUT, entry(home) + ENTRY_HASH_OFFSET)
            + s.get(LONG_LAYOUT, entry((home + 2) & table.mask()) + ENTRY_HASH_OFFSET);
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
        final MemorySegment s = table.segment();
        if (routerKey == 0) {
            throw new IllegalArgumentException("router key 0 marks empty entries");
        }
        final long clock = s.get(LONG_LAYOUT, CLOCK_OFFSET) + 1;
        s.set(LONG_LAYOUT, CLOCK_OFFSET, clock);
        final int i = table.probe(hash);
        if (i < 0) {
            final int count = table.size();
            if (count >= maxBlocks) {
                throw new IllegalStateException("block map full: evict before storing a new hash");
            }
            final int slots = table.slots();
            if (count + 1 > slots * MAX_LOAD && slots < maxSlots) {
                file.grow(table);
                return store(hash, routerKey, mediumBit);
            }
            final long e = entry(~i);
            s.set(LONG_LAYOUT, e + ENTRY_HASH_OFFSET, hash);
            s.set(LONG_LAYOUT, e + ENTRY_STAMP_OFFSET, clock);
            s.set(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET, mediumBit);
            s.set(LONG_LAYOUT, e + ENTRY_KEY_OFFSET, routerKey);
            s.set(ValueLayout.JAVA_INT, COUNT_OFFSET, count + 1);
            lastMedia = mediumBit;
            lastTiered = false;
            lastEntry = e;
            return 0;
        }
        final long e = entry(i);
        final long key = s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET);
        final long media = s.get(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET) | mediumBit;
        s.set(LONG_LAYOUT, e + ENTRY_KEY_OFFSET, routerKey);
        s.set(LONG_LAYOUT, e + ENTRY_STAMP_OFFSET, clock);
        s.set(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET, media);
        lastMedia = media & ~MEDIA_TIERED;
        lastTiered = (media & MEDIA_TIERED) != 0;
        lastEntry = e;
        return key;
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
        final MemorySegment s = table.segment();
        lastReleaseRemoved = false;
        lastMedia = 0;
        lastTiered = false;
        lastEntry = -1;
        final int i = table.find(hash);
        if (i < 0) {
            return 0;
        }
        final long e = entry(i);
        final long key = s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET);
        final long left = s.get(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET) & ~mediumBit;
        lastMedia = left & ~MEDIA_TIERED;
        lastTiered = (left & MEDIA_TIERED) != 0;
        if (lastMedia != 0) {
            s.set(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET, left);
            return key;
        }
        table.delete(i);
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
     * @return true when the block the last {@link #store} or {@link #release} changed is marked as having an entry
     * in the host tier map (as it was before the change; {@link #markTiered} changes it).
     */
    public boolean lastTiered() {
        return lastTiered;
    }

    /**
     * Marks or unmarks the block the last {@link #store} changed as having an entry in the host tier map (the
     * writer's record of which blocks the tier map holds, so that a block held on the GPU alone costs it no
     * lookup). Call it right after that store, before any other change of the map.
     *
     * @param tiered whether the tier map now holds an entry for the block.
     */
    public void markTiered(final boolean tiered) {
        final long e = lastEntry;
        if (e < 0) {
            throw new IllegalStateException("no stored block to mark");
        }
        final MemorySegment s = table.segment();
        final long media = s.get(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET);
        s.set(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET, tiered ? media | MEDIA_TIERED : media & ~MEDIA_TIERED);
        lastTiered = tiered;
    }

    /**
     * Visits every mapping and records, from the visitor's answer, whether the host tier map holds an entry for it
     * (cold: a restarted daemon refilling its fresh tier map).
     *
     * @param visitor receives engine hash, router key and media bits, and answers whether the tier map now holds
     *                an entry for the block.
     */
    public void retier(final TierVisitor visitor) {
        table.retier(visitor);
    }

    /** Decides a mapping's tier entry. */
    @FunctionalInterface
    public interface TierVisitor {
        /**
         * @param hash      engine hash.
         * @param routerKey router key.
         * @param media     media bits.
         * @return true when the host tier map now holds an entry for the block.
         */
        boolean visit(long hash, long routerKey, long media);
    }

    /**
     * @return true when the last {@link #release} removed the mapping (no medium holds the block any more).
     */
    public boolean lastReleaseRemoved() {
        return lastReleaseRemoved;
    }

    /**
     * Chooses the least recently stored mappings for a batch eviction, without removing them: each choice is
     * {@link #selectOldest()}'s, whose hand moves on past at least its samples, so the choices are distinct while
     * they sample less than the whole table. The caller removes their blocks from the index, then each mapping
     * ({@link #remove}), in that order (a crash in between leaves mappings, not indexed blocks no mapping reaches).
     *
     * @param count  mappings wanted.
     * @param keys   receives their router keys.
     * @param hashes receives their engine hashes.
     * @param tiered receives whether each has a host tier map entry.
     * @return mappings chosen: {@code count}, or 0 when the map is too small for distinct choices (then evict one at
     * a time).
     */
    public int selectOldest(final int count, final long[] keys, final long[] hashes, final boolean[] tiered) {
        if ((long) count * 2 * SampledEviction.SAMPLES > table.size()) {
            return 0;
        }
        for (int i = 0; i < count; i++) {
            keys[i] = eviction.selectOldest();
            hashes[i] = eviction.evictedHash();
            tiered[i] = eviction.evictedTiered();
        }
        // The caller removes these by hash: no single choice is left for evictSelected().
        eviction.unselect();
        return count;
    }

    /**
     * @param hash engine hash.
     * @return the router key it mapped to, or 0 when absent.
     */
    public long remove(final long hash) {
        final int i = table.find(hash);
        if (i < 0) {
            return 0;
        }
        final long key = table.segment().get(LONG_LAYOUT, entry(i) + ENTRY_KEY_OFFSET);
        table.delete(i);
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
        final MemorySegment s = table.segment();
        final int i = table.find(hash);
        if (i < 0) {
            return 0;
        }
        final long e = entry(i);
        return (s.get(LONG_LAYOUT, e + ENTRY_MEDIA_OFFSET) & ~mediumBit & ~MEDIA_TIERED) == 0
            ? s.get(LONG_LAYOUT, e + ENTRY_KEY_OFFSET) : 0;
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
        return eviction.selectOldest();
    }

    /**
     * Removes the mapping {@link #selectOldest()} chose (no-op when it chose none).
     */
    public void evictSelected() {
        eviction.evictSelected();
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
        return eviction.evictedHash();
    }

    /**
     * @return whether the mapping {@link #selectOldest()} chose last has a host tier map entry.
     */
    public boolean evictedTiered() {
        return eviction.evictedTiered();
    }

    /**
     * The pod's main KV cache group: the group whose blocks the index holds (see the writer's
     * {@code AttentionGroups}); kept here so that a restarted daemon applies the group's removals before the
     * engine's next BlockStored names the group's kind again.
     *
     * @return the group index, or -1 when not learned yet.
     */
    public int mainGroup() {
        return table.segment().get(ValueLayout.JAVA_INT, MAIN_GROUP_OFFSET) - 1;
    }

    /**
     * @param group the pod's main KV cache group (0 or more), or -1 to forget it.
     */
    public void mainGroup(final int group) {
        if (group < -1 || group == Integer.MAX_VALUE) {
            throw new IllegalArgumentException("KV cache group out of range: " + group);
        }
        table.segment().set(ValueLayout.JAVA_INT, MAIN_GROUP_OFFSET, group + 1);
    }

    /**
     * Grows the table at once to hold {@code blocks} mappings (at most the map's bound) at its load limit, instead
     * of doubling as they are stored: for a caller that knows how many are coming (a snapshot's load). No-op when
     * the table is large enough already.
     *
     * @param blocks mappings about to be stored.
     */
    public void reserve(final int blocks) {
        final int slots = Math.min(maxSlots, slotsFor(Math.max(1, Math.min(blocks, maxBlocks))));
        if (slots > table.slots()) {
            file.growTo(table, slots);
        }
    }

    /**
     * @return table slots now (a power of two; tests).
     */
    int slots() {
        return table.slots();
    }

    /**
     * Removes every mapping.
     */
    public void clear() {
        if (size() > 0) {
            table.clear();
        }
    }

    /**
     * Calls {@code visitor} for every mapping (cold: checks and tests).
     *
     * @param visitor receives engine hash, router key, media bits.
     */
    public void forEach(final Visitor visitor) {
        table.forEach(visitor);
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

    /**
     * @return the map's file.
     */
    public Path path() {
        return file.path();
    }

    @Override
    public void close() {
        file.close();
    }
}
