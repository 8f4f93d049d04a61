package io.kvidx.daemon.jetstream;

import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.KeyValue;
import io.nats.client.api.MessageInfo;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The requests of the relays' leases ({@link RelayLeases}): take a key with {@code create} (or {@code update} at the
 * revision this relay last wrote), renew it by compare-and-set, delete it at its revision, and read the last stream
 * message of a pod's subject. Each runs on one thread of its own, {@code kvidx-jetstream-lease}, so that the relay's
 * publisher never waits for NATS.
 *
 * <p><b>Note:</b> called by the relay's agent thread (and its closing thread); the KV bucket and the stream are read and
 * written by the lease thread only.
 */
final class LeaseBucket implements AutoCloseable {
    /** JetStream's API error code of a write whose expected last subject sequence is not the subject's. */
    static final int WRONG_LAST_SEQUENCE = 10071;
    /** JetStream's API error code of a message get that found none. */
    static final int NO_MESSAGE_FOUND = 10037;

    private final KeyValue bucket;
    private final JetStreamManagement management;
    private final String stream;
    private final byte[] holder;
    private final ExecutorService io = Executors.newSingleThreadExecutor(r -> {
        final Thread t = new Thread(r, "kvidx-jetstream-lease");
        t.setDaemon(true);
        return t;
    });

    /**
     * What a request found.
     *
     * @param renewal      true for a holder's renewal.
     * @param holds        true when this relay holds the lease now.
     * @param revision     the revision it wrote (when it holds).
     * @param sentNanos    when the request was sent (monotonic): the lease's validity counts from there.
     * @param streamLastId the message id of the stream's last message on the pod's subject, or null (none, or a
     *                     renewal, which does not read it).
     */
    record Outcome(boolean renewal, boolean holds, long revision, long sentNanos, String streamLastId) {
    }

    /**
     * @param bucket     the lease bucket.
     * @param management stream reads.
     * @param stream     the stream's name.
     * @param holder     this relay's name, the value of the keys it writes.
     */
    LeaseBucket(final KeyValue bucket, final JetStreamManagement management, final String stream,
        final String holder) {
        this.bucket = bucket;
        this.management = management;
        this.stream = stream;
        this.holder = holder.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A standby's request: take the lease if it is free (or still this relay's), and read where the stream is.
     *
     * @param key      the lease's key.
     * @param subject  the pod's subject.
     * @param revision the revision this relay last wrote, or 0.
     * @return what it found, on the lease thread.
     */
    CompletableFuture<Outcome> attempt(final String key, final String subject, final long revision) {
        return CompletableFuture.supplyAsync(() -> take(key, subject, revision), io);
    }

    /**
     * A holder's renewal.
     *
     * @param key      the lease's key.
     * @param revision the revision this relay last wrote.
     * @return what it found, on the lease thread.
     */
    CompletableFuture<Outcome> renew(final String key, final long revision) {
        return CompletableFuture.supplyAsync(() -> update(key, revision), io);
    }

    /**
     * Deletes a key if it is still at the revision this relay wrote (else another relay holds it: left alone).
     *
     * @param key      the lease's key.
     * @param revision the revision this relay last wrote.
     * @return done once deleted, on the lease thread.
     */
    CompletableFuture<Void> release(final String key, final long revision) {
        return CompletableFuture.runAsync(() -> {
            try {
                bucket.delete(key, revision);
            } catch (final IOException | JetStreamApiException ex) {
                throw new IllegalStateException(ex.getMessage(), ex);
            }
        }, io);
    }

    private Outcome take(final String key, final String subject, final long revision) {
        final long sent = System.nanoTime();
        try {
            long written = -1;
            if (revision > 0) {
                written = write(key, revision); // lapsed here but perhaps not in the bucket: nobody took it since
            }
            if (written < 0) {
                written = bucket.create(key, holder);
            }
            return new Outcome(false, true, written, sent, streamLastId(subject));
        } catch (final JetStreamApiException ex) {
            if (ex.getApiErrorCode() == WRONG_LAST_SEQUENCE) {
                return new Outcome(false, false, 0, sent, streamLastId(subject));
            }
            throw new IllegalStateException(ex.getMessage(), ex);
        } catch (final IOException ex) {
            throw new IllegalStateException(ex.getMessage(), ex);
        }
    }

    private Outcome update(final String key, final long revision) {
        final long sent = System.nanoTime();
        try {
            final long written = write(key, revision);
            return new Outcome(true, written >= 0, Math.max(0, written), sent, null);
        } catch (final IOException | JetStreamApiException ex) {
            throw new IllegalStateException(ex.getMessage(), ex);
        }
    }

    /** Compare-and-set: the new revision, or -1 when the key is no longer at this revision. */
    private long write(final String key, final long revision) throws IOException, JetStreamApiException {
        try {
            return bucket.update(key, holder, revision);
        } catch (final JetStreamApiException ex) {
            if (ex.getApiErrorCode() == WRONG_LAST_SEQUENCE) {
                return -1;
            }
            throw ex;
        }
    }

    private String streamLastId(final String subject) {
        try {
            final MessageInfo last = management.getLastMessage(stream, subject);
            return last.getHeaders() == null ? null : last.getHeaders().getFirst("Nats-Msg-Id");
        } catch (final JetStreamApiException ex) {
            if (ex.getApiErrorCode() == NO_MESSAGE_FOUND) {
                return null;
            }
            throw new IllegalStateException("cannot read the last message of " + subject + ": " + ex.getMessage(),
                ex);
        } catch (final IOException ex) {
            throw new IllegalStateException("cannot read the last message of " + subject + ": " + ex.getMessage(),
                ex);
        }
    }

    @Override
    public void close() {
        io.shutdownNow();
    }
}
