package io.kvidx.daemon.snapshot;

import io.kvidx.daemon.state.PodBlockMap;
import io.kvidx.daemon.state.PublisherProgress;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.LongUnaryOperator;
import java.util.zip.CRC32C;

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
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.LAYOUT_VERSION;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.LAYOUT_VERSION_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MAGIC;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MAGIC_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MAX_PODS_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MEMBERSHIP_LENGTH_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MEMBERSHIP_OFFSET_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.MODEL_MAX;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.NO_STRING;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.PODS_OFFSET_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_COUNT_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_ENTRY_COUNT_OFFSET;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.POD_FLAGS_OFFSET;
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
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.align8;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.podEntriesOffset;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.podRecordLength;
import static io.kvidx.daemon.snapshot.SnapshotDescriptor.publisherRecordLength;

/**
 * Writes snapshots in {@link SnapshotDescriptor}'s layout: each pod's record on its writer's thread
 * ({@link #podRecord}), then the whole snapshot around them ({@link #encode}), sized exactly from its parts.
 *
 * <p><b>Note:</b> stateless; {@link #podRecord} reads a {@link PodBlockMap}, so it runs on the map's writer thread.
 */
public final class SnapshotEncoder {
    private SnapshotEncoder() {
    }

    /**
     * The geometry a snapshot records for compatibility.
     *
     * @param blockSize router block size.
     * @param keyScheme key scheme of the router keys.
     * @param maxPods   the source cell's pod slots.
     */
    public record Geometry(int blockSize, int keyScheme, int maxPods) {
    }

    /**
     * Encodes one pod's record: its identity and every mapping of its engine-hash map.
     *
     * @param podId     the pod, 1..{@link SnapshotDescriptor#POD_ID_MAX} UTF-8 bytes.
     * @param model     its model, or null.
     * @param flags     {@code SnapshotDescriptor.POD_FLAG_*}.
     * @param map       its engine-hash map (read on its writer's thread).
     * @param parentOf  router key to the router key of the block before it in its chain (0 when none or unknown).
     * @param maxBytes  the record may not be longer.
     * @return the record.
     * @throws SnapshotException when the record would be longer than {@code maxBytes}.
     */
    public static byte[] podRecord(final String podId, final String model, final int flags, final PodBlockMap map,
        final LongUnaryOperator parentOf, final long maxBytes) throws SnapshotException {
        final byte[] id = podId.getBytes(StandardCharsets.UTF_8);
        final byte[] m = model == null ? null : model.getBytes(StandardCharsets.UTF_8);
        if (id.length == 0 || id.length > POD_ID_MAX || (m != null && m.length > MODEL_MAX)) {
            throw new SnapshotException("pod " + podId + ": pod id or model too long for a snapshot");
        }
        final int modelLength = m == null ? 0 : m.length;
        final int count = map.size();
        final long length = podRecordLength(id.length, modelLength, count);
        if (length > maxBytes) {
            throw new SnapshotException("pod " + podId + " alone (" + count + " blocks, " + length
                + " bytes) exceeds the snapshot limit of " + maxBytes + " bytes");
        }
        final ByteBuffer b = ByteBuffer.wrap(new byte[(int) length]).order(ByteOrder.LITTLE_ENDIAN);
        final int entries = podEntriesOffset(id.length, modelLength);
        final int[] n = new int[1];
        map.forEach((hash, routerKey, media) -> {
            final int i = n[0];
            if (i < count) {
                final int e = entries + i * ENTRY_LENGTH;
                b.putLong(e + ENTRY_HASH_OFFSET, hash);
                b.putLong(e + ENTRY_KEY_OFFSET, routerKey);
                b.putLong(e + ENTRY_MEDIA_OFFSET, media);
                b.putLong(e + ENTRY_PARENT_OFFSET, parentOf.applyAsLong(routerKey));
            }
            n[0] = i + 1;
        });
        if (n[0] != count) {
            throw new IllegalStateException("pod " + podId + ": block map holds " + n[0] + " mappings, counted "
                + count);
        }
        b.putInt(RECORD_LENGTH_OFFSET, (int) length);
        b.putInt(POD_ENTRY_COUNT_OFFSET, count);
        b.putInt(POD_FLAGS_OFFSET, flags);
        b.putInt(POD_MAIN_GROUP_OFFSET, map.mainGroup());
        b.putShort(POD_ID_LENGTH_OFFSET, (short) id.length);
        b.putShort(POD_MODEL_LENGTH_OFFSET, (short) (m == null ? NO_STRING : m.length));
        b.put(SnapshotDescriptor.POD_FIXED_LENGTH, id);
        if (m != null) {
            b.put(SnapshotDescriptor.POD_FIXED_LENGTH + id.length, m);
        }
        return b.array();
    }

    /**
     * Encodes one pod's record from plain arrays (tests, tools).
     *
     * @param podId     the pod.
     * @param model     its model, or null.
     * @param flags     {@code SnapshotDescriptor.POD_FLAG_*}.
     * @param mainGroup its main KV cache group, or -1.
     * @param hashes    engine hashes.
     * @param keys      their router keys (never 0).
     * @param media     their media bits.
     * @param parents   their parents' router keys (0 when none).
     * @return the record.
     */
    public static byte[] podRecord(final String podId, final String model, final int flags, final int mainGroup,
        final long[] hashes, final long[] keys, final long[] media, final long[] parents) {
        final byte[] id = podId.getBytes(StandardCharsets.UTF_8);
        final byte[] m = model == null ? null : model.getBytes(StandardCharsets.UTF_8);
        final int modelLength = m == null ? 0 : m.length;
        final int count = hashes.length;
        final ByteBuffer b = ByteBuffer.wrap(new byte[(int) podRecordLength(id.length, modelLength, count)])
            .order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(RECORD_LENGTH_OFFSET, b.capacity());
        b.putInt(POD_ENTRY_COUNT_OFFSET, count);
        b.putInt(POD_FLAGS_OFFSET, flags);
        b.putInt(POD_MAIN_GROUP_OFFSET, mainGroup);
        b.putShort(POD_ID_LENGTH_OFFSET, (short) id.length);
        b.putShort(POD_MODEL_LENGTH_OFFSET, (short) (m == null ? NO_STRING : m.length));
        b.put(SnapshotDescriptor.POD_FIXED_LENGTH, id);
        if (m != null) {
            b.put(SnapshotDescriptor.POD_FIXED_LENGTH + id.length, m);
        }
        final int entries = podEntriesOffset(id.length, modelLength);
        for (int i = 0; i < count; i++) {
            final int e = entries + i * ENTRY_LENGTH;
            b.putLong(e + ENTRY_HASH_OFFSET, hashes[i]);
            b.putLong(e + ENTRY_KEY_OFFSET, keys[i]);
            b.putLong(e + ENTRY_MEDIA_OFFSET, media[i]);
            b.putLong(e + ENTRY_PARENT_OFFSET, parents[i]);
        }
        return b.array();
    }

    /**
     * Encodes a snapshot around pod records made by {@link #podRecord}.
     *
     * @param geometry   the source cell's geometry.
     * @param takenAtMs  when the snapshot was taken (epoch ms).
     * @param publishers each ZeroMQ publisher's progress.
     * @param pods       pod records.
     * @param membership opaque membership bytes (empty for none).
     * @param maxBytes   the snapshot may not be longer.
     * @return the snapshot.
     * @throws SnapshotException when it would be longer than {@code maxBytes}, or an endpoint or pod id is too long.
     */
    public static byte[] encode(final Geometry geometry, final long takenAtMs,
        final List<PublisherProgress.Entry> publishers, final List<byte[]> pods, final byte[] membership,
        final long maxBytes) throws SnapshotException {
        final byte[][] endpoints = new byte[publishers.size()][];
        final byte[][] podIds = new byte[publishers.size()][];
        long publishersLength = 0;
        for (int i = 0; i < endpoints.length; i++) {
            final PublisherProgress.Entry e = publishers.get(i);
            endpoints[i] = e.endpoint().getBytes(StandardCharsets.UTF_8);
            podIds[i] = e.podId() == null ? null : e.podId().getBytes(StandardCharsets.UTF_8);
            if (endpoints[i].length == 0 || endpoints[i].length > ENDPOINT_MAX
                || (podIds[i] != null && (podIds[i].length == 0 || podIds[i].length > POD_ID_MAX))) {
                throw new SnapshotException("publisher " + e.endpoint() + ": endpoint or pod id of a length a "
                    + "snapshot cannot hold");
            }
            publishersLength += publisherRecordLength(endpoints[i].length, podIds[i] == null ? 0 : podIds[i].length);
        }
        long podsLength = 0;
        for (final byte[] pod : pods) {
            podsLength += pod.length;
        }
        final long podsOffset = HEADER_LENGTH + publishersLength;
        final long membershipOffset = podsOffset + podsLength;
        final long total = membershipOffset + align8(membership.length) + TRAILER_LENGTH;
        if (total > maxBytes || total > Integer.MAX_VALUE - 8) {
            throw new SnapshotException("snapshot of " + total + " bytes (" + pods.size() + " pods) exceeds the "
                + "limit of " + Math.min(maxBytes, Integer.MAX_VALUE - 8) + " bytes; raise snapshotMaxBytes "
                + "(--snapshot-max-bytes)");
        }
        final ByteBuffer b = ByteBuffer.wrap(new byte[(int) total]).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(MAGIC_OFFSET, MAGIC);
        b.putInt(LAYOUT_VERSION_OFFSET, LAYOUT_VERSION);
        b.putInt(HEADER_LENGTH_OFFSET, HEADER_LENGTH);
        b.putLong(TOTAL_LENGTH_OFFSET, total);
        b.putLong(TAKEN_AT_OFFSET, takenAtMs);
        b.putInt(BLOCK_SIZE_OFFSET, geometry.blockSize());
        b.putInt(KEY_SCHEME_OFFSET, geometry.keyScheme());
        b.putInt(MAX_PODS_OFFSET, geometry.maxPods());
        b.putInt(POD_COUNT_OFFSET, pods.size());
        b.putInt(PUBLISHER_COUNT_OFFSET, publishers.size());
        b.putInt(PODS_OFFSET_OFFSET, (int) podsOffset);
        b.putInt(MEMBERSHIP_OFFSET_OFFSET, (int) membershipOffset);
        b.putInt(MEMBERSHIP_LENGTH_OFFSET, membership.length);
        int at = HEADER_LENGTH;
        for (int i = 0; i < endpoints.length; i++) {
            final PublisherProgress.Entry e = publishers.get(i);
            final int idLength = podIds[i] == null ? 0 : podIds[i].length;
            final int length = (int) publisherRecordLength(endpoints[i].length, idLength);
            b.putInt(at + RECORD_LENGTH_OFFSET, length);
            b.putShort(at + PUBLISHER_ENDPOINT_LENGTH_OFFSET, (short) endpoints[i].length);
            b.putShort(at + PUBLISHER_POD_ID_LENGTH_OFFSET, (short) (podIds[i] == null ? NO_STRING : idLength));
            b.putLong(at + PUBLISHER_SEQUENCE_OFFSET, e.sequence());
            b.putLong(at + PUBLISHER_FINGERPRINT_OFFSET, e.fingerprint());
            b.put(at + PUBLISHER_FIXED_LENGTH, endpoints[i]);
            if (podIds[i] != null) {
                b.put(at + PUBLISHER_FIXED_LENGTH + endpoints[i].length, podIds[i]);
            }
            at += length;
        }
        for (final byte[] pod : pods) {
            b.put(at, pod);
            at += pod.length;
        }
        b.put(at, membership);
        b.putInt((int) total - TRAILER_LENGTH, checksum(b.array(), (int) total - TRAILER_LENGTH));
        return b.array();
    }

    /**
     * @param bytes  a snapshot.
     * @param length bytes covered (the total length - {@link SnapshotDescriptor#TRAILER_LENGTH}).
     * @return their CRC32C.
     */
    static int checksum(final byte[] bytes, final int length) {
        final CRC32C crc = new CRC32C();
        crc.update(bytes, 0, length);
        return (int) crc.getValue();
    }
}
