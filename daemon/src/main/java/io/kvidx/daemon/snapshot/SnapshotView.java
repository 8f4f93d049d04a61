package io.kvidx.daemon.snapshot;

import io.kvidx.daemon.state.PublisherProgress;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static io.kvidx.daemon.snapshot.SnapshotDescriptor.BLOCK_SIZE_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.ENDPOINT_MAX;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.ENTRY_HASH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.ENTRY_LENGTH;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.ENTRY_MEDIA_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.ENTRY_PARENT_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.HEADER_LENGTH;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.HEADER_LENGTH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.KEY_SCHEME_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.LAYOUT_VERSION_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MAGIC;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MAGIC_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MAX_PODS;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MAX_PODS_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MAX_PUBLISHERS;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MEMBERSHIP_LENGTH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MEMBERSHIP_OFFSET_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MIN_LENGTH;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MODEL_MAX;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.NO_STRING;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.PODS_OFFSET_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_COUNT_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_ENTRY_COUNT_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_FIXED_LENGTH;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_FLAGS_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_FLAG_SUSPECT;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_ID_LENGTH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_ID_MAX;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_MAIN_GROUP_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_MODEL_LENGTH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.PUBLISHER_COUNT_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.PUBLISHER_ENDPOINT_LENGTH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.PUBLISHER_FINGERPRINT_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.PUBLISHER_FIXED_LENGTH;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.PUBLISHER_POD_ID_LENGTH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.PUBLISHER_SEQUENCE_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.RECORD_LENGTH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.TAKEN_AT_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.TOTAL_LENGTH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.TRAILER_LENGTH;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.VERSION_MAJOR;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.align8;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.podEntriesOffset;

/**
 * A verified snapshot: {@link #wrap} checks the whole of it (magic, major version, lengths, checksum, every
 * record's bounds, UTF-8, router keys) before anything is decoded, so that a truncated, corrupt or hostile input is
 * refused with a {@link SnapshotFormatException} and never with an unchecked exception; the accessors then read
 * fields that are known to lie inside the bytes.
 *
 * <p><b>Note:</b> immutable once wrapped (the caller must not change the bytes); safe to share.
 */
public final class SnapshotView {
    private final ByteBuffer b;
    private final int length;
    private final List<PublisherProgress.Entry> publishers;
    private final int[] podOffsets;
    private final String[] podIds;
    private final String[] models;
    private final long blocks;

    private SnapshotView(final ByteBuffer b, final List<PublisherProgress.Entry> publishers, final int[] podOffsets,
        final String[] podIds, final String[] models, final long blocks) {
        this.b = b;
        this.length = b.capacity();
        this.publishers = List.copyOf(publishers);
        this.podOffsets = podOffsets;
        this.podIds = podIds;
        this.models = models;
        this.blocks = blocks;
    }

    /**
     * Verifies a snapshot.
     *
     * @param bytes    the snapshot.
     * @param maxBytes longest accepted.
     * @return the view.
     * @throws SnapshotFormatException naming the first problem and its byte offset.
     */
    public static SnapshotView wrap(final byte[] bytes, final long maxBytes) throws SnapshotFormatException {
        if (bytes.length > maxBytes) {
            throw new SnapshotFormatException("snapshot of " + bytes.length + " bytes exceeds the limit of " + maxBytes
                + " bytes (snapshotMaxBytes)");
        }
        if (bytes.length < MIN_LENGTH) {
            throw new SnapshotFormatException("truncated: " + bytes.length + " bytes, a snapshot has at least "
                + MIN_LENGTH);
        }
        final ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (b.getLong(MAGIC_OFFSET) != MAGIC) {
            throw new SnapshotFormatException("not a kvidx snapshot: magic 0x"
                + Long.toHexString(b.getLong(MAGIC_OFFSET)) + " at offset 0");
        }
        final int version = b.getInt(LAYOUT_VERSION_OFFSET);
        if (SnapshotDescriptor.majorVersion(version) != VERSION_MAJOR) {
            throw new SnapshotFormatException("snapshot layout version " + SnapshotDescriptor.describeVersion(version)
                + ", this daemon reads major version " + VERSION_MAJOR);
        }
        final long total = b.getLong(TOTAL_LENGTH_OFFSET);
        if (total != bytes.length) {
            throw new SnapshotFormatException((total > bytes.length ? "truncated" : "trailing bytes") + ": the header "
                + "gives " + total + " bytes, " + bytes.length + " received");
        }
        final int headerLength = b.getInt(HEADER_LENGTH_OFFSET);
        if (headerLength < HEADER_LENGTH || (headerLength & 7) != 0 || headerLength > total - TRAILER_LENGTH) {
            throw new SnapshotFormatException("header length " + headerLength + " out of range at offset "
                + HEADER_LENGTH_OFFSET);
        }
        final int end = bytes.length - TRAILER_LENGTH;
        final int stored = b.getInt(end);
        final int computed = SnapshotEncoder.checksum(bytes, end);
        if (stored != computed) {
            throw new SnapshotFormatException("checksum mismatch: CRC32C 0x" + Integer.toHexString(computed)
                + ", trailer at offset " + end + " holds 0x" + Integer.toHexString(stored));
        }
        check(b.getInt(end + 4) == 0, end + 4, "reserved trailer word " + b.getInt(end + 4));
        final int podCount = b.getInt(POD_COUNT_OFFSET);
        final int publisherCount = b.getInt(PUBLISHER_COUNT_OFFSET);
        final int podsOffset = b.getInt(PODS_OFFSET_OFFSET);
        final int membershipOffset = b.getInt(MEMBERSHIP_OFFSET_OFFSET);
        final int membershipLength = b.getInt(MEMBERSHIP_LENGTH_OFFSET);
        check(podCount >= 0 && podCount <= MAX_PODS, POD_COUNT_OFFSET, "pod count " + podCount);
        check(publisherCount >= 0 && publisherCount <= MAX_PUBLISHERS, PUBLISHER_COUNT_OFFSET,
            "publisher count " + publisherCount);
        check(b.getInt(BLOCK_SIZE_OFFSET) > 0, BLOCK_SIZE_OFFSET, "block size " + b.getInt(BLOCK_SIZE_OFFSET));
        check(b.getInt(MAX_PODS_OFFSET) > 0, MAX_PODS_OFFSET, "max pods " + b.getInt(MAX_PODS_OFFSET));
        check(podsOffset >= headerLength && (podsOffset & 7) == 0 && podsOffset <= end, PODS_OFFSET_OFFSET,
            "pods offset " + podsOffset);
        check(membershipOffset >= podsOffset && (membershipOffset & 7) == 0 && membershipOffset <= end,
            MEMBERSHIP_OFFSET_OFFSET, "membership offset " + membershipOffset);
        check(membershipLength >= 0 && membershipOffset + align8(membershipLength) == end, MEMBERSHIP_LENGTH_OFFSET,
            "membership length " + membershipLength + " (section at " + membershipOffset + ", trailer at " + end
                + ")");

        final List<PublisherProgress.Entry> publishers = new ArrayList<>(publisherCount);
        int at = headerLength;
        for (int i = 0; i < publisherCount; i++) {
            final int recordLength = recordLength(b, at, podsOffset, PUBLISHER_FIXED_LENGTH, "publisher " + i);
            final int endpointLength = Short.toUnsignedInt(b.getShort(at + PUBLISHER_ENDPOINT_LENGTH_OFFSET));
            final int idField = Short.toUnsignedInt(b.getShort(at + PUBLISHER_POD_ID_LENGTH_OFFSET));
            final int idLength = idField == NO_STRING ? 0 : idField;
            check(endpointLength >= 1 && endpointLength <= ENDPOINT_MAX, at + PUBLISHER_ENDPOINT_LENGTH_OFFSET,
                "publisher " + i + ": endpoint length " + endpointLength);
            check(idField == NO_STRING || (idLength >= 1 && idLength <= POD_ID_MAX),
                at + PUBLISHER_POD_ID_LENGTH_OFFSET, "publisher " + i + ": pod id length " + idField);
            check(PUBLISHER_FIXED_LENGTH + endpointLength + idLength <= recordLength, at,
                "publisher " + i + ": strings overrun its record of " + recordLength + " bytes");
            final String endpoint = utf8(bytes, at + PUBLISHER_FIXED_LENGTH, endpointLength);
            final String podId = idField == NO_STRING ? null
                : utf8(bytes, at + PUBLISHER_FIXED_LENGTH + endpointLength, idLength);
            publishers.add(new PublisherProgress.Entry(endpoint, b.getLong(at + PUBLISHER_SEQUENCE_OFFSET), podId,
                b.getLong(at + PUBLISHER_FINGERPRINT_OFFSET)));
            at += recordLength;
        }
        check(at == podsOffset, PODS_OFFSET_OFFSET, "publishers end at " + at + ", pods offset is " + podsOffset);

        final int[] podOffsets = new int[podCount];
        final String[] podIds = new String[podCount];
        final String[] models = new String[podCount];
        final Set<String> seen = new HashSet<>();
        long blocks = 0;
        for (int i = 0; i < podCount; i++) {
            final int recordLength = recordLength(b, at, membershipOffset, POD_FIXED_LENGTH, "pod " + i);
            final int count = b.getInt(at + POD_ENTRY_COUNT_OFFSET);
            final int idLength = Short.toUnsignedInt(b.getShort(at + POD_ID_LENGTH_OFFSET));
            final int modelField = Short.toUnsignedInt(b.getShort(at + POD_MODEL_LENGTH_OFFSET));
            final int modelLength = modelField == NO_STRING ? 0 : modelField;
            check(idLength >= 1 && idLength <= POD_ID_MAX, at + POD_ID_LENGTH_OFFSET,
                "pod " + i + ": pod id length " + idLength);
            check(modelField == NO_STRING || modelLength <= MODEL_MAX, at + POD_MODEL_LENGTH_OFFSET,
                "pod " + i + ": model length " + modelField);
            check(count >= 0 && podEntriesOffset(idLength, modelLength) + (long) count * ENTRY_LENGTH <= recordLength,
                at + POD_ENTRY_COUNT_OFFSET, "pod " + i + ": " + count + " entries overrun its record of "
                    + recordLength + " bytes");
            final int mainGroup = b.getInt(at + POD_MAIN_GROUP_OFFSET);
            check(mainGroup >= -1 && mainGroup < Integer.MAX_VALUE, at + POD_MAIN_GROUP_OFFSET,
                "pod " + i + ": main KV cache group " + mainGroup);
            podIds[i] = utf8(bytes, at + POD_FIXED_LENGTH, idLength);
            models[i] = modelField == NO_STRING ? null : utf8(bytes, at + POD_FIXED_LENGTH + idLength, modelLength);
            check(seen.add(podIds[i]), at + POD_FIXED_LENGTH, "pod " + i + ": pod id " + podIds[i] + " twice");
            final int entries = at + podEntriesOffset(idLength, modelLength);
            for (int j = 0; j < count; j++) {
                final int key = entries + j * ENTRY_LENGTH + ENTRY_KEY_OFFSET;
                // The message only for a bad entry: built for each of a million entries it took a fifth of a load.
                if (b.getLong(key) == 0) {
                    check(false, key, "pod " + podIds[i] + ": entry " + j + " has router key 0");
                }
            }
            podOffsets[i] = at;
            blocks += count;
            at += recordLength;
        }
        check(at == membershipOffset, MEMBERSHIP_OFFSET_OFFSET, "pods end at " + at + ", membership offset is "
            + membershipOffset);
        return new SnapshotView(b, publishers, podOffsets, podIds, models, blocks);
    }

    private static int recordLength(final ByteBuffer b, final int at, final int sectionEnd, final int fixedLength,
        final String what) throws SnapshotFormatException {
        check(at <= sectionEnd - fixedLength, at, what + ": record of at least " + fixedLength + " bytes overruns "
            + "its section, which ends at " + sectionEnd);
        final int recordLength = b.getInt(at + RECORD_LENGTH_OFFSET);
        check(recordLength >= fixedLength && (recordLength & 7) == 0 && recordLength <= sectionEnd - at,
            at + RECORD_LENGTH_OFFSET, what + ": record length " + recordLength + " (section ends at " + sectionEnd
                + ")");
        return recordLength;
    }

    private static void check(final boolean ok, final int offset, final String what) throws SnapshotFormatException {
        if (!ok) {
            throw new SnapshotFormatException("corrupt snapshot: " + what + " (at offset " + offset + ")");
        }
    }

    private static String utf8(final byte[] bytes, final int offset, final int length)
        throws SnapshotFormatException {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes, offset, length))
                .toString();
        } catch (final CharacterCodingException ex) {
            throw new SnapshotFormatException("corrupt snapshot: invalid UTF-8 (at offset " + offset + ")");
        }
    }

    /**
     * @return the layout version it was written with.
     */
    public int layoutVersion() {
        return b.getInt(LAYOUT_VERSION_OFFSET);
    }

    /**
     * @return its length in bytes.
     */
    public int length() {
        return length;
    }

    /**
     * @return when it was taken (epoch ms).
     */
    public long takenAtMs() {
        return b.getLong(TAKEN_AT_OFFSET);
    }

    /**
     * @return the source cell's router block size.
     */
    public int blockSize() {
        return b.getInt(BLOCK_SIZE_OFFSET);
    }

    /**
     * @return the source cell's key scheme.
     */
    public int keyScheme() {
        return b.getInt(KEY_SCHEME_OFFSET);
    }

    /**
     * @return the source cell's pod slots.
     */
    public int maxPods() {
        return b.getInt(MAX_PODS_OFFSET);
    }

    /**
     * @return each ZeroMQ publisher's progress: every batch up to its sequence is in the snapshot.
     */
    public List<PublisherProgress.Entry> publishers() {
        return publishers;
    }

    /**
     * @return pods.
     */
    public int podCount() {
        return podOffsets.length;
    }

    /**
     * @return the mappings of all pods together.
     */
    public long blockCount() {
        return blocks;
    }

    /**
     * @return a copy of the opaque membership section (empty when none).
     */
    public byte[] membership() {
        final int offset = b.getInt(MEMBERSHIP_OFFSET_OFFSET);
        return Arrays.copyOfRange(b.array(), offset, offset + b.getInt(MEMBERSHIP_LENGTH_OFFSET));
    }

    /**
     * @param pod a pod, 0 .. {@link #podCount()} - 1.
     * @return its id.
     */
    public String podId(final int pod) {
        return podIds[pod];
    }

    /**
     * @param pod a pod.
     * @return its model, or null.
     */
    public String model(final int pod) {
        return models[pod];
    }

    /**
     * @param pod a pod.
     * @return true when its state may be incomplete (the pod table's suspect flag).
     */
    public boolean suspect(final int pod) {
        return (b.getInt(podOffsets[pod] + POD_FLAGS_OFFSET) & POD_FLAG_SUSPECT) != 0;
    }

    /**
     * @param pod a pod.
     * @return its main KV cache group, or -1 when not learnt.
     */
    public int mainGroup(final int pod) {
        return b.getInt(podOffsets[pod] + POD_MAIN_GROUP_OFFSET);
    }

    /**
     * @param pod a pod.
     * @return its mappings.
     */
    public int entryCount(final int pod) {
        return b.getInt(podOffsets[pod] + POD_ENTRY_COUNT_OFFSET);
    }

    /**
     * @param pod   a pod.
     * @param entry an entry, 0 .. {@link #entryCount(int)} - 1.
     * @return its engine hash.
     */
    public long hash(final int pod, final int entry) {
        return b.getLong(entry(pod, entry) + ENTRY_HASH_OFFSET);
    }

    /**
     * @param pod   a pod.
     * @param entry an entry.
     * @return its router key (never 0).
     */
    public long routerKey(final int pod, final int entry) {
        return b.getLong(entry(pod, entry) + ENTRY_KEY_OFFSET);
    }

    /**
     * @param pod   a pod.
     * @param entry an entry.
     * @return its media bits.
     */
    public long media(final int pod, final int entry) {
        return b.getLong(entry(pod, entry) + ENTRY_MEDIA_OFFSET);
    }

    /**
     * @param pod   a pod.
     * @param entry an entry.
     * @return the router key of the block before it in its chain, or 0.
     */
    public long parent(final int pod, final int entry) {
        return b.getLong(entry(pod, entry) + ENTRY_PARENT_OFFSET);
    }

    private int entry(final int pod, final int entry) {
        java.util.Objects.checkIndex(entry, entryCount(pod));
        final int at = podOffsets[pod];
        final int idLength = Short.toUnsignedInt(b.getShort(at + POD_ID_LENGTH_OFFSET));
        final int modelField = Short.toUnsignedInt(b.getShort(at + POD_MODEL_LENGTH_OFFSET));
        return at + podEntriesOffset(idLength, modelField == NO_STRING ? 0 : modelField) + entry * ENTRY_LENGTH;
    }
}
