package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.ArrayList;
import java.util.List;

/**
 * Records, every checkpoint interval, each publisher's last sequence whose batches the writers have all applied
 * ({@link PublisherProgress}), with the fingerprint of the batch applied under it. A barrier on the writer queues:
 * the sequences dispatched at one checkpoint are recorded at a later one, once every writer has consumed its
 * queue past the position it had at the first. Held batches (a replay in flight) are not dispatched yet, so they
 * are never recorded before they are applied.
 *
 * <p><b>Note:</b> used by the ZeroMQ ingest thread only.
 */
final class Checkpoints {
    private final PublisherProgress progress;
    private final long intervalMs;
    private final WriterPool writers;
    private final PodDirectory directory;
    private final UnsafeBuffer scratch = new UnsafeBuffer(new byte[0]);
    private Publisher[] publishers;
    private long nextMs;
    private long[] positions;
    private long[] sequences;
    private long[] fingerprints;

    Checkpoints(final PublisherProgress progress, final long intervalMs, final WriterPool writers,
        final PodDirectory directory) {
        this.progress = progress;
        this.intervalMs = intervalMs;
        this.writers = writers;
        this.directory = directory;
    }

    void publishers(final Publisher[] all) {
        this.publishers = all;
    }

    /**
     * Takes a checkpoint when the interval has passed.
     *
     * @param now current time (ms).
     */
    void maybeCheckpoint(final long now) {
        if (now < nextMs) {
            return;
        }
        nextMs = now + intervalMs;
        if (positions != null && writers.appliedUpTo(positions)) {
            final List<PublisherProgress.Entry> entries = new ArrayList<>(publishers.length);
            boolean changed = false;
            for (int i = 0; i < publishers.length; i++) {
                entries.add(new PublisherProgress.Entry(publishers[i].config.endpoint(), sequences[i],
                    podIdOf(publishers[i]), fingerprints[i]));
                changed |= sequences[i] != publishers[i].recorded;
                publishers[i].recorded = sequences[i];
            }
            if (changed) {
                progress.write(entries);
            }
            positions = null;
        }
        if (positions == null) {
            sequences = new long[publishers.length];
            fingerprints = new long[publishers.length];
            for (int i = 0; i < publishers.length; i++) {
                sequences[i] = publishers[i].next - 1;
                fingerprints[i] = publishers[i].fingerprint(scratch);
            }
            positions = writers.producerPositions();
        }
    }

    /**
     * @return each publisher's last dispatched sequence (once the agent has stopped and the writers have drained
     * their queues, also the last applied one).
     */
    List<PublisherProgress.Entry> dispatched() {
        final List<PublisherProgress.Entry> entries = new ArrayList<>();
        if (publishers != null) {
            for (final Publisher p : publishers) {
                entries.add(new PublisherProgress.Entry(p.config.endpoint(), p.next - 1, podIdOf(p),
                    p.fingerprint(scratch)));
            }
        }
        return entries;
    }

    private String podIdOf(final Publisher p) {
        final int pod = p.lastPod();
        return pod < 0 ? null : directory.podId(pod);
    }
}
