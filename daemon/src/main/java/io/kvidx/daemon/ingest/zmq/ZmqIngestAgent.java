package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.collections.IntArrayList;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZEvent;
import org.zeromq.ZMonitor;
import org.zeromq.ZMQ;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Subscribes to vLLM and SGLang engines' ZeroMQ PUB sockets (JeroMQ SUB, one socket per endpoint) and hands their
 * batches to the pods' writer agents, each to be decoded in its endpoint's {@link ZmqEndpoint.Engine} format.
 * Messages are three frames {@code [topic, seq (8-byte big-endian), msgpack payload]}. A batch's pod is the
 * endpoint's, or the topic's {@code kv@<pod>@<model>}, refined by the batch's data-parallel rank
 * ({@link RankedPods}: {@code <pod>#<r>} for rank r > 0).
 *
 * <p>Sequence tracking per publisher (endpoint):
 * <ul>
 *   <li>the next expected sequence arrives: applied;</li>
 *   <li>a gap: replay from the first missing sequence through the engine's replay socket (DEALER; replies in the
 *   pre-0.26 framing {@code ["", seq, payload]} (SGLang's too) or the 0.26+ framing {@code ["", topic, seq, payload]}, ended by a
 *   sequence of all ones); when the engine has no replay socket, does not answer, or no longer buffers the first
 *   missing batch, the replay failure is counted and the pods are marked suspect;</li>
 *   <li>an already applied sequence that follows the live stream's last (replay overlap): a duplicate, skipped;</li>
 *   <li>the live stream goes back (publisher restart): the endpoint's pods are cleared and the stream resyncs
 *   from the new sequence (replaying from 0 when it did not start at 0).</li>
 * </ul>
 * The first message of a publisher with a replay socket triggers a replay from 0 so that batches published before
 * the daemon subscribed are indexed too.
 *
 * <p>Restarts ({@link Recovery}): every checkpoint interval the agent records each publisher's last sequence whose
 * batches the writers have all applied ({@link PublisherProgress}, a barrier on the writer queues). A restarted
 * daemon, before it reads any live message, asks every engine with a replay socket for the batches after that
 * sequence. When the engine no longer buffers the first of them, the gap policy applies: {@code clear} (default)
 * clears the publisher's pods before the replayed batches are applied, so the pod is rebuilt from what the engine
 * still buffers and no block it dropped meanwhile stays indexed (counted as a replay gap clear); {@code keep} keeps
 * the pod's blocks and marks it suspect. A live sequence at or below the recorded one after a restart means the
 * publisher restarted too: its pods are cleared as for any reset.
 *
 * <p>Liveness: while an endpoint's connection is up (socket monitor), its pods get a heartbeat every interval.
 *
 * <p><b>Note:</b> run by one {@link org.agrona.concurrent.AgentRunner}; all sockets live on its thread.
 */
public final class ZmqIngestAgent implements Agent {
    private static final long END_OF_REPLAY = -1L;
    private static final byte[] EMPTY = new byte[0];
    private static final int READ_LIMIT = 64;
    private static final int REPLAY_ATTEMPTS = 3;

    private final List<ZmqEndpoint> endpoints;
    private final PodDirectory directory;
    private final WriterPool writers;
    private final IngestErrors errors;
    private final EpochClock clock;
    private final long heartbeatIntervalMs;
    private final int replayTimeoutMs;
    private final AtomicCounter framingErrors;
    private final AtomicCounter gaps;
    private final AtomicCounter replays;
    private final AtomicCounter replayFailures;
    private final AtomicCounter resets;
    private final AtomicCounter duplicates;
    private final RankedPods rankedPods;
    private final UnsafeBuffer payloadBuffer = new UnsafeBuffer(EMPTY);
    private final byte[][] frames = new byte[4][];
    private ZContext context;
    private Publisher[] publishers;
    private long nextHeartbeatMs;
    private long replayFirst;
    private int monitorId;
    private final Recovery recovery;
    private final AtomicCounter replayGapClears;
    private long nextCheckpointMs;
    private long[] checkpointPositions;
    private long[] checkpointSequences;
    private boolean gapCleared;

    /**
     * How the agent survives a daemon restart.
     *
     * @param progress             where each publisher's applied sequence is recorded.
     * @param checkpointIntervalMs how often it is recorded.
     * @param clearOnReplayGap     true: a replay that no longer reaches back clears the pods (policy clear); false:
     *                             keep them and mark them suspect (policy keep).
     */
    public record Recovery(PublisherProgress progress, long checkpointIntervalMs, boolean clearOnReplayGap) {
    }

    /**
     * @param endpoints           publishers to subscribe to.
     * @param directory           pod ids.
     * @param writers             writer agents.
     * @param counters            counters.
     * @param errors              error log.
     * @param clock               clock.
     * @param heartbeatIntervalMs heartbeat interval for connected endpoints.
     * @param replayTimeoutMs     how long to wait for each replay reply.
     */
    public ZmqIngestAgent(final List<ZmqEndpoint> endpoints, final PodDirectory directory, final WriterPool writers,
        final IngestCounters counters, final IngestErrors errors, final EpochClock clock,
        final long heartbeatIntervalMs, final int replayTimeoutMs) {
        this(endpoints, directory, writers, counters, errors, clock, heartbeatIntervalMs, replayTimeoutMs, null);
    }

    /**
     * @param endpoints           publishers to subscribe to.
     * @param directory           pod ids.
     * @param writers             writer agents.
     * @param counters            counters.
     * @param errors              error log.
     * @param clock               clock.
     * @param heartbeatIntervalMs heartbeat interval for connected endpoints.
     * @param replayTimeoutMs     how long to wait for each replay reply.
     * @param recovery            progress recording and replay after a restart, or null for none.
     */
    public ZmqIngestAgent(final List<ZmqEndpoint> endpoints, final PodDirectory directory, final WriterPool writers,
        final IngestCounters counters, final IngestErrors errors, final EpochClock clock,
        final long heartbeatIntervalMs, final int replayTimeoutMs, final Recovery recovery) {
        this.recovery = recovery;
        this.replayGapClears = counters.get(CounterType.REPLAY_GAP_CLEARS);
        this.endpoints = List.copyOf(endpoints);
        this.directory = directory;
        this.writers = writers;
        this.errors = errors;
        this.clock = clock;
        this.heartbeatIntervalMs = heartbeatIntervalMs;
        this.replayTimeoutMs = replayTimeoutMs;
        this.framingErrors = counters.get(CounterType.FRAMING_ERRORS);
        this.gaps = counters.get(CounterType.SEQUENCE_GAPS);
        this.replays = counters.get(CounterType.REPLAYS);
        this.replayFailures = counters.get(CounterType.REPLAY_FAILURES);
        this.resets = counters.get(CounterType.SEQUENCE_RESETS);
        this.duplicates = counters.get(CounterType.DUPLICATE_MESSAGES);
        this.rankedPods = new RankedPods(directory, counters, errors);
    }

    /** State of one publisher (endpoint). */
    private final class Publisher {
        final ZmqEndpoint config;
        final ZMQ.Socket sub;
        final ZMQ.Socket monitor;
        ZMQ.Socket replay;
        ZMQ.Poller replayPoller;
        final int fixedPod;
        final IntArrayList pods = new IntArrayList();
        byte[] lastTopic = EMPTY;
        int lastTopicPod = -1;
        long next = -1;
        long lastLive = -1;
        long recorded = -1;
        boolean connected;

        Publisher(final ZmqEndpoint config) {
            this.config = config;
            this.sub = context.createSocket(SocketType.SUB);
            sub.setLinger(0);
            sub.setRcvHWM(100_000);
            sub.subscribe(EMPTY);
            final String monitorAddress = "inproc://kvidx-zmq-monitor-" + System.identityHashCode(this) + "-"
                + monitorId++;
            sub.monitor(monitorAddress, ZMQ.EVENT_CONNECTED | ZMQ.EVENT_DISCONNECTED);
            this.monitor = context.createSocket(SocketType.PAIR);
            monitor.connect(monitorAddress);
            sub.connect(config.endpoint());
            if (config.podId() != null) {
                fixedPod = directory.podNumber(config.podId(), config.model());
                if (fixedPod < 0) {
                    throw new IllegalStateException("too many pods: cannot add " + config.podId());
                }
                pods.addInt(fixedPod);
            } else {
                fixedPod = -1;
            }
        }
    }

    @Override
    public void onStart() {
        context = new ZContext(1);
        publishers = new Publisher[endpoints.size()];
        for (int i = 0; i < publishers.length; i++) {
            publishers[i] = new Publisher(endpoints.get(i));
            if (publishers[i].fixedPod >= 0) {
                writers.offer(publishers[i].fixedPod, WriterMessages.REGISTER);
            }
        }
        if (recovery != null) {
            recover(recovery.progress().read());
        }
    }

    /**
     * After a restart: resumes each publisher after its recorded sequence and, before any live message, replays
     * what the engine published since.
     */
    private void recover(final Map<String, PublisherProgress.Entry> recorded) {
        for (final Publisher p : publishers) {
            final PublisherProgress.Entry e = recorded.get(p.config.endpoint());
            if (e == null || e.sequence() < 0) {
                continue;
            }
            p.next = e.sequence() + 1;
            p.lastLive = e.sequence();
            if (p.fixedPod < 0 && e.podId() != null) {
                final int pod = directory.podNumber(e.podId(), p.config.model());
                if (pod >= 0) {
                    p.lastTopicPod = pod;
                    if (!p.pods.containsInt(pod)) {
                        p.pods.addInt(pod);
                    }
                    writers.offer(pod, WriterMessages.REGISTER);
                }
            }
            if (p.config.replayEndpoint() != null) {
                replay(p, p.next, true, true);
            }
        }
    }

    /**
     * Records, for every publisher, the last sequence whose batches are all applied: the sequences dispatched at
     * the previous checkpoint once the writers have consumed their queues past that checkpoint's positions.
     */
    private void checkpoint(final long now) {
        nextCheckpointMs = now + recovery.checkpointIntervalMs();
        if (checkpointPositions != null && writers.appliedUpTo(checkpointPositions)) {
            final List<PublisherProgress.Entry> entries = new ArrayList<>(publishers.length);
            boolean changed = false;
            for (int i = 0; i < publishers.length; i++) {
                entries.add(new PublisherProgress.Entry(publishers[i].config.endpoint(), checkpointSequences[i],
                    podIdOf(publishers[i])));
                changed |= checkpointSequences[i] != publishers[i].recorded;
                publishers[i].recorded = checkpointSequences[i];
            }
            if (changed) {
                recovery.progress().write(entries);
            }
            checkpointPositions = null;
        }
        if (checkpointPositions == null) {
            checkpointSequences = new long[publishers.length];
            for (int i = 0; i < publishers.length; i++) {
                checkpointSequences[i] = publishers[i].next - 1;
            }
            checkpointPositions = writers.producerPositions();
        }
    }

    private String podIdOf(final Publisher p) {
        final int pod = p.fixedPod >= 0 ? p.fixedPod : p.lastTopicPod;
        return pod < 0 ? null : directory.podId(pod);
    }

    /**
     * @return each publisher's last dispatched sequence (call once the agent has stopped and the writers have
     * drained their queues: then it is also the last applied one).
     */
    public List<PublisherProgress.Entry> dispatched() {
        final List<PublisherProgress.Entry> entries = new ArrayList<>();
        if (publishers != null) {
            for (final Publisher p : publishers) {
                entries.add(new PublisherProgress.Entry(p.config.endpoint(), p.next - 1, podIdOf(p)));
            }
        }
        return entries;
    }

    @Override
    public int doWork() {
        int work = 0;
        for (final Publisher p : publishers) {
            work += poll(p);
        }
        final long now = clock.time();
        if (recovery != null && now >= nextCheckpointMs) {
            checkpoint(now);
        }
        if (now >= nextHeartbeatMs) {
            nextHeartbeatMs = now + heartbeatIntervalMs;
            for (final Publisher p : publishers) {
                pollMonitor(p);
                if (p.connected) {
                    for (int i = 0; i < p.pods.size(); i++) {
                        writers.offer(p.pods.getInt(i), WriterMessages.HEARTBEAT);
                    }
                }
            }
        }
        return work;
    }

    private void pollMonitor(final Publisher p) {
        ZEvent event;
        while ((event = ZEvent.recv(p.monitor, ZMQ.DONTWAIT)) != null) {
            if (event.getEvent() == ZMonitor.Event.CONNECTED) {
                p.connected = true;
            } else if (event.getEvent() == ZMonitor.Event.DISCONNECTED) {
                p.connected = false;
            }
        }
    }

    private int poll(final Publisher p) {
        int work = 0;
        while (work < READ_LIMIT) {
            final int n = receive(p.sub, ZMQ.DONTWAIT);
            if (n == 0) {
                break;
            }
            work++;
            if (n != 3) {
                framingError(p, "message with " + n + " frames, expected 3 [topic, seq, payload]");
                continue;
            }
            if (frames[1].length != 8) {
                framingError(p, "sequence frame of " + frames[1].length + " bytes, expected 8");
                continue;
            }
            final int pod = resolvePod(p, frames[0]);
            if (pod < 0) {
                continue;
            }
            final int ranked = rankPod(p, pod, frames[2]);
            if (ranked < 0) {
                continue;
            }
            onLive(p, ranked, ByteBuffer.wrap(frames[1]).getLong(), frames[2]);
        }
        return work;
    }

    /**
     * Receives one multipart message into {@link #frames}. Frames beyond the fourth are drained.
     *
     * @return number of frames (0 when none was waiting or the receive timed out).
     */
    private int receive(final ZMQ.Socket socket, final int flags) {
        final byte[] first = socket.recv(flags);
        if (first == null) {
            return 0;
        }
        frames[0] = first;
        int n = 1;
        while (socket.hasReceiveMore()) {
            final byte[] f = socket.recv(0);
            if (n < frames.length) {
                frames[n] = f;
            }
            n++;
        }
        return n;
    }

    private int resolvePod(final Publisher p, final byte[] topic) {
        if (p.fixedPod >= 0) {
            return p.fixedPod;
        }
        if (Arrays.equals(topic, p.lastTopic)) {
            return p.lastTopicPod;
        }
        // SGLang publishers with a snapshot endpoint append "\0sgl-kv-epoch=<epoch>" (and barrier markers) to the
        // topic: the pod and model are what precedes the first NUL.
        int end = 0;
        while (end < topic.length && topic[end] != 0) {
            end++;
        }
        final String t = new String(topic, 0, end, StandardCharsets.UTF_8);
        final String[] parts = t.split("@", -1);
        if (parts.length < 2 || !"kv".equals(parts[0]) || parts[1].isEmpty()) {
            framingError(p, "topic '" + t + "' is not kv@<pod>@<model> and no pod is configured for the endpoint");
            return -1;
        }
        final String model = parts.length > 2 ? String.join("@", Arrays.copyOfRange(parts, 2, parts.length))
            : p.config.model();
        final int pod = directory.podNumber(parts[1], model == null || model.isEmpty() ? p.config.model() : model);
        if (pod < 0) {
            framingError(p, "too many pods; topic '" + t + "' dropped");
            return -1;
        }
        if (!p.pods.containsInt(pod)) {
            p.pods.addInt(pod);
        }
        p.lastTopic = topic;
        p.lastTopicPod = pod;
        return pod;
    }

    private void framingError(final Publisher p, final String what) {
        framingErrors.increment();
        errors.report(CounterType.FRAMING_ERRORS.typeId(), -1 - endpoints.indexOf(p.config),
            () -> "ZeroMQ " + p.config.endpoint() + ": " + what + "; dropped");
    }

    private void onLive(final Publisher p, final int pod, final long seq, final byte[] payload) {
        if (p.next < 0) {
            if (seq > 0 && p.config.replayEndpoint() != null) {
                replay(p, 0, false, false);
            }
        } else if (seq <= p.lastLive) {
            resets.increment();
            errors.report(CounterType.SEQUENCE_RESETS.typeId(), -1 - endpoints.indexOf(p.config),
                () -> "ZeroMQ " + p.config.endpoint() + ": sequence went back from " + p.lastLive + " to " + seq
                    + " (publisher restart); clearing its pods");
            for (int i = 0; i < p.pods.size(); i++) {
                writers.offer(p.pods.getInt(i), WriterMessages.CLEAR_POD);
            }
            if (!p.pods.containsInt(pod)) {
                writers.offer(pod, WriterMessages.CLEAR_POD);
            }
            p.next = 0;
            if (seq > 0) {
                gap(p, seq);
            }
        } else if (seq < p.next) {
            p.lastLive = seq;
            duplicates.increment();
            return;
        } else if (seq > p.next) {
            gap(p, seq);
        }
        p.lastLive = seq;
        if (p.next >= 0 && seq < p.next) {
            duplicates.increment();
            return;
        }
        apply(p, pod, payload);
        p.next = seq + 1;
    }

    private void gap(final Publisher p, final long seq) {
        gaps.increment();
        if (p.config.replayEndpoint() == null) {
            replayFailed(p, "sequence gap " + p.next + ".." + (seq - 1) + " and no replay endpoint configured");
            return;
        }
        replay(p, p.next, true, false);
    }

    private void replayFailed(final Publisher p, final String why) {
        replayFailures.increment();
        errors.report(CounterType.REPLAY_FAILURES.typeId(), -1 - endpoints.indexOf(p.config),
            () -> "ZeroMQ " + p.config.endpoint() + ": " + why + "; its pods are marked suspect");
        for (int i = 0; i < p.pods.size(); i++) {
            writers.offer(p.pods.getInt(i), WriterMessages.MARK_SUSPECT);
        }
    }

    /**
     * Replays from {@code from} and applies every batch not applied yet; on return {@code p.next} follows the last
     * batch applied. A replay that gets no end marker within the timeout is retried from where it stopped, with a
     * fresh socket, up to {@link #REPLAY_ATTEMPTS} times.
     */
    private void replay(final Publisher p, final long from, final boolean mustCoverFrom,
        final boolean emptyIsCurrent) {
        replays.increment();
        replayFirst = -1;
        gapCleared = false;
        boolean done = false;
        for (int attempt = 0; attempt < REPLAY_ATTEMPTS && !done; attempt++) {
            done = replayOnce(p, replayFirst < 0 || p.next < 0 ? from : p.next, mustCoverFrom ? from : -1);
        }
        if (!done) {
            replayFailed(p, "replay from " + from + " got no end marker in " + REPLAY_ATTEMPTS + " attempts of "
                + replayTimeoutMs + " ms");
        } else if (gapCleared || (emptyIsCurrent && replayFirst < 0)) {
            // The gap policy cleared the pods before the replayed batches (counted), or the engine has published
            // nothing since the recorded sequence.
            return;
        } else if (mustCoverFrom && replayFirst != from) {
            final long f = replayFirst;
            replayFailed(p, "replay from " + from + " started at " + (f < 0 ? "nothing" : Long.toString(f))
                + " (the engine's buffer no longer holds the gap)");
        }
    }

    private boolean replayOnce(final Publisher p, final long from, final long mustStartAt) {
        if (p.replay == null) {
            // A poller, not a receive timeout: JeroMQ 0.6.0's DEALER receive timeout misses replies now and then.
            p.replay = context.createSocket(SocketType.DEALER);
            p.replay.setLinger(0);
            p.replay.connect(p.config.replayEndpoint());
            p.replayPoller = context.createPoller(1);
            p.replayPoller.register(p.replay, ZMQ.Poller.POLLIN);
        }
        final byte[] start = ByteBuffer.allocate(8).putLong(from).array();
        p.replay.sendMore(EMPTY);
        p.replay.send(start, 0);
        while (true) {
            final int n = p.replayPoller.poll(replayTimeoutMs) > 0 ? receive(p.replay, ZMQ.DONTWAIT) : 0;
            if (n == 0) {
                // The socket may hold a late answer: drop it so the next attempt starts clean.
                p.replayPoller.close();
                p.replay.close();
                p.replay = null;
                p.replayPoller = null;
                return false;
            }
            final byte[] seqFrame;
            final byte[] topic;
            final byte[] payload;
            if (n == 3 && frames[0].length == 0) {
                topic = null;
                seqFrame = frames[1];
                payload = frames[2];
            } else if (n == 4 && frames[0].length == 0) {
                topic = frames[1];
                seqFrame = frames[2];
                payload = frames[3];
            } else {
                framingError(p, "replay reply with " + n + " frames, expected [\"\", seq, payload] or "
                    + "[\"\", topic, seq, payload]");
                continue;
            }
            if (seqFrame.length != 8) {
                framingError(p, "replay sequence frame of " + seqFrame.length + " bytes");
                continue;
            }
            final long seq = ByteBuffer.wrap(seqFrame).getLong();
            if (seq == END_OF_REPLAY) {
                return true;
            }
            if (replayFirst < 0) {
                replayFirst = seq;
                if (mustStartAt >= 0 && seq > mustStartAt && recovery != null && recovery.clearOnReplayGap()) {
                    clearForGap(p, mustStartAt, seq);
                }
            }
            final int pod = topic != null && topic.length > 0 ? resolvePod(p, topic)
                : p.fixedPod >= 0 ? p.fixedPod : p.lastTopicPod;
            if (pod < 0) {
                framingError(p, "replayed batch without a pod (no topic, no pod configured)");
                continue;
            }
            if (p.next >= 0 && seq < p.next) {
                continue;
            }
            final int ranked = rankPod(p, pod, payload);
            if (ranked >= 0) {
                apply(p, ranked, payload);
            }
            p.next = seq + 1;
        }
    }

    /**
     * Gap policy clear: the engine's buffer starts after the first missing batch, so the pods' blocks may include
     * some the engine dropped meanwhile: clear them, then rebuild them from the replayed batches.
     */
    private void clearForGap(final Publisher p, final long from, final long first) {
        gapCleared = true;
        replayGapClears.increment();
        errors.report(CounterType.REPLAY_GAP_CLEARS.typeId(), -1 - endpoints.indexOf(p.config),
            () -> "ZeroMQ " + p.config.endpoint() + ": replay from " + from + " starts at " + first
                + " (the engine no longer buffers the gap); its pods are cleared and rebuilt from the replay");
        for (int i = 0; i < p.pods.size(); i++) {
            writers.offer(p.pods.getInt(i), WriterMessages.CLEAR_POD);
        }
    }

    /**
     * @return the pod of the batch's data-parallel rank ({@link RankedPods}), added to the publisher's pods, or -1
     * when the batch is dropped (counted there).
     */
    private int rankPod(final Publisher p, final int pod, final byte[] payload) {
        final int ranked = rankedPods.podOf(pod, payload);
        if (ranked >= 0 && ranked != pod && !p.pods.containsInt(ranked)) {
            p.pods.addInt(ranked);
        }
        return ranked;
    }

    private void apply(final Publisher p, final int pod, final byte[] payload) {
        payloadBuffer.wrap(payload);
        writers.offer(pod, p.config.engine() == ZmqEndpoint.Engine.SGLANG ? WriterMessages.SGLANG_BATCH
            : WriterMessages.VLLM_BATCH, payloadBuffer, 0, payload.length);
    }

    @Override
    public void onClose() {
        if (context != null) {
            context.close();
        }
    }

    @Override
    public String roleName() {
        return "kvidx-zmq-ingest";
    }

    /**
     * @return the pod numbers discovered per endpoint so far (for tests and the CLI).
     */
    public List<ZmqEndpoint> endpoints() {
        return new ArrayList<>(endpoints);
    }
}
