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

import static io.kvidx.daemon.state.PodBlockMapDescriptor.CLOCK_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.ENTRY_LENGTH;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.GENERATION_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.HEADER_LENGTH;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.LONG_LAYOUT;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.MAGIC;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.MAIN_GROUP_OFFSET;
import static io.kvidx.daemon.state.PodBlockMapDescriptor.POD_ID_MAX;

/**
 * The mapped file of one {@link PodBlockMap}: opened new or re-used from a previous daemon (when it belongs to the
 * same pod id and slot generation, with its entries re-inserted to repair a shift a crash left half done), and grown
 * by doubling into a new file renamed over the old one (a crash leaves the old or the new file, each whole). The
 * {@link PodBlockTable} it maps is wrapped over the file's current region.
 *
 * <p><b>Note:</b> one writer: the pod's writer agent, through its map.
 */
final class PodBlockMapFile implements AutoCloseable {
    /** Slots a new map starts with: small, so that a pod holding few blocks touches little memory. */
    private static final int INITIAL_SLOTS = 4096;

    private final Path file;
    private final int maxBlocks;
    private final boolean restored;
    private MappedRegion region;

    private PodBlockMapFile(final Path file, final MappedRegion region, final int maxBlocks,
        final boolean restored) {
        this.file = file;
        this.region = region;
        this.maxBlocks = maxBlocks;
        this.restored = restored;
    }

    /**
     * Opens a pod's map file and wraps the table over it: the existing file is re-used (and its entries re-inserted)
     * when it belongs to the same pod id and slot generation and has the same size; otherwise the map starts empty.
     *
     * @param file       the map's file.
     * @param podId      the pod.
     * @param generation the generation of the pod's index slot.
     * @param maxBlocks  most mappings, 1..2^28.
     * @param table      the table to wrap over the file.
     * @return the file.
     */
    static PodBlockMapFile open(final Path file, final String podId, final int generation, final int maxBlocks,
        final PodBlockTable table) {
        if (maxBlocks < 1 || maxBlocks > (1 << 28)) {
            throw new IllegalArgumentException("max blocks per pod must be in [1, 2^28]: " + maxBlocks);
        }
        final byte[] id = podId.getBytes(StandardCharsets.UTF_8);
        if (id.length > POD_ID_MAX) {
            throw new IllegalArgumentException("pod id longer than " + POD_ID_MAX + " bytes: " + podId);
        }
        final int maxSlots = PodBlockMap.slotsFor(maxBlocks);
        try {
            final long size = Files.exists(file) ? Files.size(file) : 0;
            final long found = (size - HEADER_LENGTH) / ENTRY_LENGTH;
            if (size > HEADER_LENGTH && (size - HEADER_LENGTH) % ENTRY_LENGTH == 0 && Long.bitCount(found) == 1
                && found <= maxSlots) {
                final int slots = (int) found;
                final MappedRegion region = MappedRegion.mapReadWrite(file, size);
                if (PodBlockMapDescriptor.matches(region.segment(), slots, maxBlocks, generation, id)) {
                    table.wrap(region.segment(), slots);
                    table.reinsertAll(maxBlocks);
                    region.segment().set(LONG_LAYOUT, 0, MAGIC);
                    return new PodBlockMapFile(file, region, maxBlocks, true);
                }
                region.close();
            }
            final int slots = Math.min(INITIAL_SLOTS, maxSlots);
            final MappedRegion region = PodBlockMapDescriptor.create(file, slots, maxBlocks, generation, id, 0);
            table.wrap(region.segment(), slots);
            return new PodBlockMapFile(file, region, maxBlocks, false);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot open the block map " + file, ex);
        }
    }

    /**
     * Doubles the table: builds the larger one in a new file, re-inserts every entry, then renames it over the old
     * one, so the table stays as dense as the pod's live blocks and its cache footprint follows them.
     *
     * @param table the table, wrapped over the new file afterwards.
     */
    void grow(final PodBlockTable table) {
        growTo(table, table.slots() * 2);
    }

    /**
     * Grows the table to a given size at once, as {@link #grow} does by doubling (a caller that knows how many
     * entries are coming, such as a snapshot's load, then pays one copy and one new file instead of one per doubling).
     *
     * @param table    the table, wrapped over the new file afterwards.
     * @param newSlots its new slots: a power of two, larger than today's.
     */
    void growTo(final PodBlockTable table, final int newSlots) {
        final MemorySegment s = table.segment();
        final Path temp = file.resolveSibling(file.getFileName() + ".grow");
        final byte[] id = PodBlockMapDescriptor.podId(s);
        try {
            final MappedRegion bigger = PodBlockMapDescriptor.create(temp, newSlots, maxBlocks,
                s.get(ValueLayout.JAVA_INT, GENERATION_OFFSET), id, s.get(LONG_LAYOUT, CLOCK_OFFSET));
            final MemorySegment b = bigger.segment();
            b.set(ValueLayout.JAVA_INT, MAIN_GROUP_OFFSET, s.get(ValueLayout.JAVA_INT, MAIN_GROUP_OFFSET));
            table.rehashInto(b, newSlots);
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            region.close();
            region = bigger;
            table.wrap(b, newSlots);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot grow the block map " + file + " to " + newSlots + " slots", ex);
        }
    }

    /**
     * @return true when the file was re-used from a previous daemon, false when new.
     */
    boolean restored() {
        return restored;
    }

    /**
     * @return the file.
     */
    Path path() {
        return file;
    }

    @Override
    public void close() {
        region.close();
    }
}
