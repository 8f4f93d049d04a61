package io.kvidx.daemon.state;

import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.PosixNative;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Layout of a pod's block map file ({@code <dir>/<cell>/state/pod-<slot>.blocks}, {@link PodBlockMap}): the
 * offsets of its header fields and entries, the creation of a file and the check that decides whether a file left by
 * a previous daemon is re-used. {@link PodBlockMap}, {@link PodBlockTable} and {@link SampledEviction} find every
 * field through this class.
 *
 * <pre>
 *   0 +---------------------------------------------------------------+
 *     | magic u64 = "KVIDXPB2" ("KVIDXPB1" before 2026-11-27)          |
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
 *   media bits: 1 GPU, 2 CPU, 4 disk, 8 other medium; bit 62 ({@link #MEDIA_TIERED}): the host tier map
 *   holds an entry for the block (a block held on the GPU alone, locally, has none: readers take a missing
 *   entry as exactly that)
 * </pre>
 * Versions: files of layout "KVIDXPB1" (before 2026-11-27) never set bit 62 and are re-used, their magic rewritten
 * to "KVIDXPB2" when re-used; a daemon older than that date does not recognise "KVIDXPB2" and starts the pod's map
 * empty, rather than read bit 62 as a medium.
 * The file is private to the daemon's writer (mode 0600): no other process reads it.
 *
 * <p><b>Note:</b> stateless.
 */
final class PodBlockMapDescriptor {
    /** Native-order 64-bit loads and stores without the alignment check (every field is 8-byte aligned). */
    static final ValueLayout.OfLong LONG_LAYOUT = ValueLayout.JAVA_LONG_UNALIGNED;
    /** "KVIDXPB2" read as a little-endian u64. */
    static final long MAGIC = 0x3242_5058_4449_564BL;
    /** "KVIDXPB1" read as a little-endian u64: the layout before 2026-11-27, re-used and rewritten as MAGIC. */
    static final long MAGIC_V1 = 0x3142_5058_4449_564BL;
    /** The media bits' flag: the host tier map holds an entry for the block. */
    static final long MEDIA_TIERED = 1L << 62;
    /** Length of the header; the entries follow it. */
    static final int HEADER_LENGTH = 256;
    /** Length of an entry. */
    static final int ENTRY_LENGTH = 32;
    /** Offset of the table slots. */
    static final int SLOTS_OFFSET = 8;
    /** Offset of the most mappings. */
    static final int MAX_BLOCKS_OFFSET = 12;
    /** Offset of the generation of the pod's index slot. */
    static final int GENERATION_OFFSET = 16;
    /** Offset of the pod id's length. */
    static final int POD_ID_LENGTH_OFFSET = 20;
    /** Offset of the pod id. */
    static final int POD_ID_OFFSET = 24;
    /** Longest pod id, UTF-8 bytes. */
    static final int POD_ID_MAX = 112;
    /** Offset of the mapping count. */
    static final int COUNT_OFFSET = 136;
    /** Offset of the main KV cache group + 1 (0 = not learned). */
    static final int MAIN_GROUP_OFFSET = 140;
    /** Offset of the store clock: the stamp of the last store. */
    static final int CLOCK_OFFSET = 144;
    /** Offset of the eviction hand: the slot where the next eviction samples first. */
    static final int HAND_OFFSET = 152;
    /** Offset of an entry's engine hash. */
    static final int ENTRY_HASH_OFFSET = 0;
    /** Offset of an entry's router key (0 = empty entry). */
    static final int ENTRY_KEY_OFFSET = 8;
    /** Offset of an entry's store stamp. */
    static final int ENTRY_STAMP_OFFSET = 16;
    /** Offset of an entry's media bits. */
    static final int ENTRY_MEDIA_OFFSET = 24;

    private PodBlockMapDescriptor() {
    }

    /**
     * @param i slot.
     * @return offset of the slot's entry.
     */
    static long entry(final int i) {
        return HEADER_LENGTH + (long) i * ENTRY_LENGTH;
    }

    /**
     * @param slots table slots.
     * @return file length of a map of that many slots.
     */
    static long length(final int slots) {
        return HEADER_LENGTH + (long) slots * ENTRY_LENGTH;
    }

    /**
     * Whether a new map file is faulted in whole when it is created ({@link PosixNative#MADV_POPULATE_WRITE}):
     * filling a 16,384-block map (three grows) took a median 10-23 ms with it and 23-54 ms without on the 2-vCPU
     * development VM under load 5 (2026-11-29, three alternating runs of 16 fills each), almost all of it page
     * faults, against 0.3-0.5 ms to fill the same map again once grown. {@code -Dkvidx.blockmap.populate=false}
     * turns it off.
     */
    static final boolean POPULATE = !"false".equals(System.getProperty("kvidx.blockmap.populate"));

    /**
     * Creates (or replaces) a map file with an empty table; its magic is stored last.
     *
     * @param file       the file.
     * @param slots      table slots (a power of two).
     * @param maxBlocks  most mappings.
     * @param generation the generation of the pod's index slot.
     * @param id         the pod id, UTF-8, at most {@link #POD_ID_MAX} bytes.
     * @param clock      the store clock to start from.
     * @return the mapped file.
     * @throws IOException when the file cannot be created.
     */
    static MappedRegion create(final Path file, final int slots, final int maxBlocks, final int generation,
        final byte[] id, final long clock) throws IOException {
        final MappedRegion region = MappedRegion.createPrivate(file, length(slots));
        final MemorySegment m = region.segment();
        if (POPULATE) {
            // One call instead of a page fault per 4 KiB page as the table fills (or a grow re-inserts into it); a
            // kernel without the advice refuses it and the pages fault in as before.
            PosixNative.madvise(m, PosixNative.MADV_POPULATE_WRITE);
        }
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
     * @param m          a mapped map file of {@code slots} slots (its length checked by the caller).
     * @param slots      the slots its length gives.
     * @param maxBlocks  most mappings the map must have been opened with.
     * @param generation the generation of the pod's index slot.
     * @param id         the pod id, UTF-8.
     * @return true when the file is whole and belongs to that pod, slot generation and size: it may be re-used.
     */
    static boolean matches(final MemorySegment m, final int slots, final int maxBlocks, final int generation,
        final byte[] id) {
        final long magic = m.get(LONG_LAYOUT, 0);
        return (magic == MAGIC || magic == MAGIC_V1) && m.get(ValueLayout.JAVA_INT, SLOTS_OFFSET) == slots
            && m.get(ValueLayout.JAVA_INT, MAX_BLOCKS_OFFSET) == maxBlocks
            && m.get(ValueLayout.JAVA_INT, GENERATION_OFFSET) == generation
            && m.get(ValueLayout.JAVA_INT, POD_ID_LENGTH_OFFSET) == id.length
            && Arrays.equals(id, m.asSlice(POD_ID_OFFSET, id.length).toArray(ValueLayout.JAVA_BYTE));
    }

    /**
     * @param m a mapped map file.
     * @return its pod id, UTF-8.
     */
    static byte[] podId(final MemorySegment m) {
        return m.asSlice(POD_ID_OFFSET, m.get(ValueLayout.JAVA_INT, POD_ID_LENGTH_OFFSET))
            .toArray(ValueLayout.JAVA_BYTE);
    }
}
