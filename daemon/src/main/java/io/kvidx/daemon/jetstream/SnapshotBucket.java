package io.kvidx.daemon.jetstream;

import io.nats.client.JetStreamApiException;
import io.nats.client.ObjectStore;
import io.nats.client.api.ObjectInfo;
import io.nats.client.api.ObjectMeta;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The index snapshots in a JetStream object store bucket (ADR 0024): each snapshot (docs/snapshot-format.md) is the
 * object {@code snapshot-<stream sequence, 20 digits>}, the sequence being the last stream message it covers, so the
 * names sort by coverage. Storing one deletes all but the newest {@link #KEPT}.
 *
 * <p><b>Note:</b> blocking calls to NATS: use it from one thread at a time, never from a latency-sensitive one.
 */
public final class SnapshotBucket {
    /** Snapshots kept after a store. */
    public static final int KEPT = 2;
    private static final String PREFIX = "snapshot-";

    /**
     * Largest chunk a snapshot is stored in: fewer, larger chunks read back faster (a 36 MB object read in 104–261 ms
     * in chunks of 512 KiB against 186–422 ms in jnats' default 128 KiB: one scratch run on loopback on the 2-vCPU
     * VM, 2026-11-29, three reads each; not a committed bench), and 512 KiB stays
     * under the server's default max_payload (1 MiB) with room for the headers.
     */
    static final int CHUNK_BYTES_MAX = 512 << 10;
    /** Smallest chunk (jnats' default): a server whose max_payload is lower than this is not supported. */
    static final int CHUNK_BYTES_MIN = 128 << 10;
    /** Room left under a server's max_payload for a chunk's headers. */
    private static final int HEADER_ROOM = 8 << 10;

    private final ObjectStore store;
    private final int chunkBytes;

    /**
     * One stored snapshot.
     *
     * @param name       the object's name.
     * @param sequence   the last stream sequence it covers.
     * @param size       its length in bytes.
     * @param modifiedMs when it was stored (epoch ms).
     */
    public record Entry(String name, long sequence, long size, long modifiedMs) {
    }

    /**
     * @param store the bucket.
     */
    public SnapshotBucket(final ObjectStore store) {
        this(store, CHUNK_BYTES_MIN);
    }

    /**
     * @param store      the bucket.
     * @param maxPayload the server's max_payload (its INFO): snapshots go in chunks of up to
     *                   {@link #CHUNK_BYTES_MAX} that fit it.
     */
    public SnapshotBucket(final ObjectStore store, final long maxPayload) {
        this.store = store;
        this.chunkBytes = chunkBytes(maxPayload);
    }

    /**
     * @param maxPayload a server's max_payload.
     * @return the chunk size a snapshot is stored in on it.
     */
    static int chunkBytes(final long maxPayload) {
        return (int) Math.max(CHUNK_BYTES_MIN, Math.min(CHUNK_BYTES_MAX, maxPayload - HEADER_ROOM));
    }

    /**
     * @param sequence the last stream sequence a snapshot covers.
     * @return its object name.
     */
    public static String objectName(final long sequence) {
        return String.format("%s%020d", PREFIX, sequence);
    }

    /**
     * @return the snapshots stored, newest (highest sequence) first; objects of other names are left out.
     * @throws IOException when the bucket cannot be listed.
     */
    public List<Entry> list() throws IOException {
        final List<ObjectInfo> infos;
        try {
            infos = store.getList();
        } catch (final JetStreamApiException ex) {
            throw new IOException("cannot list bucket " + store.getBucketName() + ": " + ex.getMessage(), ex);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted listing bucket " + store.getBucketName(), ex);
        }
        final List<Entry> entries = new ArrayList<>();
        for (final ObjectInfo info : infos) {
            final String name = info.getObjectName();
            if (info.isDeleted() || !name.startsWith(PREFIX) || name.length() != PREFIX.length() + 20) {
                continue;
            }
            try {
                entries.add(new Entry(name, Long.parseLong(name.substring(PREFIX.length())), info.getSize(),
                    info.getModified() == null ? 0 : info.getModified().toInstant().toEpochMilli()));
            } catch (final NumberFormatException ex) {
                // not one of ours
            }
        }
        entries.sort(Comparator.comparingLong(Entry::sequence).reversed());
        return entries;
    }

    /**
     * @param entry    a stored snapshot.
     * @param maxBytes the longest accepted.
     * @return its bytes.
     * @throws IOException when it is longer than maxBytes or cannot be read (its digest included).
     */
    public byte[] fetch(final Entry entry, final long maxBytes) throws IOException {
        if (entry.size() > maxBytes) {
            throw new IOException(entry.name() + " is " + entry.size() + " bytes, over snapshotMaxBytes " + maxBytes);
        }
        final Bounded out = new Bounded(maxBytes);
        try {
            store.get(entry.name(), out);
        } catch (final JetStreamApiException | NoSuchAlgorithmException ex) {
            throw new IOException("cannot read " + entry.name() + ": " + ex.getMessage(), ex);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted reading " + entry.name(), ex);
        }
        return out.toByteArray();
    }

    /**
     * Stores a snapshot, then deletes all but the newest {@link #KEPT}.
     *
     * @param snapshot the snapshot's bytes.
     * @param sequence the last stream sequence it covers.
     * @return the snapshots deleted.
     * @throws IOException when it cannot be stored (old ones are then kept).
     */
    public int store(final byte[] snapshot, final long sequence) throws IOException {
        try {
            store.put(ObjectMeta.builder(objectName(sequence)).description("kvidx snapshot covering stream sequence "
                + sequence).chunkSize(chunkBytes).build(), new ByteArrayInputStream(snapshot));
        } catch (final JetStreamApiException | NoSuchAlgorithmException ex) {
            throw new IOException("cannot store " + objectName(sequence) + ": " + ex.getMessage(), ex);
        }
        int deleted = 0;
        final List<Entry> all = list();
        for (int i = KEPT; i < all.size(); i++) {
            try {
                store.delete(all.get(i).name());
                deleted++;
            } catch (final JetStreamApiException ex) {
                throw new IOException("cannot delete " + all.get(i).name() + ": " + ex.getMessage(), ex);
            }
        }
        return deleted;
    }

    /** An output stream that refuses to grow past a bound. */
    private static final class Bounded extends OutputStream {
        private final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        private final long max;

        Bounded(final long max) {
            this.max = max;
        }

        @Override
        public void write(final int b) throws IOException {
            check(1);
            bytes.write(b);
        }

        @Override
        public void write(final byte[] b, final int off, final int len) throws IOException {
            check(len);
            bytes.write(b, off, len);
        }

        private void check(final int more) throws IOException {
            if (bytes.size() + (long) more > max) {
                throw new IOException("snapshot longer than snapshotMaxBytes " + max);
            }
        }

        byte[] toByteArray() {
            return bytes.toByteArray();
        }
    }
}
