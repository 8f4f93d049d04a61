package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.state.ProgressLog;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import io.nats.client.IterableConsumer;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamStatusCheckedException;
import io.nats.client.Message;
import io.nats.client.OrderedConsumerContext;
import io.nats.client.ConsumeOptions;
import io.nats.client.api.DeliverPolicy;
import io.nats.client.api.OrderedConsumerConfiguration;
import io.nats.client.api.StreamState;
import org.agrona.collections.Object2LongHashMap;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.List;

/**
 * A consuming daemon's reader of the stream (ADR 0024): one ordered consumer from the sequence this cell needs (1
 * for a new cell, the recorded sequence + 1 after a restart or a snapshot), each message handed to the writers as
 * the relay's transport handed it to its own (the same types, the same decoders). A message at or below the last
 * applied stream sequence is a redelivery and is skipped; a batch at or below its pod's last engine sequence is a
 * copy a relay published after the duplicate window (skipped); both count as {@code jetstream duplicates}. A stream
 * sequence past the next one expected means the stream no longer held the ones between: counted in
 * {@code jetstream lost events}, logged, and reported by {@link #problem()} (the daemon's {@code /health}).
 *
 * <p>The last stream sequence whose messages are all applied is recorded as the publisher
 * {@link #progressKey(String) jetstream:&lt;stream&gt;} under the same barrier as the ZeroMQ checkpoints: once the
 * writers' queues are consumed past the positions taken when it was received. A snapshot therefore covers it.
 *
 * <p>Back-pressure: a full writer queue makes {@link WriterPool#offer} wait, so this thread stops pulling; the
 * ordered consumer's pull window ({@link #PULL_BATCH} messages) bounds what the client buffers meanwhile.
 *
 * <p><b>Note:</b> runs on its own agent thread; {@link #appliedSequence()}, {@link #problem()} and
 * {@link #progress()} may be read from any thread.
 */
public final class StreamConsumer implements Agent {
    /** Messages the ordered consumer pulls per request: the client buffers at most about this many. */
    static final int PULL_BATCH = 256;
    /** Most messages one duty cycle hands on. */
    private static final int MESSAGES_PER_CYCLE = 64;
    /** How long a duty cycle waits for the first message. */
    private static final long POLL_MS = 2;
    private static final Logger LOG = LoggerFactory.getLogger(StreamConsumer.class);

    private final NatsSession session;
    private final PodDirectory directory;
    private final WriterPool writers;
    private final ProgressLog progress;
    private final String progressKey;
    private final IngestErrors errors;
    private final EpochClock clock;
    private final long checkpointIntervalMs;
    private final AtomicCounter applied;
    private final AtomicCounter duplicates;
    private final AtomicCounter lost;
    private final AtomicCounter bad;
    private final AtomicCounter lag;
    private final AtomicCounter rejected;
    private final AtomicCounter natsErrors;
    private final StreamEnvelope envelope = new StreamEnvelope();
    private final UnsafeBuffer body = new UnsafeBuffer(new byte[0]);
    /** Per pod id: the engine sequence of the last batch applied, or absent. */
    private final Object2LongHashMap<String> podSequences = new Object2LongHashMap<>(-1);
    private IterableConsumer consumer;
    private long startSequence;
    /** The last stream sequence received (and handed to the writers). */
    private volatile long receivedSequence;
    /** The last stream sequence whose messages are all applied (recorded), or startSequence - 1. */
    private volatile long appliedSequence;
    private volatile String problem;
    private long[] barrier;
    private long barrierSequence;
    private long nextCheckpointMs;
    private long nextStreamCheckMs;
    private long lastMessageMs;
    /** True once a message was received after the first one (a loss is then found while running). */
    private boolean running;
    private java.util.function.Consumer<String> lossHandler;
    /** When the stream this consumer started on was created: another time means it was deleted and made again. */
    private java.time.ZonedDateTime streamCreated;

    /**
     * @param session              the NATS connection, stream and settings.
     * @param directory            pod ids.
     * @param writers              the writer agents.
     * @param progress             where the applied stream sequence is recorded (this consumer's share).
     * @param counters             counters.
     * @param errors               error log.
     * @param clock                clock for checkpoints.
     * @param checkpointIntervalMs how often the applied sequence is recorded.
     */
    public StreamConsumer(final NatsSession session, final PodDirectory directory, final WriterPool writers,
        final ProgressLog progress, final IngestCounters counters, final IngestErrors errors, final EpochClock clock,
        final long checkpointIntervalMs) {
        this.session = session;
        this.directory = directory;
        this.writers = writers;
        this.progress = progress;
        this.progressKey = progressKey(session.settings().stream());
        this.errors = errors;
        this.clock = clock;
        this.checkpointIntervalMs = checkpointIntervalMs;
        this.applied = counters.get(CounterType.JETSTREAM_APPLIED);
        this.duplicates = counters.get(CounterType.JETSTREAM_DUPLICATES);
        this.lost = counters.get(CounterType.JETSTREAM_LOST);
        this.bad = counters.get(CounterType.JETSTREAM_BAD_MESSAGES);
        this.lag = counters.get(CounterType.JETSTREAM_LAG);
        this.rejected = counters.get(CounterType.PODS_REJECTED);
        this.natsErrors = counters.get(CounterType.JETSTREAM_ERRORS);
        final PublisherProgress.Entry recorded = progress.read().get(progressKey);
        this.startSequence = recorded == null ? 1 : recorded.sequence() + 1;
        this.appliedSequence = startSequence - 1;
        this.receivedSequence = startSequence - 1;
    }

    /**
     * @param stream a stream's name.
     * @return the publisher name under which a consumer records its applied sequence in {@code state/publishers}
     * (and a snapshot carries it).
     */
    public static String progressKey(final String stream) {
        return PROGRESS_PREFIX + stream;
    }

    /** How every consumer's publisher name in {@code state/publishers} starts. */
    public static final String PROGRESS_PREFIX = "jetstream:";

    @Override
    public void onStart() {
        final io.nats.client.api.StreamInfo info = session.ensureStream();
        streamCreated = info.getCreateTime();
        final StreamState state = info.getStreamState();
        final long first = state.getFirstSequence();
        if (first > startSequence && state.getLastSequence() >= startSequence) {
            lose(first - startSequence, "the stream starts at sequence " + first + ", this cell needs "
                + startSequence + " (older events aged out or were deleted)");
        }
        try {
            consumer = open(startSequence);
        } catch (final IOException | JetStreamApiException ex) {
            throw new IllegalStateException("cannot consume stream " + session.settings().stream() + ": "
                + ex.getMessage(), ex);
        }
        lastMessageMs = clock.time();
        LOG.info("consuming stream {} from sequence {} (first {}, last {})", session.settings().stream(),
            startSequence, first, state.getLastSequence());
        nextCheckpointMs = clock.time() + checkpointIntervalMs;
    }

    private IterableConsumer open(final long from) throws IOException, JetStreamApiException {
        final OrderedConsumerContext ordered = session.connection().getStreamContext(session.settings().stream())
            .createOrderedConsumer(new OrderedConsumerConfiguration()
                .filterSubject(StreamSubjects.filter(session.settings().subjectPrefix()))
                .deliverPolicy(DeliverPolicy.ByStartSequence)
                .startSequence(from));
        return ordered.iterate(ConsumeOptions.builder().batchSize(PULL_BATCH).build());
    }

    /**
     * The ordered consumer received nothing for {@link #STALL_MS} while the stream holds messages after the last one
     * received (seen after a NATS server restart: the client's consumer does not always come back): it is replaced
     * by a new one from the next sequence. Counted in {@code jetstream errors} and logged.
     */
    private void reopen(final long lastInStream) {
        final long from = receivedSequence + 1;
        natsErrors.increment();
        errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -7, () -> "JetStream consumer of "
            + session.settings().stream() + " received nothing for " + STALL_MS + " ms with the stream at "
            + lastInStream + ": consuming again from " + from);
        try {
            closeConsumer();
            consumer = open(from);
            lastMessageMs = clock.time();
        } catch (final IOException | JetStreamApiException ex) {
            errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -8, () -> "JetStream: cannot consume stream "
                + session.settings().stream() + " again: " + ex.getMessage());
        }
    }

    /** How long the consumer may receive nothing while the stream holds more before it is made again. */
    static final long STALL_MS = 3_000;

    @Override
    public int doWork() {
        int work = 0;
        if (consumer == null) {
            return checkpoint() + checkStream(); // made again by checkStream once the stream is back
        }
        try {
            Message m = consumer.nextMessage(POLL_MS);
            if (m != null) {
                lastMessageMs = clock.time();
            }
            while (m != null) {
                onMessage(m);
                if (++work == MESSAGES_PER_CYCLE) {
                    break;
                }
                m = consumer.nextMessage(1L);
            }
        } catch (final JetStreamStatusCheckedException ex) {
            natsErrors.increment();
            errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -4, () -> "JetStream consumer of "
                + session.settings().stream() + ": " + ex.getMessage());
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        return work + checkpoint() + checkStream();
    }

    /**
     * Every {@link #STREAM_CHECK_MS}: the stream's lag behind its last message, and whether the stream was deleted
     * (or deleted and created again) under this consumer, which is reported, counted and makes {@link #problem()}
     * non-null: the messages it held are gone for this index.
     */
    private int checkStream() {
        final long now = clock.time();
        if (now < nextStreamCheckMs) {
            return 0;
        }
        nextStreamCheckMs = now + STREAM_CHECK_MS;
        final String stream = session.settings().stream();
        try {
            final io.nats.client.api.StreamInfo info = session.management().getStreamInfo(stream);
            if (!info.getCreateTime().equals(streamCreated)) {
                streamLost("stream " + stream + " was deleted and created again (created " + info.getCreateTime()
                    + ", consumed since " + streamCreated + ")");
            }
            final long lastInStream = info.getStreamState().getLastSequence();
            lag.setRelease(Math.max(0, lastInStream - receivedSequence));
            if (lastInStream > receivedSequence && now - lastMessageMs > STALL_MS) {
                reopen(lastInStream);
            }
        } catch (final JetStreamApiException ex) {
            if (ex.getApiErrorCode() == NatsSession.STREAM_NOT_FOUND) {
                streamLost("stream " + stream + " was deleted");
            } else {
                natsErrors.increment();
                errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -5, () -> "JetStream: cannot read stream "
                    + stream + ": " + ex.getMessage());
            }
        } catch (final IOException ex) {
            natsErrors.increment();
            errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -5, () -> "JetStream: cannot read stream "
                + stream + ": " + ex.getMessage());
        }
        return 1;
    }

    private void streamLost(final String why) {
        if (problem == null || !problem.contains(why)) {
            natsErrors.increment();
            problem = "JetStream: " + why + "; this index misses its messages: restart the relays and this daemon "
                + "with new cells (docs/jetstream.md, Faults)";
            errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -6, () -> "JetStream: " + why);
        }
    }

    /** How often the consumer reads the stream's state (lag, deletion). */
    static final long STREAM_CHECK_MS = 1_000;

    private void onMessage(final Message m) {
        final long received = System.nanoTime();
        final long seq = m.metaData().streamSequence();
        lag.setRelease(m.metaData().pendingCount());
        final long last = receivedSequence;
        if (seq <= last) {
            duplicates.increment();
            return;
        }
        if (seq > last + 1) {
            lose(seq - last - 1, "stream sequence " + seq + " follows " + last + " (the stream no longer holds the "
                + "messages between)");
        }
        running = true;
        receivedSequence = seq;
        final byte[] data = m.getData();
        body.wrap(data);
        final int check = envelope.wrap(body, 0, data.length);
        if (check != StreamEnvelope.OK) {
            bad.increment();
            errors.report(CounterType.JETSTREAM_BAD_MESSAGES.typeId(), check, () -> "stream "
                + session.settings().stream() + " message " + seq + " on " + m.getSubject() + ": "
                + StreamEnvelope.describe(check) + "; dropped");
            return;
        }
        final String podId = envelope.podId();
        final int type = envelope.type();
        final long engineSequence = envelope.sequence();
        if (WriterMessages.carriesEvents(type) && engineSequence >= 0) {
            if (engineSequence <= podSequences.getValue(podId) && podSequences.containsKey(podId)) {
                duplicates.increment();
                return;
            }
            podSequences.put(podId, engineSequence);
        } else if (type == WriterMessages.CLEAR_POD || type == WriterMessages.POD_DOWN) {
            // A restarted engine counts from 0 again; a pod that went down starts afresh.
            podSequences.removeKey(podId);
        }
        final int pod = directory.podNumber(podId, envelope.model());
        if (pod < 0) {
            rejected.increment();
            errors.report(CounterType.PODS_REJECTED.typeId(), -1, () -> "stream " + session.settings().stream()
                + ": pod " + podId + " cannot be registered (" + directory.maxPods() + " pod ids live)");
            return;
        }
        writers.offer(pod, type, body, envelope.payloadOffset(), envelope.payloadLength(), received,
            engineSequence);
        if (type == WriterMessages.POD_DOWN) {
            // Its writer applies the POD_DOWN for the state this handle names, as the Aeron transport does.
            directory.release(pod);
        }
        applied.increment();
    }

    private void lose(final long count, final String why) {
        lost.getAndAddRelease(count);
        final String message = count + " stream message(s) lost: " + why;
        problem = "JetStream: " + message + "; restart the daemon with a new cell to load the newest snapshot";
        errors.report(CounterType.JETSTREAM_LOST.typeId(), -1, () -> "JetStream: " + message);
        // At start the newest snapshot was loaded already (or there is none): a restart would find the same loss.
        if (running && lossHandler != null) {
            final java.util.function.Consumer<String> handler = lossHandler;
            lossHandler = null;
            handler.accept(message);
        }
    }

    /**
     * @param handler told once, on this consumer's thread, of a loss found after the consumer received its first
     *                message (not of one found at start, which a restart would only find again); null for none.
     * @return this.
     */
    public StreamConsumer onLossWhileRunning(final java.util.function.Consumer<String> handler) {
        this.lossHandler = handler;
        return this;
    }

    private int checkpoint() {
        final long now = clock.time();
        if (barrier != null && writers.appliedUpTo(barrier)) {
            appliedSequence = barrierSequence;
            progress.write(List.of(new PublisherProgress.Entry(progressKey, barrierSequence, null)));
            barrier = null;
            return 1;
        }
        if (barrier == null && now >= nextCheckpointMs && receivedSequence > appliedSequence) {
            nextCheckpointMs = now + checkpointIntervalMs;
            barrierSequence = receivedSequence;
            barrier = writers.producerPositions();
            return 1;
        }
        return 0;
    }

    /**
     * @return the last stream sequence whose messages are all applied and recorded (0 before the first).
     */
    public long appliedSequence() {
        return appliedSequence;
    }

    /**
     * @return the last stream sequence handed to the writers.
     */
    public long receivedSequence() {
        return receivedSequence;
    }

    /**
     * @return this consumer's entry for {@code state/publishers}: the last sequence handed to the writers (valid as
     * progress once they have drained their queues, at close).
     */
    public PublisherProgress.Entry progress() {
        return new PublisherProgress.Entry(progressKey, receivedSequence, null);
    }

    /**
     * @return why the index may miss events (stream messages lost), or null.
     */
    public String problem() {
        return problem;
    }

    @Override
    public void onClose() {
        closeConsumer();
    }

    private void closeConsumer() {
        if (consumer != null) {
            try {
                consumer.close();
            } catch (final Exception ex) {
                LOG.debug("closing the consumer of {}: {}", session.settings().stream(), ex.toString());
            }
            consumer = null;
        }
    }

    @Override
    public String roleName() {
        return "kvidx-jetstream-consumer";
    }
}
