package io.kvidx.daemon.index;

import io.kvidx.client.index.ProtocolFaults;
import io.kvidx.client.index.Seqlock;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.SharedFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.concurrent.atomic.LongAdder;

import static io.kvidx.client.tiers.TierMapDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.tiers.TierMapDescriptor.ENTRY_LENGTH;
import static io.kvidx.client.tiers.TierMapDescriptor.ENTRY_VALUE_OFFSET;
import static io.kvidx.client.tiers.TierMapDescriptor.MEDIA_MASK;
import static io.kvidx.client.tiers.TierMapDescriptor.REGION_COUNT_OFFSET;
import static io.kvidx.client.tiers.TierMapDescriptor.REGION_GENERATION_OFFSET;
import static io.kvidx.client.tiers.TierMapDescriptor.REGION_HEADER_LENGTH;
import static io.kvidx.client.tiers.TierMapDescriptor.REGION_VERSION_OFFSET;
import static io.kvidx.client.tiers.TierMapDescriptor.REMOTE_SHIFT;
import static io.kvidx.client.tiers.TierMapDescriptor.STAMP_SHIFT;
import static io.kvidx.client.tiers.TierMapDescriptor.TIER_MASK;

/**
 * Writes the cell's host tier map ({@code <cell>/tiers}, layout {@link TierMapDescriptor}): per pod slot, a fixed
 * region mapping router keys to the media holding the block and their locality. Routers read it with
 * {@link io.kvidx.client.tiers.TierMapReader}.
 *
 * <p>Publication protocol (docs/index-layout.md, "Host tier map"):
 * <ul>
 *   <li>a new file is built under a temporary name (mode 0640, the cell's group), its layout version stored last,
 *   then renamed over {@code tiers}; the file it replaces is first marked superseded so that readers follow;</li>
 *   <li>inserting a key into an empty entry writes its value, then the key with a release store;</li>
 *   <li>changing the tiers of a present key is one 64-bit release store of its value;</li>
 *   <li>removing an entry, evicting one, or resetting the region for a new generation of the slot happens between an
 *   odd and the next even value of the region's version ({@link Seqlock#beginWrite}: odd store, store-store fence;
 *   changes; {@link Seqlock#endWrite}: release store).</li>
 * </ul>
 * Memory is fixed at creation: a region holds at most {@link #maxEntries()} keys; one more evicts the least
 * recently updated of {@value #EVICTION_SAMPLES} sampled entries (counted by {@link #evictions()}); a reader then
 * finds no tiers for that key and scores it as GPU, vLLM's default medium.
 *
 * <p><b>Note:</b> each region has one writer at a time: the writer agent of the pod holding the slot (the index
 * writer's rule, one thread per pod); regions of different slots may be written by different threads. The file is
 * re-created by every daemon start (its contents are rebuilt from the pods' block maps as they register).
 */
public final class TierMapWriter implements AutoCloseable {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle INT = Layouts.INT;
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();
    private static final SecureRandom RANDOM = new SecureRandom();
    static final int EVICTION_SAMPLES = 8;
    /** Longs per slot in {@code clocks} (128 bytes: two lines, for the adjacent-line prefetcher). */
    private static final int STRIDE = 16;

    private final Path file;
    private final MappedRegion region;
    private final MemorySegment s;
    private final int maxPods;
    private final int slots;
    private final int mask;
    private final int slotBits;
    private final int maxEntries;
    private final long regionLength;
    /**
     * Per slot, at {@code slot * }{@value #STRIDE}: the store clock, then the eviction clock hand; written by the
     * slot's writer only, one cache line apart so that writers of neighbouring slots share none.
     */
    private final long[] clocks;
    private final LongAdder evictions = new LongAdder();

    private TierMapWriter(final Path file, final MappedRegion region, final int maxPods, final int slots) {
        this.file = file;
        this.region = region;
        this.s = region.segment();
        this.maxPods = maxPods;
        this.slots = slots;
        this.mask = slots - 1;
        this.slotBits = Integer.numberOfTrailingZeros(slots);
        this.maxEntries = TierMapDescriptor.maxEntries(slots);
        this.regionLength = TierMapDescriptor.regionLength(slots);
        this.clocks = new long[maxPods * STRIDE];
    }

    /**
     * Creates a new, empty tier map beside the index, replacing (and first marking superseded) any previous one.
     *
     * @param files      modes and group of the cell directory and file.
     * @param indexFile  the cell's index file (the tier map is its sibling {@value TierMapDescriptor#FILE_NAME}).
     * @param maxPods    pod slots.
     * @param maxEntries most keys per pod before it evicts.
     * @return the writer.
     */
    public static TierMapWriter create(final SharedFiles files, final Path indexFile, final int maxPods,
        final int maxEntries) {
        final int slots = TierMapDescriptor.slotsFor(maxEntries);
        final String problem = TierMapDescriptor.validateGeometry(maxPods, slots);
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        final Path file = indexFile.resolveSibling(TierMapDescriptor.FILE_NAME);
        final long length = TierMapDescriptor.fileLength(maxPods, slots);
        final StagedIndexFile staged = StagedIndexFile.create(files, file, length, RANDOM);
        final MappedRegion mapped = staged.region();
        try {
            final MemorySegment m = mapped.segment();
            m.set(ValueLayout.JAVA_LONG, TierMapDescriptor.MAGIC_OFFSET, TierMapDescriptor.MAGIC);
            m.set(ValueLayout.JAVA_INT, TierMapDescriptor.HEADER_LENGTH_OFFSET, TierMapDescriptor.HEADER_LENGTH);
            m.set(ValueLayout.JAVA_INT, TierMapDescriptor.MAX_PODS_OFFSET, maxPods);
            m.set(ValueLayout.JAVA_INT, TierMapDescriptor.SLOTS_OFFSET, slots);
            m.set(ValueLayout.JAVA_INT, TierMapDescriptor.MAX_ENTRIES_OFFSET, TierMapDescriptor.maxEntries(slots));
            m.set(ValueLayout.JAVA_INT, TierMapDescriptor.REGION_HEADER_LENGTH_OFFSET, REGION_HEADER_LENGTH);
            m.set(ValueLayout.JAVA_LONG, TierMapDescriptor.EPOCH_OFFSET, RANDOM.nextLong() & Long.MAX_VALUE);
            m.set(ValueLayout.JAVA_LONG, TierMapDescriptor.WRITER_PID_OFFSET, ProcessHandle.current().pid());
            m.set(ValueLayout.JAVA_LONG, TierMapDescriptor.FILE_LENGTH_OFFSET, length);
            INT.setRelease(m, (long) TierMapDescriptor.LAYOUT_VERSION_OFFSET, TierMapDescriptor.LAYOUT_VERSION);
            supersede(file);
            staged.publish();
        } catch (final IOException ex) {
            staged.abandon(ex);
            throw new UncheckedIOException("cannot publish tier map " + file, ex);
        } catch (final RuntimeException ex) {
            staged.abandon(ex);
            throw ex;
        }
        return new TierMapWriter(file, mapped, maxPods, slots);
    }

    /** Marks the current file (when it is a tier map) superseded, so that its readers re-attach to the new one. */
    private static void supersede(final Path file) {
        try {
            if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)
                || Files.size(file) < TierMapDescriptor.HEADER_LENGTH) {
                return;
            }
            try (MappedRegion old = MappedRegion.mapReadWrite(file, TierMapDescriptor.HEADER_LENGTH)) {
                final MemorySegment m = old.segment();
                if (m.get(ValueLayout.JAVA_LONG, TierMapDescriptor.MAGIC_OFFSET) == TierMapDescriptor.MAGIC) {
                    LONG.setRelease(m, (long) TierMapDescriptor.SUPERSEDED_OFFSET, 1L);
                }
            }
        } catch (final IOException ex) {
            // Not ours or unreadable: replaced all the same; its readers find it stale by its contents only.
        }
    }

    /**
     * Gives a slot's region to a generation of the slot: when it holds another generation's tiers, they are dropped
     * (readers asking for the old generation find none from now on). Idempotent.
     *
     * @param slot       pod slot.
     * @param generation the slot's generation in the index's pod table.
     */
    public void attach(final int slot, final int generation) {
        if (s.get(ValueLayout.JAVA_INT, regionOffset(slot) + REGION_GENERATION_OFFSET) != generation) {
            reset(slot, generation);
        }
    }

    /**
     * Drops every entry of a slot, keeping its generation (the pod cleared its cache).
     *
     * @param slot pod slot.
     */
    public void clear(final int slot) {
        final long base = regionOffset(slot);
        if (s.get(ValueLayout.JAVA_INT, base + REGION_COUNT_OFFSET) != 0) {
            reset(slot, s.get(ValueLayout.JAVA_INT, base + REGION_GENERATION_OFFSET));
        }
    }

    /**
     * Drops every entry of a slot and its generation (the pod went down).
     *
     * @param slot pod slot.
     */
    public void detach(final int slot) {
        final long base = regionOffset(slot);
        if (s.get(ValueLayout.JAVA_INT, base + REGION_COUNT_OFFSET) != 0
            || s.get(ValueLayout.JAVA_INT, base + REGION_GENERATION_OFFSET) != 0) {
            reset(slot, 0);
        }
    }

    private void reset(final int slot, final int generation) {
        checkSlot(slot);
        final long base = regionOffset(slot);
        final long odd = Seqlock.beginWrite(s, base + REGION_VERSION_OFFSET);
        s.asSlice(base + REGION_HEADER_LENGTH, (long) slots * ENTRY_LENGTH).fill((byte) 0);
        s.set(ValueLayout.JAVA_INT, base + REGION_GENERATION_OFFSET, generation);
        INT.setOpaque(s, base + REGION_COUNT_OFFSET, 0);
        clocks[slot * STRIDE + 1] = 0;
        Seqlock.endWrite(s, base + REGION_VERSION_OFFSET, odd);
    }

    /**
     * Records where a pod holds a block: its media, and which of them are remote. A key with no medium left is
     * removed.
     *
     * @param slot        pod slot.
     * @param key         router key.
     * @param media       every medium holding the block now (bits of {@link TierMapDescriptor}, e.g. from the pod's
     *                    block map).
     * @param remoteMask  media whose REMOTE flag this call decides (the event's medium), as medium bits.
     * @param remoteValue those of them that are remote, as medium bits; other media keep their recorded flag.
     * @return the tier bits now recorded (0 when the key was removed).
     */
    public int update(final int slot, final long key, final int media, final int remoteMask, final int remoteValue) {
        checkSlot(slot);
        final int held = media & MEDIA_MASK;
        if (held == 0) {
            remove(slot, key);
            return 0;
        }
        final long entries = regionOffset(slot) + REGION_HEADER_LENGTH;
        final long k = TierMapDescriptor.stored(key);
        final long stamp = ++clocks[slot * STRIDE] << STAMP_SHIFT;
        int i = home(k);
        for (int n = 0; n <= mask; n++) {
            final long e = entries + (long) i * ENTRY_LENGTH;
            final long ek = (long) PLAIN.get(s, e + ENTRY_KEY_OFFSET);
            if (ek == k) {
                final int old = (int) ((long) PLAIN.get(s, e + ENTRY_VALUE_OFFSET) & TIER_MASK);
                final int remote = ((old >>> REMOTE_SHIFT & ~remoteMask) | (remoteValue & remoteMask)) & held;
                final int bits = held | remote << REMOTE_SHIFT;
                LONG.setRelease(s, e + ENTRY_VALUE_OFFSET, stamp | bits);
                return bits;
            }
            if (ek == 0) {
                break;
            }
            i = (i + 1) & mask;
        }
        final long base = regionOffset(slot);
        final int count = s.get(ValueLayout.JAVA_INT, base + REGION_COUNT_OFFSET);
        if (count >= maxEntries) {
            evictOne(slot);
        }
        // Probe again: an eviction may have moved entries.
        i = home(k);
        long e = entries + (long) i * ENTRY_LENGTH;
        while ((long) PLAIN.get(s, e + ENTRY_KEY_OFFSET) != 0) {
            i = (i + 1) & mask;
            e = entries + (long) i * ENTRY_LENGTH;
        }
        final int bits = held | ((remoteValue & remoteMask & held) << REMOTE_SHIFT);
        if (ProtocolFaults.OMIT_TIER_VALUE_BEFORE_KEY) {
            LONG.setRelease(s, e + ENTRY_KEY_OFFSET, k);
        }
        PLAIN.set(s, e + ENTRY_VALUE_OFFSET, stamp | bits);
        if (!ProtocolFaults.OMIT_TIER_VALUE_BEFORE_KEY) {
            LONG.setRelease(s, e + ENTRY_KEY_OFFSET, k);
        }
        INT.setOpaque(s, base + REGION_COUNT_OFFSET, s.get(ValueLayout.JAVA_INT, base + REGION_COUNT_OFFSET) + 1);
        return bits;
    }

    /**
     * Forgets a block of a pod (it left every medium). No-op when absent.
     *
     * @param slot pod slot.
     * @param key  router key.
     * @return true when it was present.
     */
    public boolean remove(final int slot, final long key) {
        checkSlot(slot);
        final int i = find(slot, TierMapDescriptor.stored(key));
        if (i < 0) {
            return false;
        }
        delete(slot, i);
        return true;
    }

    /**
     * The writer's own view (no seqlock needed: it is the region's only writer).
     *
     * @param slot pod slot.
     * @param key  router key.
     * @return the tier bits recorded, or -1 when absent.
     */
    public int tierBits(final int slot, final long key) {
        checkSlot(slot);
        final int i = find(slot, TierMapDescriptor.stored(key));
        return i < 0 ? -1 : (int) ((long) PLAIN.get(s, entry(slot, i) + ENTRY_VALUE_OFFSET) & TIER_MASK);
    }

    /**
     * @param slot pod slot.
     * @return keys the slot's region holds.
     */
    public int size(final int slot) {
        checkSlot(slot);
        return s.get(ValueLayout.JAVA_INT, regionOffset(slot) + REGION_COUNT_OFFSET);
    }

    /**
     * @param slot pod slot.
     * @return the generation whose tiers the slot's region holds (0 for none).
     */
    public int generation(final int slot) {
        checkSlot(slot);
        return s.get(ValueLayout.JAVA_INT, regionOffset(slot) + REGION_GENERATION_OFFSET);
    }

    /**
     * @return keys a region holds before a new one evicts.
     */
    public int maxEntries() {
        return maxEntries;
    }

    /**
     * @return entries evicted to make room, over all regions, since this writer started.
     */
    public long evictions() {
        return evictions.sum();
    }

    /**
     * @return the tier map file.
     */
    public Path path() {
        return file;
    }

    private void evictOne(final int slot) {
        int hand = (int) clocks[slot * STRIDE + 1] & mask;
        int victim = -1;
        long oldest = Long.MAX_VALUE;
        int seen = 0;
        for (int n = 0; n < slots && seen < EVICTION_SAMPLES; n++) {
            final long e = entry(slot, hand);
            if ((long) PLAIN.get(s, e + ENTRY_KEY_OFFSET) != 0) {
                seen++;
                final long stamp = (long) PLAIN.get(s, e + ENTRY_VALUE_OFFSET) >>> STAMP_SHIFT;
                if (stamp < oldest) {
                    oldest = stamp;
                    victim = hand;
                }
            }
            hand = (hand + 1) & mask;
        }
        clocks[slot * STRIDE + 1] = hand;
        if (victim >= 0) {
            delete(slot, victim);
            evictions.increment();
        }
    }

    private int find(final int slot, final long k) {
        int i = home(k);
        for (int n = 0; n <= mask; n++) {
            final long ek = (long) PLAIN.get(s, entry(slot, i) + ENTRY_KEY_OFFSET);
            if (ek == k) {
                return i;
            }
            if (ek == 0) {
                return -1;
            }
            i = (i + 1) & mask;
        }
        return -1;
    }

    /** Backward-shift deletion inside an odd region version. */
    private void delete(final int slot, final int at) {
        final long base = regionOffset(slot);
        final long odd = Seqlock.beginWrite(s, base + REGION_VERSION_OFFSET);
        int hole = at;
        int j = at;
        while (true) {
            j = (j + 1) & mask;
            final long ej = entry(slot, j);
            final long kj = (long) PLAIN.get(s, ej + ENTRY_KEY_OFFSET);
            if (kj == 0) {
                break;
            }
            final int h = home(kj);
            final boolean stays = hole < j ? (h > hole && h <= j) : (h > hole || h <= j);
            if (!stays) {
                final long eh = entry(slot, hole);
                PLAIN.set(s, eh + ENTRY_VALUE_OFFSET, (long) PLAIN.get(s, ej + ENTRY_VALUE_OFFSET));
                PLAIN.set(s, eh + ENTRY_KEY_OFFSET, kj);
                hole = j;
            }
        }
        final long eh = entry(slot, hole);
        PLAIN.set(s, eh + ENTRY_KEY_OFFSET, 0L);
        PLAIN.set(s, eh + ENTRY_VALUE_OFFSET, 0L);
        INT.setOpaque(s, base + REGION_COUNT_OFFSET, s.get(ValueLayout.JAVA_INT, base + REGION_COUNT_OFFSET) - 1);
        Seqlock.endWrite(s, base + REGION_VERSION_OFFSET, odd);
    }

    private int home(final long storedKey) {
        return (int) ((storedKey * TierMapDescriptor.GOLDEN) >>> (64 - slotBits));
    }

    private long regionOffset(final int slot) {
        return TierMapDescriptor.HEADER_LENGTH + slot * regionLength;
    }

    private long entry(final int slot, final int i) {
        return regionOffset(slot) + REGION_HEADER_LENGTH + (long) i * ENTRY_LENGTH;
    }

    private void checkSlot(final int slot) {
        if (slot < 0 || slot >= maxPods) {
            throw new IllegalArgumentException("pod slot must be in [0, " + maxPods + "): " + slot);
        }
    }

    /**
     * Unmaps the file, leaving it in place.
     */
    @Override
    public void close() {
        region.close();
    }
}
