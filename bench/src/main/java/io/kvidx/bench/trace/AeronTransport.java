package io.kvidx.bench.trace;

import io.aeron.Aeron;
import io.aeron.Publication;
import org.agrona.CloseHelper;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * kvidx's own transport: SBE messages ({@link SbeBatchEncoder}) offered on one exclusive Aeron publication to the
 * daemon's channel ({@code aeron:ipc} by default, or a UDP channel on loopback), through the media driver the daemon
 * embeds in its Aeron directory. Each pod numbers its messages from 0 (the daemon tracks sequences per pod); the sender copies each
 * message out of the plan and writes the number into the copy. A
 * back-pressured offer is retried for at most {@link #OFFER_LIMIT_MS}: a daemon that slows the sender shows as
 * publisher lag, and one that stops taking messages fails the point.
 */
final class AeronTransport implements EventTransport {
    /** Longest a message waits for room in the publication. */
    static final long OFFER_LIMIT_MS = 60_000;

    private final String channel;
    private final Path aeronDir;
    private final int streamId;
    private final UnsafeBuffer message = new UnsafeBuffer(new byte[SbeBatchEncoder.MAX_MESSAGE_BYTES]);
    private final UnsafeBuffer batch = new UnsafeBuffer(new byte[0]);
    private final long[] seq = new long[TraceBench.PODS_MAX];
    private Aeron aeron;
    private Publication publication;

    /**
     * @param channel  Aeron channel the daemon subscribes to and this transport publishes on.
     * @param aeronDir the daemon's Aeron directory (its embedded driver).
     * @param streamId stream id.
     */
    AeronTransport(final String channel, final Path aeronDir, final int streamId) {
        this.channel = channel;
        this.aeronDir = aeronDir;
        this.streamId = streamId;
    }

    @Override
    public List<String> daemonArgs() {
        return List.of("--aeron", channel, "--aeron-stream-id", Integer.toString(streamId), "--aeron-dir",
            aeronDir.toString(), "--embedded-driver");
    }

    @Override
    public void connect(final long deadlineNs) {
        RuntimeException last = null;
        while (aeron == null && System.nanoTime() < deadlineNs) {
            try {
                aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(aeronDir.toString())
                    .driverTimeoutMs(10_000));
            } catch (final RuntimeException ex) {
                // The daemon's embedded driver is not up yet (no CnC file, or not yet active).
                last = ex;
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
            }
        }
        if (aeron == null) {
            throw new IllegalStateException("no Aeron media driver in " + aeronDir + " (the daemon's)", last);
        }
        publication = aeron.addExclusivePublication(channel, streamId);
        while (!publication.isConnected()) {
            if (System.nanoTime() > deadlineNs) {
                throw new IllegalStateException("the daemon did not subscribe to " + channel + " stream " + streamId);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    @Override
    public int[] warmUpPods(final int pods) {
        return new int[] {0};
    }

    @Override
    public void send(final int pod, final byte[] payload) {
        batch.wrap(payload);
        int p = 0;
        while (p < payload.length) {
            final int length = batch.getInt(p, ByteOrder.LITTLE_ENDIAN);
            final int at = p + Integer.BYTES;
            // The plan stays read-only: the message is copied, then numbered.
            message.putBytes(0, batch, at, length);
            message.putLong(SbeBatchEncoder.SEQUENCE_OFFSET, seq[pod]++, ByteOrder.LITTLE_ENDIAN);
            offer(length);
            p = at + length;
        }
    }

    private void offer(final int length) {
        long deadline = 0;
        while (true) {
            final long result = publication.offer(message, 0, length);
            if (result > 0) {
                return;
            }
            if (result != Publication.BACK_PRESSURED && result != Publication.ADMIN_ACTION) {
                throw new IllegalStateException("Aeron offer failed: " + Publication.errorString(result)
                    + " (did the daemon stop?)");
            }
            final long now = System.nanoTime();
            if (deadline == 0) {
                deadline = now + TimeUnit.MILLISECONDS.toNanos(OFFER_LIMIT_MS);
            } else if (now > deadline) {
                throw new IllegalStateException("the daemon took no message for " + OFFER_LIMIT_MS + " ms");
            }
            Thread.onSpinWait();
        }
    }

    @Override
    public void close() {
        CloseHelper.quietCloseAll(publication, aeron);
    }
}
