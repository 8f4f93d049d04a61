package io.kvidx.daemon.lifecycle;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.IdleStrategies;
import io.kvidx.daemon.config.JetStreamSettings;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.jetstream.NatsSession;
import io.kvidx.daemon.jetstream.SnapshotBucket;
import io.kvidx.daemon.jetstream.SnapshotScheduler;
import io.kvidx.daemon.jetstream.StreamConsumer;
import io.kvidx.daemon.jetstream.StreamRelay;
import io.kvidx.daemon.snapshot.SnapshotException;
import io.kvidx.daemon.snapshot.SnapshotIncompatibleException;
import io.kvidx.daemon.snapshot.SnapshotLoader;
import io.kvidx.daemon.snapshot.SnapshotView;
import io.kvidx.daemon.state.PodBlockMaps;
import io.kvidx.daemon.state.ProgressLog;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.CloseHelper;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * A daemon's part in the JetStream topology (ADR 0024), made when {@code jetstream.url} is set: the NATS session;
 * for a relay, the {@link StreamRelay} tapping the writer pool; for a consumer, the newest snapshot of the bucket
 * loaded into a new index, the {@link StreamConsumer} and, unless {@code snapshotIntervalMs} is 0, the
 * {@link SnapshotScheduler}.
 *
 * <p><b>Note:</b> made, started and closed by the thread that starts the daemon.
 */
final class JetStreamRole implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KvidxDaemon.class);

    private final DaemonContext context;
    private final JetStreamSettings settings;
    private final NatsSession session;
    private final IngestCounters counters;
    private final IngestErrors errors;
    private StreamRelay relay;
    private StreamConsumer consumer;
    private SnapshotScheduler scheduler;

    private JetStreamRole(final DaemonContext context, final NatsSession session, final IngestCounters counters,
        final IngestErrors errors) {
        this.context = context;
        this.settings = context.jetstream();
        this.session = session;
        this.counters = counters;
        this.errors = errors;
    }

    /**
     * Connects to NATS and makes sure the stream exists (a relay creates it; a consumer too, so that it can start
     * before any relay).
     *
     * @param context  the daemon's configuration (JetStream on).
     * @param counters counters.
     * @param errors   error log.
     * @return the role.
     * @throws IllegalStateException when NATS cannot be reached or the stream not read or created.
     */
    static JetStreamRole connect(final DaemonContext context, final IngestCounters counters,
        final IngestErrors errors) {
        final NatsSession session = NatsSession.connect(context.jetstream(), "kvidx " + context.jetstream().role()
            + " " + context.cell(), errors, counters.get(CounterType.JETSTREAM_ERRORS));
        try {
            session.ensureStream();
            return new JetStreamRole(context, session, counters, errors);
        } catch (final RuntimeException ex) {
            session.close();
            throw ex;
        }
    }

    /**
     * A consumer with a new index and nothing loaded from a peer: loads the newest snapshot of the bucket that reads
     * back (a corrupt one is counted, logged and skipped for the next older); its {@code jetstream:<stream>} record
     * tells the consumer where to start. A snapshot older than the stream's first sequence is loaded all the same,
     * and the consumer counts the messages between as lost.
     *
     * @param index     the index, created new.
     * @param blockMaps the pods' block maps.
     * @param progress  each publisher's recorded sequence.
     * @param stateDir  the cell's state directory.
     * @return what was loaded, or null when the bucket holds no snapshot that reads back.
     * @throws IllegalStateException when a snapshot is of another block size or key scheme, or loading it failed.
     */
    SnapshotLoader.Loaded loadNewestSnapshot(final IndexWriter index, final PodBlockMaps blockMaps,
        final PublisherProgress progress, final Path stateDir) {
        final long maxBytes = context.snapshots().snapshotMaxBytes();
        final SnapshotBucket bucket = snapshotBucket(session);
        final List<SnapshotBucket.Entry> entries;
        try {
            entries = bucket.list();
        } catch (final IOException ex) {
            throw new IllegalStateException("cannot list the snapshots in bucket " + settings.bucket() + ": "
                + ex.getMessage(), ex);
        }
        for (final SnapshotBucket.Entry entry : entries) {
            final long start = System.nanoTime();
            final SnapshotView view;
            try {
                view = SnapshotView.wrap(bucket.fetch(entry, maxBytes), maxBytes);
            } catch (final IOException | SnapshotException ex) {
                counters.get(CounterType.JETSTREAM_SNAPSHOT_FAILURES).increment();
                errors.report(CounterType.JETSTREAM_SNAPSHOT_FAILURES.typeId(), -2, () -> "JetStream snapshot "
                    + entry.name() + " cannot be loaded (" + ex.getMessage() + "); trying the next older one");
                continue;
            }
            SnapshotLoader.markUnfinished(stateDir, "catch-up from JetStream snapshot " + entry.name());
            final SnapshotLoader.Loaded loaded;
            try {
                loaded = new SnapshotLoader(index, blockMaps, progress, maxBytes).load(view);
            } catch (final SnapshotIncompatibleException ex) {
                throw new IllegalStateException("cannot load JetStream snapshot " + entry.name() + ": "
                    + ex.getMessage(), ex);
            } catch (final SnapshotException ex) {
                throw new IllegalStateException("loading JetStream snapshot " + entry.name() + " failed part-way "
                    + "(the next start creates a new index): " + ex.getMessage(), ex);
            }
            LOG.info("loaded JetStream snapshot {} of bucket {}: {} pods, {} blocks, {} bytes taken {} ms ago, in {} "
                + "ms; consuming from stream sequence {}", entry.name(), settings.bucket(), loaded.pods(),
                loaded.blocks(), loaded.bytes(), System.currentTimeMillis() - loaded.takenAtMs(),
                java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), entry.sequence() + 1);
            return loaded;
        }
        LOG.info("no snapshot in bucket {}: consuming stream {} from its start", settings.bucket(), settings.stream());
        return null;
    }

    /**
     * A relay: taps the writer pool; call before the transports start.
     *
     * @param directory pod ids.
     * @param writers   the writer pool.
     * @param clock     the wall clock.
     * @return the relay agent to run.
     */
    Agent relay(final PodDirectory directory, final WriterPool writers, final EpochClock clock) {
        relay = new StreamRelay(context.writerQueueLength(), directory, session,
            settings.subjectPrefix(), settings.stream(), context.heartbeatIntervalMs(), clock::time, counters, errors,
            IdleStrategies.supplier(IdleStrategies.BACKOFF), holderName());
        writers.tap(relay);
        return relay;
    }

    /** This relay's name in the leases it holds: host, cell and process, for an operator reading the bucket. */
    private String holderName() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (final java.net.UnknownHostException ex) {
            host = "unknown-host";
        }
        return host + " " + context.cell() + " " + ProcessHandle.current().pid();
    }

    /**
     * A consumer: its reader of the stream.
     *
     * @param directory pod ids.
     * @param writers   the writer pool.
     * @param progress  its share of {@code state/publishers}.
     * @param clock     the wall clock.
     * @param stateDir  the cell's state directory.
     * @param fatal     stops the daemon with a message.
     * @return the consumer agent to run.
     */
    Agent consumer(final PodDirectory directory, final WriterPool writers, final ProgressLog progress,
        final EpochClock clock, final Path stateDir, final java.util.function.Consumer<String> fatal) {
        consumer = new StreamConsumer(session, directory, writers, progress, counters, errors, clock,
            context.zmq().checkpointIntervalMs());
        if (settings.exitOnLoss()) {
            // The next start of this cell gets a new index (as after a catch-up that did not finish) and loads the
            // newest snapshot; the daemon stops now so that its supervisor starts it again.
            consumer.onLossWhileRunning(message -> {
                SnapshotLoader.markUnfinished(stateDir, "JetStream messages lost: " + message);
                fatal.accept("JetStream: " + message + "; the cell's next start makes a new index from the newest "
                    + "snapshot (jetstream.exitOnLoss)");
            });
        }
        return consumer;
    }

    /**
     * A consumer's snapshot schedule.
     *
     * @param take  takes the daemon's snapshot.
     * @param clock the wall clock.
     * @return the agent to run, or null when {@code snapshotIntervalMs} is 0.
     */
    Agent snapshots(final Supplier<CompletableFuture<byte[]>> take, final EpochClock clock) {
        if (settings.snapshotIntervalMs() == 0 || consumer == null) {
            return null;
        }
        final StreamConsumer c = consumer;
        scheduler = new SnapshotScheduler(snapshotBucket(session), take, c::appliedSequence,
            StreamConsumer.progressKey(settings.stream()), settings.snapshotIntervalMs(), settings.snapshotEvents(),
            context.snapshots().snapshotMaxBytes(), clock, counters, errors);
        return scheduler;
    }

    /**
     * The daemon's last record of its progress, once its agents stopped: the ZeroMQ publishers' and this consumer's,
     * only when the writers drained their queues and, for a relay, the stream acknowledged everything (otherwise the
     * previous checkpoints stand, and the engines or the stream give the rest again at the next start).
     *
     * @param progress   the cell's publisher progress.
     * @param drained    true when the writers applied everything queued.
     * @param dispatched the ZeroMQ publishers' dispatched sequences, or null without the ZeroMQ transport.
     */
    void recordProgress(final PublisherProgress progress, final boolean drained,
        final Supplier<List<PublisherProgress.Entry>> dispatched) {
        if (!drained || (relay != null && !relay.drained()) || (dispatched == null && consumer == null)) {
            return;
        }
        final List<PublisherProgress.Entry> entries = dispatched == null ? new java.util.ArrayList<>()
            : new java.util.ArrayList<>(dispatched.get());
        if (consumer != null) {
            entries.add(consumer.progress());
        }
        progress.write(entries);
    }

    /**
     * @return why the index may miss stream events, or null.
     */
    String problem() {
        return consumer == null ? null : consumer.problem();
    }

    /**
     * @return the consumer, or null.
     */
    StreamConsumer streamConsumer() {
        return consumer;
    }

    /**
     * @return the relay, or null.
     */
    StreamRelay streamRelay() {
        return relay;
    }

    @Override
    public void close() {
        CloseHelper.quietClose(session);
    }

    /** The snapshot bucket, its chunks sized to the server's max_payload. */
    private static SnapshotBucket snapshotBucket(final NatsSession session) {
        return new SnapshotBucket(session.ensureBucket(), session.connection().getServerInfo().getMaxPayload());
    }
}
