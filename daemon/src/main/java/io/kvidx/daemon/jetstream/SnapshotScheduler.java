package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.snapshot.SnapshotException;
import io.kvidx.daemon.snapshot.SnapshotView;
import io.kvidx.daemon.state.PublisherProgress;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.status.AtomicCounter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Stores a consumer's snapshots in the object store bucket (ADR 0024: each consumer on a schedule, the bucket
 * decides). Every {@code snapshotIntervalMs}, or once {@code snapshotEvents} more stream messages are applied, it
 * looks at the newest snapshot in the bucket: when that covers the stream to within {@code snapshotEvents} of this
 * daemon and is younger than the interval, another daemon's is fresh enough and nothing is stored; otherwise it takes
 * the daemon's snapshot (on the writers' threads, without blocking this one), reads from it the stream sequence it
 * covers (its {@code jetstream:<stream>} publisher record) and stores it ({@link SnapshotBucket#store}, which deletes
 * the older ones). Failures are counted and logged; the next interval tries again.
 *
 * <p><b>Note:</b> runs on its own agent thread (it blocks on NATS while storing).
 */
public final class SnapshotScheduler implements Agent {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotScheduler.class);

    private final SnapshotBucket bucket;
    private final Supplier<CompletableFuture<byte[]>> take;
    private final LongSupplier appliedSequence;
    private final String progressKey;
    private final long intervalMs;
    private final long events;
    private final long maxBytes;
    private final EpochClock clock;
    private final IngestErrors errors;
    private final AtomicCounter applied;
    private final AtomicCounter stored;
    private final AtomicCounter failures;
    private final AtomicCounter newestBytes;
    private final AtomicCounter newestStoredAt;
    private CompletableFuture<byte[]> pending;
    private long nextCheckMs;
    private long appliedAtLastCheck;
    private volatile long lastStoredSequence = -1;
    private volatile long lastStoredBytes;

    /**
     * @param bucket          the bucket.
     * @param take            takes the daemon's snapshot ({@code KvidxDaemon.snapshot()}).
     * @param appliedSequence the consumer's last applied (recorded) stream sequence.
     * @param progressKey     the consumer's publisher name in a snapshot.
     * @param intervalMs      the snapshot interval.
     * @param events          the snapshot event count.
     * @param maxBytes        the longest snapshot.
     * @param clock           clock.
     * @param counters        counters.
     * @param errors          error log.
     */
    public SnapshotScheduler(final SnapshotBucket bucket, final Supplier<CompletableFuture<byte[]>> take,
        final LongSupplier appliedSequence, final String progressKey, final long intervalMs, final long events,
        final long maxBytes, final EpochClock clock, final IngestCounters counters, final IngestErrors errors) {
        this.bucket = bucket;
        this.take = take;
        this.appliedSequence = appliedSequence;
        this.progressKey = progressKey;
        this.intervalMs = intervalMs;
        this.events = events;
        this.maxBytes = maxBytes;
        this.clock = clock;
        this.errors = errors;
        this.applied = counters.get(CounterType.JETSTREAM_APPLIED);
        this.stored = counters.get(CounterType.JETSTREAM_SNAPSHOTS_STORED);
        this.failures = counters.get(CounterType.JETSTREAM_SNAPSHOT_FAILURES);
        this.newestBytes = counters.get(CounterType.JETSTREAM_SNAPSHOT_BYTES);
        this.newestStoredAt = counters.get(CounterType.JETSTREAM_SNAPSHOT_TIMESTAMP_SECONDS);
    }

    @Override
    public void onStart() {
        nextCheckMs = clock.time() + intervalMs;
        appliedAtLastCheck = applied.get();
    }

    @Override
    public int doWork() {
        if (pending != null) {
            if (!pending.isDone()) {
                return 0;
            }
            final CompletableFuture<byte[]> done = pending;
            pending = null;
            storeTaken(done);
            return 1;
        }
        final long now = clock.time();
        if (now < nextCheckMs && applied.get() - appliedAtLastCheck < events) {
            return 0;
        }
        nextCheckMs = now + intervalMs;
        appliedAtLastCheck = applied.get();
        final long ours = appliedSequence.getAsLong();
        if (ours <= 0) {
            return 1;
        }
        try {
            final List<SnapshotBucket.Entry> stored = bucket.list();
            if (!stored.isEmpty()) {
                final SnapshotBucket.Entry newest = stored.get(0);
                newestBytes.setRelease(newest.size());
                newestStoredAt.setRelease(newest.modifiedMs() / 1000);
                if (newest.sequence() >= ours || (ours - newest.sequence() < events
                    && now - newest.modifiedMs() < intervalMs)) {
                    return 1; // fresh enough, whoever stored it
                }
            }
        } catch (final IOException ex) {
            fail("cannot list the snapshots: " + ex.getMessage());
            return 1;
        }
        pending = take.get();
        return 1;
    }

    private void storeTaken(final CompletableFuture<byte[]> done) {
        final byte[] bytes;
        try {
            bytes = done.join();
        } catch (final RuntimeException ex) {
            fail("cannot take a snapshot: " + ex.getMessage());
            return;
        }
        long sequence = -1;
        try {
            for (final PublisherProgress.Entry e : SnapshotView.wrap(bytes, maxBytes).publishers()) {
                if (progressKey.equals(e.endpoint())) {
                    sequence = e.sequence();
                }
            }
        } catch (final SnapshotException ex) {
            fail("the snapshot taken does not read back: " + ex.getMessage());
            return;
        }
        if (sequence <= 0) {
            return; // nothing applied from the stream is recorded yet
        }
        try {
            final int deleted = bucket.store(bytes, sequence);
            stored.increment();
            lastStoredSequence = sequence;
            lastStoredBytes = bytes.length;
            newestBytes.setRelease(bytes.length);
            newestStoredAt.setRelease(clock.time() / 1000);
            LOG.info("stored snapshot {} ({} bytes); {} older deleted", SnapshotBucket.objectName(sequence),
                bytes.length, deleted);
        } catch (final IOException ex) {
            fail(ex.getMessage());
        }
    }

    private void fail(final String why) {
        failures.increment();
        errors.report(CounterType.JETSTREAM_SNAPSHOT_FAILURES.typeId(), -1, () -> "JetStream snapshots: " + why);
    }

    /**
     * @return the stream sequence of the last snapshot this daemon stored, or -1.
     */
    public long lastStoredSequence() {
        return lastStoredSequence;
    }

    /**
     * @return the length of the last snapshot this daemon stored.
     */
    public long lastStoredBytes() {
        return lastStoredBytes;
    }

    @Override
    public String roleName() {
        return "kvidx-jetstream-snapshots";
    }
}
