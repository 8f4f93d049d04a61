package io.kvidx.daemon.snapshot;

/**
 * Layout of a daemon snapshot ({@code GET /dump?format=kvidx}, {@link SnapshotService}): what a new replica loads
 * at start ({@code --peer}, {@link SnapshotLoader}) to catch up from a running daemon. Every offset, limit and the
 * semantic layout version; {@link SnapshotEncoder} writes and {@link SnapshotView} reads through this class only.
 * Spec: docs/snapshot-format.md.
 *
 * <pre>
 * Snapshot (little-endian; every record starts 8-byte aligned)
 *
 *   0 +---------------------------------------------------------------+
 *     | magic u64 = "KVIDXSN1"                                        |
 *   8 | layout version i32 (major&lt;&lt;16 | minor&lt;&lt;8 | patch) | header length i32 (= 64)
 *  16 | total length i64 (header to trailer: the snapshot's byte count) |
 *  24 | taken at i64 (epoch ms)                                       |
 *  32 | router block size i32            | key scheme i32             |
 *  40 | max pods i32                     | pod count i32              |
 *  48 | publisher count i32              | pods offset i32            |
 *  56 | membership offset i32            | membership length i32      |
 *  64 +--------------------------- header length --------------------+
 *     | publishers: publisher count records                           |
 *     +--------------------------- pods offset -----------------------+
 *     | pods: pod count records                                       |
 *     +--------------------------- membership offset -----------------+
 *     | membership: opaque bytes, zero-padded to 8                    |
 *     +--------------------------- total length - 8 ------------------+
 *     | CRC32C u32 of bytes [0, total length - 8) | reserved u32 (0)  |
 *     +--------------------------- total length ----------------------+
 *
 * Publisher record (a ZeroMQ publisher's PublisherProgress entry)
 *   0 record length i32 (multiple of 8) | endpoint length u16 | pod id length u16 (0xFFFF = none)
 *   8 sequence i64: every batch up to it is in the snapshot (-1 = none)
 *  16 fingerprint u64 of the batch applied under the sequence (0 = none)
 *  24 endpoint UTF-8 | pod id UTF-8 | zero pad to 8
 *
 * Pod record (a registered pod and its engine-hash map)
 *   0 record length i32 (multiple of 8) | entry count i32
 *   8 flags i32 (bit 0 = suspect)       | main KV cache group i32 (-1 = not learnt)
 *  16 pod id length u16 | model length u16 (0xFFFF = none) | reserved u32 (0)
 *  24 pod id UTF-8 | model UTF-8 | zero pad to 8
 *     entries, 32 bytes each:
 *   0   engine hash u64 | 8 router key u64 (never 0) | 16 media bits u64 | 24 parent router key u64 (0 = none)
 * </pre>
 *
 * <p>Versioning: a reader accepts its own major version and any minor; a later minor may lengthen the header and
 * append fields at the end of a record (readers skip to the lengths they carry), never move a field. Every length is checked against the
 * bytes that hold it before anything is decoded ({@link SnapshotView#wrap}).
 *
 * <p><b>Note:</b> stateless.
 */
public final class SnapshotDescriptor {
    /** "KVIDXSN1" read as a little-endian u64. */
    public static final long MAGIC = 0x314E_5358_4449_564BL;
    /** Layout major version: readers reject another major. */
    public static final int VERSION_MAJOR = 1;
    /** Layout minor version: additive, compatible changes. */
    public static final int VERSION_MINOR = 0;
    /** Layout patch version. */
    public static final int VERSION_PATCH = 0;
    /** The semantic layout version this code writes. */
    public static final int LAYOUT_VERSION = (VERSION_MAJOR << 16) | (VERSION_MINOR << 8) | VERSION_PATCH;

    /** Offset of the magic. */
    public static final int MAGIC_OFFSET = 0;
    /** Offset of the layout version. */
    public static final int LAYOUT_VERSION_OFFSET = 8;
    /** Offset of the header length. */
    public static final int HEADER_LENGTH_OFFSET = 12;
    /** Offset of the total length. */
    public static final int TOTAL_LENGTH_OFFSET = 16;
    /** Offset of the time the snapshot was taken (epoch ms). */
    public static final int TAKEN_AT_OFFSET = 24;
    /** Offset of the router block size. */
    public static final int BLOCK_SIZE_OFFSET = 32;
    /** Offset of the key scheme. */
    public static final int KEY_SCHEME_OFFSET = 36;
    /** Offset of the source cell's max pods. */
    public static final int MAX_PODS_OFFSET = 40;
    /** Offset of the pod count. */
    public static final int POD_COUNT_OFFSET = 44;
    /** Offset of the publisher count. */
    public static final int PUBLISHER_COUNT_OFFSET = 48;
    /** Offset of the pods section's offset. */
    public static final int PODS_OFFSET_OFFSET = 52;
    /** Offset of the membership section's offset. */
    public static final int MEMBERSHIP_OFFSET_OFFSET = 56;
    /** Offset of the membership section's length (before padding). */
    public static final int MEMBERSHIP_LENGTH_OFFSET = 60;
    /** Length of the header this version writes; the publishers follow it. */
    public static final int HEADER_LENGTH = 64;
    /** Length of the trailer (checksum, reserved). */
    public static final int TRAILER_LENGTH = 8;
    /** The shortest snapshot: a header and a trailer. */
    public static final int MIN_LENGTH = HEADER_LENGTH + TRAILER_LENGTH;

    /** Offset in a record of its length (both record kinds). */
    public static final int RECORD_LENGTH_OFFSET = 0;
    /** Offset of a publisher record's endpoint length. */
    public static final int PUBLISHER_ENDPOINT_LENGTH_OFFSET = 4;
    /** Offset of a publisher record's pod id length. */
    public static final int PUBLISHER_POD_ID_LENGTH_OFFSET = 6;
    /** Offset of a publisher record's sequence. */
    public static final int PUBLISHER_SEQUENCE_OFFSET = 8;
    /** Offset of a publisher record's fingerprint. */
    public static final int PUBLISHER_FINGERPRINT_OFFSET = 16;
    /** Length of a publisher record's fixed part; its strings follow. */
    public static final int PUBLISHER_FIXED_LENGTH = 24;

    /** Offset of a pod record's entry count. */
    public static final int POD_ENTRY_COUNT_OFFSET = 4;
    /** Offset of a pod record's flags. */
    public static final int POD_FLAGS_OFFSET = 8;
    /** Offset of a pod record's main KV cache group. */
    public static final int POD_MAIN_GROUP_OFFSET = 12;
    /** Offset of a pod record's pod id length. */
    public static final int POD_ID_LENGTH_OFFSET = 16;
    /** Offset of a pod record's model length. */
    public static final int POD_MODEL_LENGTH_OFFSET = 18;
    /** Length of a pod record's fixed part; its strings, then its entries follow. */
    public static final int POD_FIXED_LENGTH = 24;
    /** Pod flag: the pod's state may be incomplete (the pod table's suspect flag). */
    public static final int POD_FLAG_SUSPECT = 1;

    /** Length of a pod entry. */
    public static final int ENTRY_LENGTH = 32;
    /** Offset of an entry's engine hash. */
    public static final int ENTRY_HASH_OFFSET = 0;
    /** Offset of an entry's router key. */
    public static final int ENTRY_KEY_OFFSET = 8;
    /** Offset of an entry's media bits. */
    public static final int ENTRY_MEDIA_OFFSET = 16;
    /** Offset of an entry's parent router key. */
    public static final int ENTRY_PARENT_OFFSET = 24;

    /** String length meaning "none" (a publisher's pod id, a pod's model). */
    public static final int NO_STRING = 0xFFFF;
    /** Longest pod id, UTF-8 bytes (the index's pod table). */
    public static final int POD_ID_MAX = 112;
    /** Longest model, UTF-8 bytes (the index's pod table). */
    public static final int MODEL_MAX = 116;
    /** Longest endpoint, UTF-8 bytes. */
    public static final int ENDPOINT_MAX = 4096;
    /** Most pods in a snapshot. */
    public static final int MAX_PODS = 1 << 16;
    /** Most publishers in a snapshot. */
    public static final int MAX_PUBLISHERS = 1 << 16;

    private SnapshotDescriptor() {
    }

    /**
     * @param length a length.
     * @return it rounded up to a multiple of 8.
     */
    public static long align8(final long length) {
        return (length + 7) & ~7L;
    }

    /**
     * @param endpointLength endpoint, UTF-8 bytes.
     * @param podIdLength    pod id, UTF-8 bytes (0 when none).
     * @return the publisher record's length.
     */
    public static long publisherRecordLength(final int endpointLength, final int podIdLength) {
        return align8((long) PUBLISHER_FIXED_LENGTH + endpointLength + podIdLength);
    }

    /**
     * @param podIdLength pod id, UTF-8 bytes.
     * @param modelLength model, UTF-8 bytes (0 when none).
     * @return offset of the first entry in the pod record.
     */
    public static int podEntriesOffset(final int podIdLength, final int modelLength) {
        return (int) align8((long) POD_FIXED_LENGTH + podIdLength + modelLength);
    }

    /**
     * @param podIdLength pod id, UTF-8 bytes.
     * @param modelLength model, UTF-8 bytes (0 when none).
     * @param entries     entries.
     * @return the pod record's length.
     */
    public static long podRecordLength(final int podIdLength, final int modelLength, final long entries) {
        return podEntriesOffset(podIdLength, modelLength) + entries * ENTRY_LENGTH;
    }

    /**
     * @param version a layout version.
     * @return its major part.
     */
    public static int majorVersion(final int version) {
        return version >>> 16;
    }

    /**
     * @param version a layout version.
     * @return it as major.minor.patch.
     */
    public static String describeVersion(final int version) {
        return (version >>> 16) + "." + ((version >>> 8) & 0xFF) + "." + (version & 0xFF);
    }
}
