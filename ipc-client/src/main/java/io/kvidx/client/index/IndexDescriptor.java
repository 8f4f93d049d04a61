package io.kvidx.client.index;

import io.kvidx.ffm.Layouts;

/**
 * Layout of the shared-memory block index file: every offset, the geometry arithmetic and the semantic layout
 * version. Both the writer (daemon) and readers (routers) use this class and nothing else to find a field.
 *
 * <pre>
 * File (little-endian; sections aligned to 128 bytes, shard tables to 4 KiB)
 *
 *   0 +------------------------------------------------------------------+
 *     | magic u64 = "KVIDXIX1"                                           |
 *   8 | layout version i32 (major&lt;&lt;16 | minor&lt;&lt;8 | patch), WRITTEN LAST    |
 *  12 | header length i32 (= 256)                                        |
 *  16 | shard count i32               | slots per shard i32              |
 *  24 | max pods i32                  | max chain length i32             |
 *  32 | router block size i32         | key scheme i32                   |
 *  40 | epoch i64 (distinct per creation of the file)                    |
 *  48 | writer pid i64                                                   |
 *  56 | file length i64                                                  |
 *  64 | writer heartbeat i64, epoch ms (own line: the writer's clock)    |
 * 128 | alive bitmap: 4 x u64, bit p (word p/64, bit p%64) = pod slot p  |
 * 160 | pod table version i64: bumped (release) after every pod entry     |
 *     |   change, BEFORE a newly given slot's alive bit is set (3.1)     |
 * 256 +------------------------------------------------------------------+
 *     | pod table: max pods x 256-byte entries      (see POD_* offsets)  |
 *     +------------------------------------------------------------------+
 *     | shard headers: shard count x 128-byte lines (see SHARD_*)        |
 *     +-------------------------------- 4 KiB aligned -------------------+
 *     | shard tables: shard count x slots per shard x 16-byte entries    |
 *     +-------------------------------- 4 KiB aligned -------------------+
 *     | overflow: shard count x (slots per shard / 8) x 32-byte bitmaps  |
 *     |   (absent, length 0, in a direct cell: max pods &lt;= 64)           |
 *     +------------------------------------------------------------------+
 *
 * Pod table entry (256 bytes)                 Shard header (128 bytes)
 *   0 seqlock i64 (odd while changing)          0 version i64 (odd while entries move)
 *   8 generation i32 | 12 state i32            8 count i32 (occupied entries)
 *  16 pod id length i32 | 20 model length i32  12 overflow bitmaps in use i32
 *  24 pod id, UTF-8, 112 bytes                 16 evictions i64
 * 136 model, UTF-8, 116 bytes (3.2; 120 before) 24 evictions of inner blocks i64 (3.1)
 * 252 flags i32 (3.2): bit 0 = suspect          32 holders refused i64 (3.1)
 *                                              40 overflow demotions i64 (3.1)
 *                                              48..127 reserved
 *
 * Entry (16 bytes, four per cache line)
 *   0 key u64 (0 = empty; published last with a release store)
 *   8 pods u64. Direct cell (max pods &lt;= 64): the bitmap itself, bit p = pod slot p holds the block.
 *     Otherwise one of two forms, always replaced by one 64-bit store:
 *       inline   (bit 63 = 0): byte 7 = count n (0..7), bytes 0..n-1 = the pod slots holding the block
 *       overflow (bit 63 = 1): bits 0..31 = index of a 32-byte bitmap in the shard's overflow area
 *
 * Overflow bitmap (32 bytes): 4 x u64, bit p = pod slot p holds the block.
 * </pre>
 *
 * <p>Keys select a shard and a home slot by Fibonacci hashing: {@code h = key * 0x9E3779B97F4A7C15}, shard =
 * the top {@code log2(shards)} bits of h, home slot = the next {@code log2(slotsPerShard)} bits with the low two
 * cleared (the first entry of a 64-byte line, {@link #HOME_SLOT_MASK}). Collisions are resolved by linear probing
 * from the home slot. Key 0 marks an empty entry, so a key of 0 is stored as {@link #ZERO_KEY_ALIAS}.
 *
 * <p>See docs/index-layout.md for the publication protocol readers rely on.
 */
public final class IndexDescriptor {
    /** "KVIDXIX1" read as a little-endian u64. */
    public static final long MAGIC = 0x3158_4958_4449_564BL;
    /** Layout major version: readers reject another major. */
    public static final int VERSION_MAJOR = 3;
    /** Layout minor version: additive, compatible changes. */
    public static final int VERSION_MINOR = 2;
    /** Layout patch version. */
    public static final int VERSION_PATCH = 0;
    /** The semantic layout version this code writes. */
    public static final int LAYOUT_VERSION = composeVersion(VERSION_MAJOR, VERSION_MINOR, VERSION_PATCH);

    /** Key scheme 1: kvidx router keys (chained 64-bit hash of token ids). */
    public static final int KEY_SCHEME_ROUTER_V1 = 1;
    /**
     * Key scheme 2: "xxh3-chain", the chained XXH3-64 over little-endian u32 token ids of Mooncake's indexer API
     * ({@link io.kvidx.client.keys.ChainedXxh3Hasher}).
     */
    public static final int KEY_SCHEME_XXH3_CHAIN = 2;

    /**
     * @param scheme a key scheme number.
     * @return its name: {@code kvidx}, {@code xxh3-chain}, or {@code scheme-N} for one this version does not know.
     */
    public static String keySchemeName(final int scheme) {
        return switch (scheme) {
            case KEY_SCHEME_ROUTER_V1 -> "kvidx";
            case KEY_SCHEME_XXH3_CHAIN -> "xxh3-chain";
            default -> "scheme-" + scheme;
        };
    }

    /**
     * @param name {@code kvidx} or {@code xxh3-chain}.
     * @return the key scheme number.
     * @throws IllegalArgumentException for any other name.
     */
    public static int keySchemeOf(final String name) {
        return switch (name == null ? "" : name) {
            case "kvidx" -> KEY_SCHEME_ROUTER_V1;
            case "xxh3-chain" -> KEY_SCHEME_XXH3_CHAIN;
            default -> throw new IllegalArgumentException("key scheme must be kvidx or xxh3-chain: " + name);
        };
    }

    /** Length of the file header, including the alive bitmap. */
    public static final int HEADER_LENGTH = 256;
    /** Offset of the magic. */
    public static final int MAGIC_OFFSET = 0;
    /** Offset of the layout version, written last. */
    public static final int LAYOUT_VERSION_OFFSET = 8;
    /** Offset of the header length. */
    public static final int HEADER_LENGTH_OFFSET = 12;
    /** Offset of the shard count. */
    public static final int SHARD_COUNT_OFFSET = 16;
    /** Offset of the slots per shard. */
    public static final int SLOTS_PER_SHARD_OFFSET = 20;
    /** Offset of the max pods. */
    public static final int MAX_PODS_OFFSET = 24;
    /** Offset of the max chain length. */
    public static final int MAX_CHAIN_OFFSET = 28;
    /** Offset of the router block size. */
    public static final int BLOCK_SIZE_OFFSET = 32;
    /** Offset of the key scheme. */
    public static final int KEY_SCHEME_OFFSET = 36;
    /** Offset of the epoch. */
    public static final int EPOCH_OFFSET = 40;
    /** Offset of the writer's pid. */
    public static final int WRITER_PID_OFFSET = 48;
    /** Offset of the file length. */
    public static final int FILE_LENGTH_OFFSET = 56;
    /** Offset of the writer heartbeat (epoch milliseconds). */
    public static final int HEARTBEAT_OFFSET = 64;
    /** Offset of the alive bitmap (4 words). */
    public static final int ALIVE_BITMAP_OFFSET = 128;
    /**
     * Offset of the pod table version (layout 3.1): the writer increments it with a release store after every change
     * of a pod table entry, and before it sets the alive bit of a slot it has just given to a pod. A reader that
     * loads the alive bitmap and then this version therefore sees a new version whenever an alive bit it saw belongs
     * to a slot that changed hands; it shares the alive bitmap's cache line.
     */
    public static final int POD_TABLE_VERSION_OFFSET = 160;
    /** Offset of the pod table. */
    public static final int POD_TABLE_OFFSET = HEADER_LENGTH;

    /** Length of one pod table entry. */
    public static final int POD_ENTRY_LENGTH = 256;
    /** Pod entry: seqlock, odd while the writer changes the entry. */
    public static final int POD_SEQ_OFFSET = 0;
    /** Pod entry: generation, bumped each time the slot is given to a pod. */
    public static final int POD_GENERATION_OFFSET = 8;
    /** Pod entry: state, one of the {@code POD_STATE_*} values. */
    public static final int POD_STATE_OFFSET = 12;
    /** Pod entry: UTF-8 length of the pod id. */
    public static final int POD_ID_LENGTH_OFFSET = 16;
    /** Pod entry: UTF-8 length of the model name. */
    public static final int POD_MODEL_LENGTH_OFFSET = 20;
    /** Pod entry: pod id bytes. */
    public static final int POD_ID_OFFSET = 24;
    /** Maximum UTF-8 length of a pod id. */
    public static final int POD_ID_MAX_LENGTH = 112;
    /** Pod entry: model name bytes. */
    public static final int POD_MODEL_OFFSET = 136;
    /**
     * Maximum UTF-8 length of a model name: 116 bytes since layout 3.2 (120 before; the last 4 bytes became the
     * flags, so a 3.1 reader, which reads at most the 116 bytes the length names, still works).
     */
    public static final int POD_MODEL_MAX_LENGTH = 116;
    /** Maximum UTF-8 length of a model name in a file of layout 3.0 or 3.1 (no flags field). */
    public static final int POD_MODEL_MAX_LENGTH_BEFORE_FLAGS = 120;
    /**
     * Pod entry (3.2): flags i32, written under the entry's seqlock (each change bumps the pod table version). In a
     * file of an earlier minor version these bytes may hold the tail of a model name: read them only when the
     * file's layout version is at least {@link #FLAGS_MIN_VERSION}.
     */
    public static final int POD_FLAGS_OFFSET = 252;
    /**
     * Pod flag: the pod is suspect. The daemon could not keep its state complete (an event gap its engine could not
     * replay): its blocks may include some the engine dropped, or lack some it stored. Set until the pod is cleared
     * and resynced, or goes down.
     */
    public static final int POD_FLAG_SUSPECT = 1;
    /** First layout version whose pod entries have {@link #POD_FLAGS_OFFSET}. */
    public static final int FLAGS_MIN_VERSION = composeVersion(3, 2, 0);
    /** Pod state: slot free. */
    public static final int POD_STATE_FREE = 0;
    /** Pod state: pod alive, its bits count. */
    public static final int POD_STATE_ALIVE = 1;
    /** Pod state: pod down, its bits are being swept; the slot is not reusable yet. */
    public static final int POD_STATE_DRAINING = 2;

    /** Length of one shard header. */
    public static final int SHARD_HEADER_LENGTH = Layouts.PADDED_LINE_LENGTH;
    /** Shard header: seqlock version, odd while entries are removed or moved. */
    public static final int SHARD_VERSION_OFFSET = 0;
    /** Shard header: occupied entries. */
    public static final int SHARD_ENTRY_COUNT_OFFSET = 8;
    /** Shard header: overflow bitmaps in use. */
    public static final int SHARD_OVERFLOW_IN_USE_OFFSET = 12;
    /** Shard header: entries evicted because the shard was full. */
    public static final int SHARD_EVICTIONS_OFFSET = 16;
    /**
     * Shard header (3.1): of those evictions, entries evicted while blocks stored after them in their chain were
     * still indexed (no sampled entry was a chain's tail).
     */
    public static final int SHARD_EVICTIONS_INNER_OFFSET = 24;
    /** Shard header (3.1): pods not recorded as holders of a block because the overflow pool was full. */
    public static final int SHARD_HOLDERS_REFUSED_OFFSET = 32;
    /** Shard header (3.1): overflow bitmaps given back by turning an entry of at most 7 holders inline again. */
    public static final int SHARD_OVERFLOW_DEMOTIONS_OFFSET = 40;

    /** Length of one table entry: a quarter of a cache line. */
    public static final int ENTRY_LENGTH = 16;
    /** log2 of {@link #ENTRY_LENGTH}. */
    public static final int ENTRY_LENGTH_SHIFT = 4;
    /** Entry: key. */
    public static final int ENTRY_KEY_OFFSET = 0;
    /** Entry: the pods word (inline pod list or overflow index). */
    public static final int ENTRY_PODS_OFFSET = 8;
    /** Pods word flag: the word holds an overflow bitmap index. */
    public static final long PODS_OVERFLOW_FLAG = Long.MIN_VALUE;
    /** Pod slots an inline pods word holds. */
    public static final int PODS_INLINE_MAX = 7;
    /** Length of one overflow bitmap. */
    public static final int OVERFLOW_LENGTH = 32;
    /** Table slots per overflow bitmap: each shard has slotsPerShard / 8 overflow bitmaps. */
    public static final int SLOTS_PER_OVERFLOW = 8;
    /**
     * Largest cell whose pods words are plain 64-bit bitmaps ({@link #isDirect}): no inline lists, no overflow
     * area, one load per lookup.
     */
    public static final int DIRECT_MAX_PODS = 64;

    /** Pods per cell: the width of every bitmap. */
    public static final int MAX_PODS = 256;
    /** Words in a pod bitmap. */
    public static final int POD_WORDS = MAX_PODS / 64;
    /** Fewest shards (a power of two). */
    public static final int MIN_SHARDS = 2;
    /** Most shards (a power of two). */
    public static final int MAX_SHARDS = 65536;
    /** Fewest entries per shard (a power of two). */
    public static final int MIN_SLOTS_PER_SHARD = 16;
    /** Most entries per shard (a power of two). */
    public static final int MAX_SLOTS_PER_SHARD = 1 << 24;
    /** Largest longest-chain a cell can be created with. */
    public static final int MAX_CHAIN_LIMIT = 1 << 20;
    /**
     * Clears the low two bits of a hashed slot: a key's home is the first entry of its 64-byte line (4 entries),
     * so the keys that hash into one line are stored in that line before any spills into the next (layout 3.0,
     * ADR 0006).
     */
    public static final int HOME_SLOT_MASK = ~3;
    /** Entries per 64-byte line, the entries a home line holds: {@code ~HOME_SLOT_MASK + 1}. */
    public static final int LINE_ENTRIES = 4;
    /** Multiplier of Fibonacci hashing (2^64 / golden ratio). */
    public static final long FIBONACCI_MULTIPLIER = 0x9E37_79B9_7F4A_7C15L;
    /** The value stored in place of key 0, which marks empty entries. */
    public static final long ZERO_KEY_ALIAS = 0x8000_0000_0000_0001L;

    private IndexDescriptor() {
    }

    /**
     * @param major major version, 0..32767.
     * @param minor minor version, 0..255.
     * @param patch patch version, 0..255.
     * @return the packed semantic version.
     */
    public static int composeVersion(final int major, final int minor, final int patch) {
        return (major << 16) | ((minor & 0xFF) << 8) | (patch & 0xFF);
    }

    /**
     * @param version a packed version.
     * @return its major part.
     */
    public static int majorVersion(final int version) {
        return version >>> 16;
    }

    /**
     * @param version a packed version.
     * @return "major.minor.patch".
     */
    public static String versionString(final int version) {
        return (version >>> 16) + "." + ((version >>> 8) & 0xFF) + "." + (version & 0xFF);
    }

    /**
     * @param maxPods pods in the cell.
     * @return offset of the first shard header.
     */
    public static long shardHeadersOffset(final int maxPods) {
        return POD_TABLE_OFFSET + (long) maxPods * POD_ENTRY_LENGTH;
    }

    /**
     * @param maxPods    pods in the cell.
     * @param shardCount shards.
     * @return offset of the first shard table (4 KiB aligned).
     */
    public static long tablesOffset(final int maxPods, final int shardCount) {
        return Layouts.align(shardHeadersOffset(maxPods) + (long) shardCount * SHARD_HEADER_LENGTH,
            Layouts.PAGE_LENGTH);
    }

    /**
     * @param maxPods pods in the cell.
     * @return true when the cell's pods words are 64-bit bitmaps (at most {@link #DIRECT_MAX_PODS} pods).
     */
    public static boolean isDirect(final int maxPods) {
        return maxPods <= DIRECT_MAX_PODS;
    }

    /**
     * @param maxPods       pods in the cell.
     * @param slotsPerShard entries per shard.
     * @return overflow bitmaps per shard (0 in a direct cell).
     */
    public static int overflowPerShard(final int maxPods, final int slotsPerShard) {
        return isDirect(maxPods) ? 0 : slotsPerShard / SLOTS_PER_OVERFLOW;
    }

    /**
     * @param maxPods       pods in the cell.
     * @param shardCount    shards.
     * @param slotsPerShard entries per shard.
     * @return offset of the first overflow area (4 KiB aligned).
     */
    public static long overflowOffset(final int maxPods, final int shardCount, final int slotsPerShard) {
        return Layouts.align(tablesOffset(maxPods, shardCount) + (long) shardCount * slotsPerShard * ENTRY_LENGTH,
            Layouts.PAGE_LENGTH);
    }

    /**
     * @param maxPods       pods in the cell.
     * @param shardCount    shards.
     * @param slotsPerShard entries per shard.
     * @return the length of the whole file.
     */
    public static long fileLength(final int maxPods, final int shardCount, final int slotsPerShard) {
        return overflowOffset(maxPods, shardCount, slotsPerShard)
            + (long) shardCount * overflowPerShard(maxPods, slotsPerShard) * OVERFLOW_LENGTH;
    }

    /**
     * @param podsWord an inline pods word.
     * @return the number of pod slots it lists.
     */
    public static int inlineCount(final long podsWord) {
        return (int) (podsWord >>> 56);
    }

    /**
     * @param podsWord an inline pods word.
     * @param index    0 .. count-1.
     * @return the pod slot at that index.
     */
    public static int inlineSlot(final long podsWord, final int index) {
        return (int) (podsWord >>> (index << 3)) & 0xFF;
    }

    /**
     * @param slot pod slot.
     * @return offset of that pod's table entry.
     */
    public static long podEntryOffset(final int slot) {
        return POD_TABLE_OFFSET + (long) slot * POD_ENTRY_LENGTH;
    }

    /**
     * @param key a key as given by a caller.
     * @return the key as stored (0 is replaced by {@link #ZERO_KEY_ALIAS}).
     */
    public static long storedKey(final long key) {
        return key == 0 ? ZERO_KEY_ALIAS : key;
    }

    /**
     * @param storedKey a stored key.
     * @return its Fibonacci hash, whose top bits select the shard and the next bits the home slot.
     */
    public static long spread(final long storedKey) {
        return storedKey * FIBONACCI_MULTIPLIER;
    }

    /**
     * @param spread    a stored key's {@link #spread}.
     * @param shardBits log2 of the shard count.
     * @param slotBits  log2 of the slots per shard.
     * @return the key's home slot within its shard.
     */
    public static int homeSlot(final long spread, final int shardBits, final int slotBits) {
        return (int) ((spread << shardBits) >>> (64 - slotBits)) & HOME_SLOT_MASK;
    }

    /**
     * @param spread    a stored key's {@link #spread}.
     * @param shardBits log2 of the shard count.
     * @param slotBits  log2 of the slots per shard.
     * @return shard * slotsPerShard + home slot: the index of the key's home entry over all tables.
     */
    public static long homeIndex(final long spread, final int shardBits, final int slotBits) {
        return (spread >>> (64 - shardBits - slotBits)) & HOME_SLOT_MASK;
    }

    /**
     * Checks a geometry and returns a description of what is wrong, or null when valid.
     *
     * @param shardCount    shards, a power of two in [2, 65536].
     * @param slotsPerShard entries per shard, a power of two in [16, 2^24].
     * @param maxPods       pods, 1..256.
     * @param maxChain      longest chain a query accepts, 1..1,048,576.
     * @return null when valid, else the reason.
     */
    public static String validateGeometry(final int shardCount, final int slotsPerShard, final int maxPods,
        final int maxChain) {
        if (!Layouts.isPowerOfTwo(shardCount) || shardCount < MIN_SHARDS || shardCount > MAX_SHARDS) {
            return "shard count must be a power of two in [" + MIN_SHARDS + ", " + MAX_SHARDS + "]: " + shardCount;
        }
        if (!Layouts.isPowerOfTwo(slotsPerShard) || slotsPerShard < MIN_SLOTS_PER_SHARD
            || slotsPerShard > MAX_SLOTS_PER_SHARD) {
            return "slots per shard must be a power of two in [" + MIN_SLOTS_PER_SHARD + ", " + MAX_SLOTS_PER_SHARD
                + "]: " + slotsPerShard;
        }
        if (maxPods < 1 || maxPods > MAX_PODS) {
            return "max pods must be in [1, " + MAX_PODS + "]: " + maxPods;
        }
        if (maxChain < 1 || maxChain > MAX_CHAIN_LIMIT) {
            return "max chain length must be in [1, " + MAX_CHAIN_LIMIT + "]: " + maxChain;
        }
        return null;
    }
}
