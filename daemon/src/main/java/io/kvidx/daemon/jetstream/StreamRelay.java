package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.zmq.BatchFingerprint;
import io.kvidx.daemon.writer.EventTap;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.nats.client.JetStream;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.agrona.concurrent.status.AtomicCounter;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A relay's publisher (ADR 0024): the {@link EventTap} of its writer pool copies every streamed message the
 * transports offer, as a {@link StreamEnvelope} with its {@code Nats-Msg-Id}, into a bounded queue; this agent
 * publishes them in that order to {@code <prefix>.<model>.<pod>}, with at most {@link #MAX_IN_FLIGHT} unacknowledged.
 * A publish that fails or is not acknowledged within {@link #ACK_TIMEOUT_NS} is sent again with every one after it,
 * in order (the stream's duplicate window drops the copies it already stored), so nothing is lost while NATS is away;
 * meanwhile the queue fills and the transports wait, as for a full writer queue. Heartbeats are published at most
 * once per pod and heartbeat interval, and at most every {@link #STREAM_HEARTBEAT_MIN_MS}.
 *
 * <p>Message ids: a batch's is {@code <pod>/<sequence>/<fingerprint>}; a control message's names the pod's last
 * published batch, {@code <pod>/<type>/<sequence>/<fingerprint>}; a heartbeat's its interval,
 * {@code <pod>/hb/<epoch ms / interval>/<sequence>/<fingerprint>}: every id ends with the pod's last batch. Relays in
 * step give a message the same id.
 *
 * <p>With leases ({@code jetstream.leaseTtlMs} &gt; 0, {@link RelayLeases}), a pod's messages are published only while
 * this relay holds the pod's lease, with the lease's revision appended to their ids ({@code <id>@<revision>}); the
 * others are kept in the pod's backlog (heartbeats are not) and published from where the stream is once this relay
 * takes the lease. The ZeroMQ progress never passes a message still in a backlog.
 *
 * <p><b>Note:</b> {@link #offered} runs on the transports' threads; a pod's state (last batch, last heartbeat) is
 * written by the thread that offers the pod's messages, and by two only when two transports feed one pod, where the
 * race can give a control message or a heartbeat another id (published twice, harmless), never touch a payload.
 * {@link #doWork} runs on the relay's own agent thread.
 */
public final class StreamRelay implements EventTap, Agent {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(StreamRelay.class);
    /** Most publishes awaiting their acknowledgement. */
    static final int MAX_IN_FLIGHT = 512;
    /** A publish not acknowledged within this is sent again. */
    static final long ACK_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(5);
    /**
     * A pod's heartbeat goes to the stream at most this often, whatever the daemon's heartbeat interval: every
     * router host reads every heartbeat. Consumers' {@code podTimeoutMs} must exceed it (default 30 s).
     */
    static final long STREAM_HEARTBEAT_MIN_MS = 5_000;
    /** The queue's record type. */
    private static final int RECORD = 1;
    /** Longest message id. */
    private static final int MAX_ID_LENGTH = 256;

    private final ManyToOneRingBuffer queue;
    private final PodDirectory directory;
    private final JetStream jetStream;
    private final NatsSession session;
    private long seenReconnections;
    private final String subjectPrefix;
    private final String stream;
    private final long heartbeatIntervalMs;
    private final LongSupplier epochMs;
    private final IngestErrors errors;
    private final AtomicCounter published;
    private final AtomicCounter duplicates;
    private final AtomicCounter retries;
    private final ThreadLocal<IdleStrategy> offerIdle;
    private final ThreadLocal<UnsafeBuffer> scratch = ThreadLocal.withInitial(() -> new UnsafeBuffer(new byte[0]));
    /** Per pod number: the handle the state below belongs to. */
    private final int[] podHandle = new int[PodDirectory.MAX_NUMBERS];
    /** Per pod number: the sequence of the last batch offered, or -1. */
    private final long[] lastSequence = new long[PodDirectory.MAX_NUMBERS];
    /** Per pod number: the fingerprint of the last batch offered. */
    private final long[] lastFingerprint = new long[PodDirectory.MAX_NUMBERS];
    /** Per pod number: the heartbeat interval of the last heartbeat published. */
    private final long[] lastHeartbeat = new long[PodDirectory.MAX_NUMBERS];
    private final ArrayDeque<RelayMessage> inFlight = new ArrayDeque<>();
    /** The pods' leases and the backlogs of the pods this relay does not publish, or null without leases. */
    private final RelayLeases leases;
    /** Most bytes held in backlogs: beyond, the queue is not read (the transports wait, as for a full queue). */
    private final long backlogLimit;
    private final ArrayList<RelayMessage> lapsed = new ArrayList<>();
    /** The agent's view of the record being sent (its thread only). */
    private final StreamEnvelope envelope = new StreamEnvelope();
    private final UnsafeBuffer sendBuffer = new UnsafeBuffer(new byte[0]);
    /** The queue position up to which every record is acknowledged by the stream (written by the agent only). */
    private volatile long acknowledgedPosition;
    private volatile int inFlightCount;
    private volatile boolean closed;

    /**
     * @param queueLength         bytes of the queue between the transports and this agent (a power of two).
     * @param directory           pod ids and models.
     * @param session             the NATS session to publish on (its reconnections trigger a resend).
     * @param subjectPrefix       the subject prefix.
     * @param stream              the stream's name (each publish expects it).
     * @param heartbeatIntervalMs at most one heartbeat per pod and interval (at least
     *                            {@link #STREAM_HEARTBEAT_MIN_MS}) is published.
     * @param epochMs             the wall clock (heartbeat intervals).
     * @param counters            counters.
     * @param errors              error log.
     * @param offerIdle           idle strategy of a transport thread waiting for room.
     * @param holder              this relay's name in the leases it holds (with {@code jetstream.leaseTtlMs} &gt; 0:
     *                            only the holder of a pod's lease publishes it; 0: every relay publishes every pod and
     *                            the stream's duplicate window stores each message once).
     */
    public StreamRelay(final int queueLength, final PodDirectory directory, final NatsSession session,
        final String subjectPrefix, final String stream, final long heartbeatIntervalMs, final LongSupplier epochMs,
        final IngestCounters counters, final IngestErrors errors, final Supplier<IdleStrategy> offerIdle,
        final String holder) {
        this.queue = new ManyToOneRingBuffer(new UnsafeBuffer(ByteBuffer.allocateDirect(
            queueLength + RingBufferDescriptor.TRAILER_LENGTH)));
        this.directory = directory;
        this.session = session;
        this.jetStream = session.jetStream();
        this.subjectPrefix = subjectPrefix;
        this.stream = stream;
        this.heartbeatIntervalMs = Math.max(STREAM_HEARTBEAT_MIN_MS, heartbeatIntervalMs);
        this.epochMs = epochMs;
        this.errors = errors;
        this.published = counters.get(CounterType.JETSTREAM_PUBLISHED);
        this.duplicates = counters.get(CounterType.JETSTREAM_PUBLISH_DUPLICATES);
        this.retries = counters.get(CounterType.JETSTREAM_PUBLISH_RETRIES);
        this.offerIdle = ThreadLocal.withInitial(offerIdle);
        final long leaseTtlMs = session.settings().leaseTtlMs();
        this.leases = leaseTtlMs == 0 ? null : new RelayLeases(session.ensureLeaseBucket(), leaseTtlMs,
            session.management(), stream, holder, counters, errors);
        this.backlogLimit = queueLength;
        java.util.Arrays.fill(podHandle, -1);
    }

    @Override
    public void offered(final int pod, final int type, final DirectBuffer src, final int offset, final int length,
        final long sequence) {
        if (!StreamEnvelope.isStreamed(type)) {
            return;
        }
        final String podId = directory.podId(pod);
        if (podId == null) {
            return; // its number was freed: the writer drops it too
        }
        final int n = PodDirectory.number(pod);
        if (podHandle[n] != pod) {
            podHandle[n] = pod;
            lastSequence[n] = -1;
            lastFingerprint[n] = BatchFingerprint.NONE;
            lastHeartbeat[n] = -1;
        }
        final String id;
        long fingerprint = BatchFingerprint.NONE;
        if (WriterMessages.carriesEvents(type)) {
            fingerprint = BatchFingerprint.of(src, offset, length);
            lastSequence[n] = sequence;
            lastFingerprint[n] = fingerprint;
            id = podId + '/' + sequence + '/' + Long.toHexString(fingerprint);
        } else if (type == WriterMessages.HEARTBEAT) {
            final long interval = epochMs.getAsLong() / heartbeatIntervalMs;
            if (interval == lastHeartbeat[n]) {
                return;
            }
            lastHeartbeat[n] = interval;
            id = podId + "/hb/" + interval + '/' + lastSequence[n] + '/' + Long.toHexString(lastFingerprint[n]);
        } else {
            id = podId + '/' + type + '/' + lastSequence[n] + '/' + Long.toHexString(lastFingerprint[n]);
        }
        final String model = directory.model(pod);
        final byte[] podBytes = podId.getBytes(StandardCharsets.US_ASCII);
        final byte[] modelBytes = model == null ? null : model.getBytes(StandardCharsets.UTF_8);
        final byte[] idBytes = id.getBytes(StandardCharsets.UTF_8);
        if (idBytes.length > MAX_ID_LENGTH) {
            // Cannot happen with valid pod ids (112 bytes at most); never thrown on a transport's thread.
            errors.report(CounterType.OVERSIZED_MESSAGES.typeId(), n, () -> "pod " + podId + ": message id longer "
                + "than " + MAX_ID_LENGTH + " bytes; not published");
            return;
        }
        final int envelope = StreamEnvelope.length(podBytes, modelBytes, length);
        final int total = 2 + idBytes.length + envelope;
        if (total > queue.maxMsgLength()) {
            errors.report(CounterType.OVERSIZED_MESSAGES.typeId(), n, () -> "pod " + podId + ": message of "
                + length + " bytes exceeds the relay queue's largest message (" + queue.maxMsgLength()
                + " bytes); not published. Raise writerQueueLength");
            return;
        }
        final IdleStrategy idle = offerIdle.get();
        idle.reset();
        while (!closed) {
            final int claim = queue.tryClaim(RECORD, total);
            if (claim > 0) {
                final var b = queue.buffer();
                b.putShort(claim, (short) idBytes.length);
                b.putBytes(claim + 2, idBytes);
                StreamEnvelope.encode(b, claim + 2 + idBytes.length, type, sequence, fingerprint, podBytes,
                    modelBytes, src, offset, length);
                queue.commit(claim);
                return;
            }
            idle.idle();
        }
    }

    @Override
    public int doWork() {
        if (!session.connected()) {
            return 0; // nothing is sent into a broken connection; what is in flight goes again after it is back
        }
        final long reconnections = session.reconnections();
        if (reconnections != seenReconnections) {
            // Whatever was in flight may have died with the old connection: everything goes again, in order, before
            // anything new (the stream drops the copies it stored), so no later message overtakes a lost one.
            seenReconnections = reconnections;
            if (!inFlight.isEmpty()) {
                errors.report(CounterType.JETSTREAM_PUBLISH_RETRIES.typeId(), -3, () -> "JetStream relay "
                    + "reconnected: the " + inFlight.size() + " unacknowledged message(s) are sent again, in order");
                resendAll();
            }
        }
        int work = checkAcks();
        final long now = System.nanoTime();
        if (leases != null) {
            work += leases.poll(now);
            work += drainBacklogs(now);
            if (now - nextRetireNs >= 0) {
                nextRetireNs = now + RETIRE_CHECK_NS;
                work += leases.retireIdle(now, this::inFlight);
            }
        }
        boolean failed = hasFailed();
        while (!failed && inFlight.size() < MAX_IN_FLIGHT
            && (leases == null || leases.backlogBytes() < backlogLimit) && queue.read(reader, 1) > 0) {
            final RelayMessage sent = inFlight.peekLast();
            failed = sent != null && sent.ack.isCompletedExceptionally();
            work++;
        }
        if (work > 0) {
            acknowledgedPosition = firstNotInStream();
        }
        inFlightCount = inFlight.size();
        return work;
    }

    /**
     * @return the queue position of the oldest message not acknowledged by the stream (sent, or held while another
     * relay holds its pod's lease), else the queue's consumer position: everything before it is in the stream.
     */
    private long firstNotInStream() {
        long first = queue.consumerPosition();
        for (final RelayMessage m : inFlight) {
            first = Math.min(first, m.startPosition);
        }
        if (leases != null && leases.backlogMessages() > 0) {
            for (final RelayLeases.Lease lease : leases.all()) {
                final RelayMessage m = lease.backlog.peekFirst();
                if (m != null) {
                    first = Math.min(first, m.startPosition);
                }
            }
        }
        return first;
    }

    private boolean inFlight(final RelayLeases.Lease lease) {
        for (final RelayMessage m : inFlight) {
            if (m.lease == lease) {
                return true;
            }
        }
        return false;
    }

    /** How often idle leases are looked for. */
    private static final long RETIRE_CHECK_NS = TimeUnit.SECONDS.toNanos(1);
    private long nextRetireNs;

    /** Publishes, in order, the held messages of the pods whose lease this relay holds (taken over, or regained). */
    private int drainBacklogs(final long now) {
        if (leases.backlogMessages() == 0 || hasFailed()) {
            return 0;
        }
        int work = 0;
        for (final RelayLeases.Lease lease : leases.all()) {
            while (!lease.backlog.isEmpty() && inFlight.size() < MAX_IN_FLIGHT && lease.publishing(now)) {
                final RelayMessage m = leases.take(lease);
                m.id = m.baseId + lease.suffix();
                inFlight.addLast(m);
                publish(m);
                work++;
            }
        }
        return work;
    }

    /**
     * Sends everything unacknowledged again, in order, except the messages of pods whose lease lapsed since: they go
     * back to their backlogs (the next holder publishes from where the stream is).
     */
    private void resendAll() {
        final long now = System.nanoTime();
        for (final java.util.Iterator<RelayMessage> it = inFlight.iterator(); it.hasNext();) {
            final RelayMessage f = it.next();
            if (f.lease != null && !f.lease.publishing(now)) {
                it.remove();
                lapsed.add(f);
                continue;
            }
            retries.increment();
            publish(f);
        }
        if (!lapsed.isEmpty()) {
            leases.restore(lapsed);
            lapsed.clear();
        }
    }

    /** A failed publish in flight: nothing new is sent until it went again (order). */
    private boolean hasFailed() {
        for (final RelayMessage f : inFlight) {
            if (f.ack.isCompletedExceptionally()) {
                return true;
            }
        }
        return false;
    }

    private final org.agrona.concurrent.MessageHandler reader = (type, buffer, index, length) ->
        send(buffer, index, length);

    @Override
    public long position() {
        return queue.producerPosition();
    }

    /**
     * {@inheritDoc} True once every message offered before the position is acknowledged by the stream: the ZeroMQ
     * checkpoints then record its sequence, so a relay restarted (even after kill -9) asks its engines to replay
     * what it had not published yet.
     */
    @Override
    public boolean passed(final long position) {
        return acknowledgedPosition >= position;
    }

    private void send(final DirectBuffer buffer, final int index, final int length) {
        final int idLength = buffer.getShort(index) & 0xFFFF;
        final String id = buffer.getStringWithoutLengthUtf8(index + 2, idLength);
        final byte[] body = new byte[length - 2 - idLength];
        buffer.getBytes(index + 2 + idLength, body);
        sendBuffer.wrap(body);
        envelope.wrap(sendBuffer, 0, body.length);
        final String subject = StreamSubjects.subject(subjectPrefix, envelope.model(), envelope.podId());
        final long now = System.nanoTime();
        final RelayLeases.Lease lease = leases == null ? null : leases.of(subject, subjectPrefix, now);
        // Within the handler the consumer position is still the record's start.
        final RelayMessage m = new RelayMessage(subject, id, envelope.type(), envelope.sequence(),
            envelope.fingerprint(), body, queue.consumerPosition(), lease);
        if (lease == null) {
            m.id = id;
        } else if (lease.publishing(now) && lease.backlog.isEmpty()) {
            m.id = id + lease.suffix();
        } else {
            if (m.type != WriterMessages.HEARTBEAT) {
                leases.hold(m); // a heartbeat is not kept: the holder's keep the pod alive
            }
            return;
        }
        inFlight.addLast(m);
        publish(m);
    }

    private void publish(final RelayMessage f) {
        f.sentNanos = System.nanoTime();
        try {
            f.ack = jetStream.publishAsync(f.subject, (Headers) null, f.body,
                PublishOptions.builder().messageId(f.id).expectedStream(stream).build());
        } catch (final RuntimeException ex) {
            // The client's reconnect buffer is full or the connection is closed: tried again after the ack timeout.
            f.ack = CompletableFuture.failedFuture(ex);
        }
    }

    private int checkAcks() {
        int work = 0;
        while (!inFlight.isEmpty()) {
            final RelayMessage head = inFlight.peekFirst();
            if (head.ack.isDone() && !head.ack.isCompletedExceptionally()) {
                final PublishAck ack = head.ack.join();
                if (ack.isDuplicate()) {
                    duplicates.increment();
                }
                published.increment();
                inFlight.pollFirst();
                work++;
                continue;
            }
            final boolean failed = head.ack.isCompletedExceptionally();
            if (failed || System.nanoTime() - head.sentNanos > ACK_TIMEOUT_NS) {
                if (failed && System.nanoTime() - head.sentNanos < RETRY_PAUSE_NS) {
                    break; // not in a tight loop while NATS is away
                }
                final String why = failed ? head.ack.handle((a, ex) -> String.valueOf(ex)).join()
                    : "no acknowledgement within " + TimeUnit.NANOSECONDS.toMillis(ACK_TIMEOUT_NS) + " ms";
                errors.report(CounterType.JETSTREAM_PUBLISH_RETRIES.typeId(), -1, () -> "JetStream publish to "
                    + head.subject + " failed (" + why + "); it and the " + (inFlight.size() - 1) + " after it are "
                    + "sent again, in order");
                resendAll();
                work++;
            }
            break;
        }
        return work;
    }

    /** A failed publish is sent again no sooner than this after it was sent. */
    private static final long RETRY_PAUSE_NS = TimeUnit.MILLISECONDS.toNanos(250);

    /**
     * @return publishes not yet acknowledged plus bytes queued: zero once everything offered is in the stream.
     */
    public long pending() {
        return inFlightCount + queue.size();
    }

    /**
     * Publishes what is still queued or unacknowledged (the transports have stopped), for at most
     * {@link #DRAIN_NS}; {@link #drained()} then says whether everything reached the stream.
     */
    @Override
    public void onClose() {
        final long deadline = System.nanoTime() + DRAIN_NS;
        while ((pending() > 0 || (leases != null && leases.publishable(System.nanoTime())))
            && System.nanoTime() < deadline) {
            if (doWork() == 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
        }
        closed = true;
        final long pending = pending();
        final long held = leases == null ? 0 : leases.backlogMessages();
        drained = pending == 0 && held == 0;
        if (leases != null) {
            if (pending == 0) {
                leases.release(lease -> true);
            }
            leases.close();
        }
        if (pending > 0) {
            errors.report(CounterType.JETSTREAM_PUBLISH_RETRIES.typeId(), -2, () -> "JetStream relay closed with "
                + pending + " message(s) not acknowledged by the stream; the ZeroMQ progress is not recorded, so "
                + "the engines replay them at the next start");
        } else if (held > 0) {
            LOG.info("JetStream relay closed holding {} message(s) of pods whose lease another relay holds, not yet "
                + "seen in the stream: its last ZeroMQ checkpoint (before them) stands", held);
        }
    }

    /**
     * @return true once {@link #onClose()} published everything offered.
     */
    public boolean drained() {
        return drained;
    }

    /** How long closing waits for the stream to acknowledge what is queued. */
    private static final long DRAIN_NS = TimeUnit.SECONDS.toNanos(5);
    private volatile boolean drained;

    @Override
    public String roleName() {
        return "kvidx-jetstream-relay";
    }
}
