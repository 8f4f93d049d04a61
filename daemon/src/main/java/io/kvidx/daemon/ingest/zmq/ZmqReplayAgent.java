package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.status.AtomicCounter;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.nio.ByteBuffer;

/**
 * Talks to the engines' replay sockets on a thread of its own, so that a slow, silent or unreachable replay socket
 * never holds up the ZeroMQ ingest thread (which keeps reading every engine's live stream meanwhile). Takes
 * requests from the ingest thread and hands every replayed batch back to it, in the engine's order, through
 * {@link ReplayChannel}; the ingest thread decides what to apply.
 *
 * <p>One replay per publisher at a time, any number of publishers at once, each on its own DEALER socket (never
 * REQ: a REQ socket takes one reply per request) and never blocking: sockets are read without waiting, and a
 * replay whose next reply does not come within the replay timeout is retried with a fresh socket (so a late answer
 * cannot mix in) from the batch after the last one received, up to {@link #REPLAY_ATTEMPTS} attempts; then it ends
 * with {@link ReplayChannel#NO_END_MARKER}. A new request for a publisher replaces its replay in flight. While the
 * replies queue is full the replay pauses (the engine's timeout does not run: the wait is the daemon's).
 *
 * <p><b>Note:</b> run by one {@link org.agrona.concurrent.AgentRunner}; its sockets live on that thread. It
 * writes only the replies queue and counters.
 */
final class ZmqReplayAgent implements Agent, MessageHandler {
    /** Attempts per replay (each ends after a replay timeout without a reply). */
    static final int REPLAY_ATTEMPTS = 3;
    private static final long END_OF_REPLAY = -1L;
    private static final byte[] EMPTY = new byte[0];
    private static final int READ_LIMIT = 256;
    private static final int REQUEST_LIMIT = 64;

    private final ReplayChannel channel;
    private final IngestErrors errors;
    private final EpochClock clock;
    private final int timeoutMs;
    private final int handshakeTimeoutMs;
    private final AtomicCounter framingErrors;
    private final AtomicCounter oversized;
    private final PublisherConfigs configs;
    private Replay[] replays = new Replay[0];
    private final byte[][] frames = new byte[4][];
    private ZContext context;
    private IoThreadPins ioPins;
    private long now;

    /** One publisher's replay socket and the state of its replay in flight. */
    private static final class Replay {
        final int publisher;
        final ZmqEndpoint config;
        ZMQ.Socket socket;
        ZMQ.Poller poller;
        boolean active;
        int id;
        long start;
        long lastSeq;
        int attempt;
        long deadlineMs;
        /** A reply (or the end) received but not yet queued: the replies queue was full. */
        boolean pending;
        long pendingSeq;
        byte[] pendingTopic;
        /** Null for a batch too large for the queue (queued as SKIPPED). */
        byte[] pendingPayload;
        int pendingEnd = -1;

        Replay(final int publisher, final ZmqEndpoint config) {
            this.publisher = publisher;
            this.config = config;
        }
    }

    ZmqReplayAgent(final PublisherConfigs configs, final ReplayChannel channel, final IngestCounters counters,
        final IngestErrors errors, final EpochClock clock, final int timeoutMs, final int handshakeTimeoutMs) {
        this.configs = configs;
        this.channel = channel;
        this.handshakeTimeoutMs = handshakeTimeoutMs;
        this.errors = errors;
        this.clock = clock;
        this.timeoutMs = timeoutMs;
        this.framingErrors = counters.get(CounterType.FRAMING_ERRORS);
        this.oversized = counters.get(CounterType.OVERSIZED_MESSAGES);
    }

    /** Pins the threads of this agent's ZeroMQ context; set by its ingest agent before it starts. */
    void ioPins(final IoThreadPins pins) {
        this.ioPins = pins;
    }

    @Override
    public void onStart() {
        context = ioPins == null ? new ZContext(1) : ioPins.install(new ZContext(1));
    }

    @Override
    public int doWork() {
        now = clock.time();
        int work = channel.requests.read(this, REQUEST_LIMIT);
        for (final Replay r : replays) {
            if (r != null && r.active) {
                work += pump(r);
            }
        }
        return work;
    }

    @Override
    public void onMessage(final int type, final MutableDirectBuffer buffer, final int index, final int length) {
        final Replay r = replay(buffer.getInt(index + ReplayChannel.PUBLISHER_OFFSET));
        if (r == null) {
            return; // the publisher was removed
        }
        final int id = buffer.getInt(index + ReplayChannel.REPLAY_ID_OFFSET);
        if (type == ReplayChannel.REQUEST) {
            if (r.active) {
                closeSocket(r); // the replaced replay's late answers must not reach the new one
            }
            r.active = true;
            r.id = id;
            r.start = buffer.getLong(index + ReplayChannel.SEQ_OFFSET);
            r.lastSeq = -1;
            r.attempt = 0;
            r.pending = false;
            r.pendingEnd = -1;
            request(r, r.start);
        } else if (type == ReplayChannel.CANCEL && r.active && r.id == id) {
            closeSocket(r);
            r.active = false;
            r.pending = false;
            r.pendingEnd = -1;
        }
    }

    /**
     * The replay state of a publisher index, made anew when the index now belongs to another subscription (a
     * publisher removed and another added at runtime); null when the index holds none.
     */
    private Replay replay(final int publisher) {
        final ZmqEndpoint config = configs.get(publisher);
        if (publisher >= replays.length) {
            replays = java.util.Arrays.copyOf(replays, Math.max(publisher + 1, 2 * replays.length));
        }
        Replay r = replays[publisher];
        if (r != null && r.config != config) {
            closeSocket(r);
            r.active = false;
            r = null;
            replays[publisher] = null;
        }
        if (r == null && config != null) {
            r = new Replay(publisher, config);
            replays[publisher] = r;
        }
        return r;
    }

    private void request(final Replay r, final long from) {
        if (r.socket == null) {
            // A poller, not a receive timeout: JeroMQ 0.6.0's DEALER receive timeout misses replies now and then.
            r.socket = context.createSocket(SocketType.DEALER);
            r.socket.setLinger(0);
            // As the subscription's: a stalled handshake is made again within the replay's attempts.
            r.socket.setHandshakeIvl(handshakeTimeoutMs);
            r.socket.connect(r.config.replayEndpoint());
            r.poller = context.createPoller(1);
            r.poller.register(r.socket, ZMQ.Poller.POLLIN);
        }
        // Never blocks: a request that cannot be queued simply gets no answer, and the attempt times out.
        if (r.socket.send(EMPTY, ZMQ.SNDMORE | ZMQ.DONTWAIT)) {
            r.socket.send(ByteBuffer.allocate(8).putLong(from).array(), ZMQ.DONTWAIT);
        }
        r.deadlineMs = now + timeoutMs;
    }

    private int pump(final Replay r) {
        if (r.pending && !flush(r)) {
            r.deadlineMs = now + timeoutMs;
            return 0;
        }
        int work = 0;
        while (r.active && work < READ_LIMIT && r.poller.poll(0) > 0) {
            final int n = Multipart.receive(r.socket, frames);
            if (n == 0) {
                break;
            }
            work++;
            r.deadlineMs = now + timeoutMs;
            final int seqFrame = r.config.replayFraming().sequenceFrame(n);
            if (seqFrame < 0 || frames[0].length != 0) {
                framingError(r, "replay reply with " + n + " frames, expected " + r.config.replayFraming().describe());
                continue;
            }
            if (frames[seqFrame].length != 8) {
                framingError(r, "replay sequence frame of " + frames[seqFrame].length + " bytes");
                continue;
            }
            final long seq = ByteBuffer.wrap(frames[seqFrame]).getLong();
            r.pending = true;
            if (seq == END_OF_REPLAY) {
                r.pendingEnd = ReplayChannel.COMPLETE;
            } else {
                r.lastSeq = seq;
                r.pendingSeq = seq;
                r.pendingTopic = seqFrame == 2 ? frames[1] : EMPTY;
                r.pendingPayload = frames[seqFrame + 1];
                if (ReplayChannel.TOPIC_OFFSET + r.pendingTopic.length + r.pendingPayload.length
                    > channel.replies.maxMsgLength()) {
                    oversize(r, r.pendingPayload.length);
                    r.pendingPayload = null;
                }
            }
            if (!flush(r)) {
                return work;
            }
        }
        if (r.active && now >= r.deadlineMs) {
            closeSocket(r);
            if (++r.attempt < REPLAY_ATTEMPTS) {
                request(r, r.lastSeq >= 0 ? r.lastSeq + 1 : r.start);
            } else {
                r.pending = true;
                r.pendingEnd = ReplayChannel.NO_END_MARKER;
                flush(r);
            }
            work++;
        }
        return work;
    }

    /** Queues the pending reply; false when the replies queue is full. */
    private boolean flush(final Replay r) {
        final RingBuffer q = channel.replies;
        final int index;
        if (r.pendingEnd >= 0) {
            index = q.tryClaim(ReplayChannel.END, ReplayChannel.END_LENGTH);
            if (index < 0) {
                return false;
            }
            q.buffer().putInt(index + ReplayChannel.STATUS_OFFSET, r.pendingEnd);
            r.active = false;
            r.pendingEnd = -1;
        } else if (r.pendingPayload == null) {
            index = q.tryClaim(ReplayChannel.SKIPPED, ReplayChannel.SKIPPED_LENGTH);
            if (index < 0) {
                return false;
            }
            q.buffer().putLong(index + ReplayChannel.SEQ_OFFSET, r.pendingSeq);
        } else {
            final int topicLength = r.pendingTopic.length;
            index = q.tryClaim(ReplayChannel.BATCH, ReplayChannel.TOPIC_OFFSET + topicLength
                + r.pendingPayload.length);
            if (index < 0) {
                return false;
            }
            final MutableDirectBuffer b = q.buffer();
            b.putLong(index + ReplayChannel.SEQ_OFFSET, r.pendingSeq);
            b.putInt(index + ReplayChannel.TOPIC_LENGTH_OFFSET, topicLength);
            b.putBytes(index + ReplayChannel.TOPIC_OFFSET, r.pendingTopic);
            b.putBytes(index + ReplayChannel.TOPIC_OFFSET + topicLength, r.pendingPayload);
        }
        q.buffer().putInt(index + ReplayChannel.PUBLISHER_OFFSET, r.publisher);
        q.buffer().putInt(index + ReplayChannel.REPLAY_ID_OFFSET, r.id);
        q.commit(index);
        r.pending = false;
        r.pendingTopic = null;
        r.pendingPayload = null;
        return true;
    }

    private void closeSocket(final Replay r) {
        if (r.socket != null) {
            r.poller.close();
            r.socket.close();
            r.socket = null;
            r.poller = null;
        }
    }

    private void framingError(final Replay r, final String what) {
        framingErrors.increment();
        errors.report(CounterType.FRAMING_ERRORS.typeId(), -1 - r.publisher,
            () -> "ZeroMQ " + r.config.endpoint() + ": " + what + "; dropped");
    }

    private void oversize(final Replay r, final int length) {
        oversized.increment();
        errors.report(CounterType.OVERSIZED_MESSAGES.typeId(), -1 - r.publisher, () -> "ZeroMQ "
            + r.config.endpoint() + ": replayed batch of " + length + " bytes exceeds the replay queue's largest "
            + "message (" + channel.replies.maxMsgLength() + " bytes); dropped");
    }

    @Override
    public void onClose() {
        if (context != null) {
            context.close();
        }
    }

    @Override
    public String roleName() {
        return "kvidx-zmq-replay";
    }
}
