package io.kvidx.client.tiers;

/**
 * Layout of the host tier map file ({@code <dir>/<cell>/tiers}): where each pod holds the blocks the index says it
 * holds (GPU, CPU, disk or other storage, local or remote). Both the writer (the daemon's writer agents) and
 * readers (routers) use this class and nothing else to find a field.
 *
 * <pre>
 * File (little-endian; regions aligned to 128 bytes)
 *
 *   0 +------------------------------------------------------------------+
 *     | magic u64 = "KVIDXTM1"                                           |
 *   8 | layout version i32 (major&lt;&lt;16 | minor&lt;&lt;8 | patch), WRITTEN LAST    |
 *  12 | header length i32 (= 256)                                        |
 *  16 | max pods P i32                | slots per region C i32           |
 *  24 | max entries per region i32    | region header length i32 (128)   |
 *  32 | epoch i64 (distinct per creation of the file)                    |
 *  40 | writer pid i64                                                   |
 *  48 | file length i64                                                  |
 *  56 | superseded i64: 0 while current; 1 once a newer file replaced it |
 *  64 | reserved .. 255                                                  |
 * 256 +------------------------------------------------------------------+
 *     | region of pod slot 0: 128-byte header, then C x 16-byte entries  |
 *     | region of pod slot 1 ...                                         |
 *     | region of pod slot P-1                                           |
 *     +------------------------------------------------------------------+
 *
 * Region header (128 bytes)                   Entry (16 bytes, four per cache line)
 *   0 version i64 (seqlock: odd while entries   0 router key u64 (0 = empty; published last,
 *     move or the region is reset)                with a release store)
 *   8 generation i32: the index slot's          8 value u64, replaced by one 64-bit store:
 *     generation whose tiers these are            bits 0..3  media held (GPU 1, CPU 2, DISK 4, OTHER 8)
 *     (0 = none)                                  bits 4..7  REMOTE flag of each medium (medium bit &lt;&lt; 4)
 *  12 entry count i32                             bits 8..63 store stamp (the writer's eviction clock)
 *  16..127 reserved
 * </pre>
 *
 * <p>Keys find their home entry by Fibonacci hashing within their pod's region: {@code h = key *
 * 0x9E3779B97F4A7C15}, home = the top {@code log2(C)} bits of h; collisions probe linearly, wrapping within the
 * region; an empty key ends the search. A key of 0 is stored as {@link #ZERO_KEY_ALIAS}, as in the index.
 *
 * <p>See docs/index-layout.md ("Host tier map") for the publication protocol readers rely on.
 */
public final class TierMapDescriptor {
    /** "KVIDXTM1" read as a little-endian u64. */
    public static final long MAGIC = 0x314D_5458_4449_564BL;
    /** Layout major version: readers reject another major. */
    public static final int VERSION_MAJOR = 1;
    /** Layout minor version. */
    public static final int VERSION_MINOR = 0;
    /** Layout patch version. */
    public static final int VERSION_PATCH = 0;
    /** The layout version this code writes. */
    public static final int LAYOUT_VERSION = VERSION_MAJOR << 16 | VERSION_MINOR << 8 | VERSION_PATCH;
    /** File name inside the cell directory. */
    public static final String FILE_NAME = "tiers";

    /** Length of the file header. */
    public static final int HEADER_LENGTH = 256;
    /** Offset of the magic. */
    public static final int MAGIC_OFFSET = 0;
    /** Offset of the layout version (written last, release). */
    public static final int LAYOUT_VERSION_OFFSET = 8;
    /** Offset of the header length. */
    public static final int HEADER_LENGTH_OFFSET = 12;
    /** Offset of max pods. */
    public static final int MAX_PODS_OFFSET = 16;
    /** Offset of the slots per region. */
    public static final int SLOTS_OFFSET = 20;
    /** Offset of the max entries per region. */
    public static final int MAX_ENTRIES_OFFSET = 24;
    /** Offset of the region header length. */
    public static final int REGION_HEADER_LENGTH_OFFSET = 28;
    /** Offset of the epoch. */
    public static final int EPOCH_OFFSET = 32;
    /** Offset of the writer pid. */
    public static final int WRITER_PID_OFFSET = 40;
    /** Offset of the file length. */
    public static final int FILE_LENGTH_OFFSET = 48;
    /** Offset of the superseded flag. */
    public static final int SUPERSEDED_OFFSET = 56;

    /** Length of a region header. */
    public static final int REGION_HEADER_LENGTH = 128;
    /** Offset of a region's seqlock version. */
    public static final int REGION_VERSION_OFFSET = 0;
    /** Offset of a region's generation. */
    public static final int REGION_GENERATION_OFFSET = 8;
    /** Offset of a region's entry count. */
    public static final int REGION_COUNT_OFFSET = 12;

    /** Length of an entry. */
    public static final int ENTRY_LENGTH = 16;
    /** Offset of an entry's key. */
    public static final int ENTRY_KEY_OFFSET = 0;
    /** Offset of an entry's value. */
    public static final int ENTRY_VALUE_OFFSET = 8;

    /** Medium bit: GPU memory (vLLM's default medium). */
    public static final int MEDIUM_GPU = 1;
    /** Medium bit: CPU memory. */
    public static final int MEDIUM_CPU = 2;
    /** Medium bit: local disk or storage tier. */
    public static final int MEDIUM_DISK = 4;
    /** Medium bit: any other medium. */
    public static final int MEDIUM_OTHER = 8;
    /** The media bits of a value. */
    public static final int MEDIA_MASK = 0xF;
    /** Shift of the REMOTE flags: a medium's flag is {@code mediumBit << REMOTE_SHIFT}. */
    public static final int REMOTE_SHIFT = 4;
    /** The tier bits of a value (media and REMOTE flags). */
    public static final int TIER_MASK = 0xFF;
    /** Shift of the store stamp in a value. */
    public static final int STAMP_SHIFT = 8;

    /** How a key of 0 is stored (0 marks empty entries). */
    public static final long ZERO_KEY_ALIAS = 0x8000_0000_0000_0001L;
    /** Fibonacci hashing multiplier. */
    public static final long GOLDEN = 0x9E37_79B9_7F4A_7C15L;
    /** Most pods of a cell. */
    public static final int MAX_PODS = 256;
    /** Fewest slots per region. */
    public static final int MIN_SLOTS = 16;
    /** Most slots per region. */
    public static final int MAX_SLOTS = 1 << 24;
    /** Largest fraction of a region in use before a new key evicts. */
    public static final double MAX_LOAD = 0.75;

    private TierMapDescriptor() {
    }

    /**
     * @return the most entries per pod {@link #slotsFor} accepts.
     */
    public static int maxEntries() {
        return (int) Math.floor(MAX_SLOTS * MAX_LOAD);
    }

    /**
     * @param maxEntries most entries per region, at least 1.
     * @return slots per region for that many entries at {@link #MAX_LOAD} (a power of two, at least
     * {@link #MIN_SLOTS}).
     */
    public static int slotsFor(final int maxEntries) {
        if (maxEntries < 1) {
            throw new IllegalArgumentException("tier map entries per pod must be >= 1: " + maxEntries);
        }
        final long wanted = (long) Math.ceil(maxEntries / MAX_LOAD);
        final long slots = Math.max(MIN_SLOTS, Long.highestOneBit(Math.max(1, wanted - 1)) << 1);
        if (slots > MAX_SLOTS) {
            throw new IllegalArgumentException("tier map entries per pod too large: " + maxEntries);
        }
        return (int) slots;
    }

    /**
     * @param slots slots per region.
     * @return the entries a region holds before it evicts.
     */
    public static int maxEntries(final int slots) {
        return (int) (slots * MAX_LOAD);
    }

    /**
     * @param slots slots per region.
     * @return bytes per region.
     */
    public static long regionLength(final int slots) {
        return REGION_HEADER_LENGTH + (long) slots * ENTRY_LENGTH;
    }

    /**
     * @param slot  pod slot.
     * @param slots slots per region.
     * @return offset of the slot's region.
     */
    public static long regionOffset(final int slot, final int slots) {
        return HEADER_LENGTH + slot * regionLength(slots);
    }

    /**
     * @param maxPods max pods.
     * @param slots   slots per region.
     * @return file length.
     */
    public static long fileLength(final int maxPods, final int slots) {
        return HEADER_LENGTH + maxPods * regionLength(slots);
    }

    /**
     * @param maxPods max pods.
     * @param slots   slots per region.
     * @return null when the geometry is valid, else the problem.
     */
    public static String validateGeometry(final int maxPods, final int slots) {
        if (maxPods < 1 || maxPods > MAX_PODS) {
            return "max pods must be in [1, " + MAX_PODS + "]: " + maxPods;
        }
        if (slots < MIN_SLOTS || slots > MAX_SLOTS || Integer.bitCount(slots) != 1) {
            return "slots per region must be a power of two in [" + MIN_SLOTS + ", " + MAX_SLOTS + "]: " + slots;
        }
        return null;
    }

    /**
     * @param key   a router key (0 allowed: aliased).
     * @param slots slots per region (a power of two).
     * @return the key's home entry index in its region.
     */
    public static int home(final long key, final int slots) {
        return (int) ((stored(key) * GOLDEN) >>> (64 - Integer.numberOfTrailingZeros(slots)));
    }

    /**
     * @param key a router key.
     * @return the value stored in an entry's key field for it.
     */
    public static long stored(final long key) {
        return key == 0 ? ZERO_KEY_ALIAS : key;
    }

    /**
     * @param version a layout version.
     * @return its major.
     */
    public static int majorVersion(final int version) {
        return version >>> 16;
    }

    /**
     * @param version a layout version.
     * @return "major.minor.patch".
     */
    public static String versionString(final int version) {
        return (version >>> 16) + "." + ((version >>> 8) & 0xFF) + "." + (version & 0xFF);
    }
}
