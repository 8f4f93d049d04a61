package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.state.ProgressLog;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.ArrayList;
import java.util.List;

/**
 * Records, every checkpoint interval, each publisher's last sequence whose batches the writers have all applied
 * ({@link PublisherProgress}), with the fingerprint of the batch applied under it. A barrier on the writer queues:
 * the sequences dispatched at one checkpoint are recorded at a later one, once every writer has consumed its
 * queue past the position it had at the first. Held batches (a replay in flight) are not dispatched yet, so they
 * are never recorded before they are applied. The pod is recorded by its id ({@link Publisher#podId()}), never looked
 * up by a handle that may have been freed and given to another pod meanwhile.
 *
 * <p><b>Note:</b> used by the ZeroMQ ingest thread only.
 */
final class Checkpoints {
    private final ProgressLog progress;
    private final long intervalMs;
    private final WriterPool writers;
    private final UnsafeBuffer scratch = new UnsafeBuffer(new byte[0]);
    private Publisher[] publishers;
    private long nextMs;
    private long[] positions;
    private boolean setChanged;
    private long[] sequences;
    private long[] fingerprints;

    Checkpoints(final ProgressLog progress, final long intervalMs, final WriterPool writers) {
        this.progress = progress;
        this.intervalMs = intervalMs;
        this.writers = writers;
    }

    void publishers(final Publisher[] all) {
        this.publishers = all;
        // The checkpoint in flight counted the publishers by their old indices: take a new one.
        this.positions = null;
        // ... and records the new set even when no sequence moved (a removed publisher's entry must go).
        this.setChanged = true;
    }

    /**
     * Takes a checkpoint when the interval has passed.
     *
     * @param now current time (ms).
     */
    void maybeCheckpoint(final long now) {
        if (publishers == null || now < nextMs) {
            return;
        }
        nextMs = now + intervalMs;
        if (positions != null && writers.appliedUpTo(positions)) {
            final List<PublisherProgress.Entry> entries = new ArrayList<>(publishers.length);
            boolean changed = setChanged;
            setChanged = false;
            for (int i = 0; i < publishers.length; i++) {
                if (publishers[i] == null) {
                    continue;
                }
                entries.add(new PublisherProgress.Entry(publishers[i].config.endpoint(), sequences[i],
                    publishers[i].podId(), fingerprints[i]));
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
                if (publishers[i] == null) {
                    continue;
                }
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
                if (p == null) {
                    continue;
                }
                entries.add(new PublisherProgress.Entry(p.config.endpoint(), p.next - 1, p.podId(),
                    p.fingerprint(scratch)));
            }
        }
        return entries;
    }
}
