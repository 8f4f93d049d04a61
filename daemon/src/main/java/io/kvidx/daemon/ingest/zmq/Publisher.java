package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.writer.PodDirectory;
import org.agrona.collections.IntArrayList;
import org.agrona.concurrent.UnsafeBuffer;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZEvent;
import org.zeromq.ZMQ;
import org.zeromq.ZMonitor;

/**
 * One publisher (endpoint) as the ZeroMQ ingest thread sees it: its SUB socket and connection monitor, the pods its
 * messages went to, where its sequence stands (what is dispatched to the writers, what the live stream has shown)
 * and its replay in flight with the live batches held meanwhile. The rules that move this state are
 * {@link Sequencer}'s.
 *
 * <p>Pods are {@link PodDirectory} handles. An endpoint configured with a pod id pins it, so that the pod keeps its
 * number while its engine is down, until {@link #close()}. The other handles it holds (topic pods, rank pods) are
 * checked with {@link PodDirectory#isCurrent} before use and dropped or resolved again once stale.
 *
 * <p><b>Note:</b> owned by the ZeroMQ ingest thread.
 */
final class Publisher {
    private static final byte[] EMPTY = new byte[0];

    final int index;
    final ZmqEndpoint config;
    final ZMQ.Socket sub;
    final ZMQ.Socket monitor;
    /** The endpoint's configured pod (pinned), or -1 when its topics name the pods. */
    final int fixedPod;
    /** The configured pod id names a data-parallel rank: the endpoint's batches are that rank's, whatever they say. */
    final boolean rankFixed;
    /** Handles of the pods its batches went to (stale ones are pruned every heartbeat interval). */
    final IntArrayList pods = new IntArrayList();
    byte[] lastTopic = EMPTY;
    /** The pod the last topic named (a handle that may be stale: {@link TopicPods#lastPod}), or -1. */
    int lastTopicPod = -1;
    /** Its id and model, to resolve it again once its handle is stale. */
    String lastTopicPodId;
    String lastTopicModel;
    /** The pod (a rank's pod when the batch named a rank) its last batch went to, or -1. */
    int lastFedPod = -1;
    boolean connected;
    private final PodDirectory directory;
    private boolean closed;

    /** The next sequence to dispatch; -1 before the first. */
    long next = -1;
    /** The last sequence the live stream showed; -1 before the first. */
    long lastLive = -1;
    /** The sequence the last checkpoint recorded. */
    long recorded = -1;
    /** The connection dropped since the last live message: the next one is checked by a replay. */
    boolean verifyOnNext;
    /** The last dispatched batch's payload, fingerprinted only when needed (null once fingerprinted). */
    private byte[] lastPayload;
    private long lastFingerprint = BatchFingerprint.NONE;

    /** A replay is in flight; live batches are held. */
    boolean replaying;
    /** Id of the replay in flight (replies of other ids are stale). */
    int replayId;
    /** One of {@link Sequencer}'s replay modes. */
    int replayMode;
    /** First sequence the replay must bring. */
    long replayFrom;
    /** The sequence of the last applied batch, asked for to check the engine still holds it; -1 for no check. */
    long replayVerify = -1;
    /** That batch's fingerprint. */
    long replayExpect;
    /** The first sequence the replay brought, or -1. */
    long replayFirst = -1;
    /** {@link #next} when the replay began (to tell whether it made progress). */
    long replayStartNext;
    /** The hold buffer overflowed during this replay (logged once). */
    boolean holdOverflowed;
    final HeldBatches held;

    Publisher(final int index, final ZmqEndpoint config, final ZContext context, final PodDirectory directory,
        final int holdCapacity, final int handshakeTimeoutMs) {
        this.index = index;
        this.config = config;
        this.directory = directory;
        this.held = new HeldBatches(holdCapacity);
        this.sub = context.createSocket(SocketType.SUB);
        ZMQ.Socket pair = null;
        try {
            sub.setLinger(0);
            sub.setRcvHWM(100_000);
            // A handshake that never completes (JeroMQ 0.6.0, about one new connection in 25) is dropped and made
            // again after this, not after ZeroMQ's default 30 s (DaemonConfiguration.ZMQ_HANDSHAKE_TIMEOUT_MS_DEFAULT).
            sub.setHandshakeIvl(handshakeTimeoutMs);
            sub.subscribe(EMPTY);
            final String monitorAddress = "inproc://kvidx-zmq-monitor-" + System.identityHashCode(this) + "-" + index;
            sub.monitor(monitorAddress, ZMQ.EVENT_CONNECTED | ZMQ.EVENT_DISCONNECTED);
            pair = context.createSocket(SocketType.PAIR);
            pair.connect(monitorAddress);
            sub.connect(config.endpoint());
        } catch (final RuntimeException ex) {
            // An endpoint ZeroMQ refuses (no such host, no port): nothing of the publisher is left open.
            if (pair != null) {
                pair.close();
            }
            sub.close();
            throw ex;
        }
        this.monitor = pair;
        rankFixed = config.podId() != null && io.kvidx.client.index.DataParallelRanks.rankOf(config.podId()) > 0;
        if (config.podId() != null) {
            fixedPod = directory.pin(config.podId(), config.model());
            if (fixedPod < 0) {
                monitor.close();
                sub.close();
                throw new IllegalStateException("too many pods: cannot add " + config.podId());
            }
            pods.addInt(fixedPod);
        } else {
            fixedPod = -1;
        }
    }

    /**
     * A publisher known by its topic on the bound SUB socket ({@code --zmq-bind}: engines connect to the daemon): it
     * has no socket of its own; its pods are named by its topic, its sequence is tracked as any publisher's.
     *
     * @param index        its publisher index.
     * @param config       its subscription ({@link ZmqEndpoint#endpoint()} is the bound endpoint and the topic).
     * @param directory    pod ids.
     * @param holdCapacity bytes of live batches held while its replay is in flight.
     */
    Publisher(final int index, final ZmqEndpoint config, final PodDirectory directory, final int holdCapacity) {
        this.index = index;
        this.config = config;
        this.directory = directory;
        this.held = new HeldBatches(holdCapacity);
        this.sub = null;
        this.monitor = null;
        this.fixedPod = -1;
        this.rankFixed = false;
    }

    /**
     * @return true for a publisher known by its topic on the bound socket (no socket of its own).
     */
    boolean isBound() {
        return sub == null;
    }

    boolean hasReplay() {
        return config.replayEndpoint() != null;
    }

    /**
     * Reads the connection monitor's events; a disconnect of a publisher whose stream is under way (and that can
     * replay) makes the next live message be checked by a replay: the engine may have restarted meanwhile.
     */
    void pollMonitor() {
        if (monitor == null) {
            return;
        }
        ZEvent event;
        while ((event = ZEvent.recv(monitor, ZMQ.DONTWAIT)) != null) {
            if (event.getEvent() == ZMonitor.Event.CONNECTED) {
                connected = true;
            } else if (event.getEvent() == ZMonitor.Event.DISCONNECTED) {
                connected = false;
                verifyOnNext = next >= 0 && hasReplay();
            }
        }
    }

    /** A live batch was dispatched (its fingerprint is taken when needed). */
    void dispatched(final long seq, final byte[] payload) {
        next = seq + 1;
        lastPayload = payload;
    }

    /** A replayed or held batch was dispatched. */
    void dispatched(final long seq, final long fingerprint) {
        next = seq + 1;
        lastPayload = null;
        lastFingerprint = fingerprint;
    }

    /** The publisher's sequence starts again from 0 (it restarted; its pods are cleared). */
    void restartSequence() {
        next = 0;
        lastPayload = null;
        lastFingerprint = BatchFingerprint.NONE;
    }

    /** Resumes after a recorded sequence (daemon restart). */
    void resume(final long sequence, final long fingerprint) {
        next = sequence + 1;
        lastLive = sequence;
        lastPayload = null;
        lastFingerprint = fingerprint;
    }

    /**
     * @param scratch a buffer to wrap a live payload with.
     * @return the fingerprint of the batch dispatched last ({@code next - 1}), or {@link BatchFingerprint#NONE}.
     */
    long fingerprint(final UnsafeBuffer scratch) {
        if (lastPayload != null) {
            scratch.wrap(lastPayload);
            lastFingerprint = BatchFingerprint.of(scratch, 0, lastPayload.length);
            lastPayload = null;
        }
        return next > 0 ? lastFingerprint : BatchFingerprint.NONE;
    }

    /**
     * @return the id of the pod the endpoint names (configured, or its last topic's), or null before any.
     */
    String podId() {
        return fixedPod >= 0 ? config.podId() : lastTopicPodId;
    }

    /**
     * Closes the SUB socket and its monitor and unpins the configured pod (its writer frees the number once the pod
     * is down and silent). Idempotent. Call on the ZeroMQ ingest thread, once the publisher is no longer polled.
     */
    void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (sub == null) {
            return;
        }
        sub.monitor(null, 0);
        sub.close();
        monitor.close();
        if (fixedPod >= 0) {
            directory.unpin(fixedPod);
        }
    }
}
