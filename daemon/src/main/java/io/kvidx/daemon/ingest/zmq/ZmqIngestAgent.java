package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.PodAllowList;
import io.kvidx.daemon.state.ProgressLog;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.zeromq.ZContext;
import org.zeromq.ZMQException;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Subscribes to vLLM engines' ZeroMQ PUB sockets (JeroMQ SUB, one socket per endpoint) and hands their batches to
 * the pods' writer agents. Messages are three frames {@code [topic, seq (8-byte big-endian), msgpack payload]}.
 *
 * <p>Parts, by responsibility:
 * <ul>
 *   <li>this agent: the SUB sockets and their connection monitors, heartbeats, and the duty cycle that reads live
 *   messages and replay replies;</li>
 *   <li>{@link Sequencer}: per publisher, which batch is dispatched when (gaps, duplicates, publisher restarts,
 *   replays and the live batches held meanwhile, restarts the daemon did not see), and pod ids from topics;</li>
 *   <li>{@link ZmqReplayAgent}: the replay sockets, on a thread of their own ({@link ReplayChannel} between the
 *   two), so that a slow or silent replay socket never holds up any engine's live stream;</li>
 *   <li>{@link Checkpoints}: each publisher's applied sequence, recorded for a restart ({@link Recovery}).</li>
 * </ul>
 *
 * <p>Sequence tracking per publisher (endpoint), see docs/ingestion.md: the next expected sequence is applied; a
 * gap is replayed through the engine's replay socket (DEALER; replies framed as {@link ReplayFraming} says, ended
 * by a sequence of all ones) while the publisher's later live batches wait in a bounded buffer; an engine that
 * cannot replay the gap gets the replay failure counted and its pods marked suspect (the pod table's flag), or the
 * gap policy; an already applied sequence is skipped; a live stream that goes back (publisher restart) clears the
 * publisher's pods and resyncs them. A replay that continues a stream asks for the batch applied last too: an
 * engine that no longer holds it, or holds another batch under its sequence, restarted unseen and is cleared and
 * resynced. The first message of a publisher with a replay socket triggers a replay from 0 so that batches
 * published before the daemon subscribed are indexed too.
 *
 * <p>Restarts ({@link Recovery}): the daemon restarted asks every engine with a replay socket for the batches after
 * its recorded sequence, on the replay thread; that publisher's live batches wait for it, other publishers' flow.
 * When the engine no longer buffers the first of them, the gap policy applies: {@code clear} (default) clears the
 * publisher's pods before the replayed batches are applied (counted as a replay gap clear); {@code keep} keeps the
 * pod's blocks and marks it suspect.
 *
 * <p>Liveness: while an endpoint's connection is up (socket monitor), its pods get a heartbeat every interval.
 *
 * <p><b>Note:</b> run by one {@link org.agrona.concurrent.AgentRunner}; all SUB sockets live on its thread. Its
 * replay agent ({@link #replayAgent()}) runs on a thread of its own, started by the owner with this one and closed
 * before it.
 */
public final class ZmqIngestAgent implements Agent {
    private static final int READ_LIMIT = 64;
    private static final int REPLY_LIMIT = 64;
    /** Bytes of live batches held per publisher while its replay is in flight. */
    static final int HOLD_CAPACITY_BYTES = 4 << 20;
    /** Subscription changes queued for the ingest thread at most. */
    static final int CHANGES_CAPACITY = 4096;

    /** A subscription added ({@code subscribed} set) or dropped ({@code queued} set) at runtime. */
    private record Change(ZmqEndpoint endpoint, CompletableFuture<Void> subscribed, CompletableFuture<long[]> queued) {
        void fail(final Throwable cause) {
            if (subscribed != null) {
                subscribed.completeExceptionally(cause);
            } else {
                queued.completeExceptionally(cause);
            }
        }
    }

    private final List<ZmqEndpoint> endpoints;
    private final PodDirectory directory;
    private final WriterPool writers;
    private final IngestCounters counters;
    private final IngestErrors errors;
    private final EpochClock clock;
    private final long heartbeatIntervalMs;
    private final int replayTimeoutMs;
    private final int handshakeTimeoutMs;
    private final Recovery recovery;
    private final ReplayChannel channel = new ReplayChannel();
    private final Sequencer sequencer;
    private final Checkpoints checkpoints;
    private final ZmqReplayAgent replay;
    private final byte[][] frames = new byte[4][];
    private final PublisherConfigs configs = new PublisherConfigs();
    private final ManyToOneConcurrentArrayQueue<Change> changes = new ManyToOneConcurrentArrayQueue<>(CHANGES_CAPACITY);
    private ZContext context;
    private Publisher[] publishers = new Publisher[0];
    private long nextHeartbeatMs;
    private int replayIdBase;
    private String bindEndpoint;
    private java.util.function.Function<String, ZmqEndpoint> registered;
    private BoundSocket bound;
    private PodAllowList topicPodAllowList;
    private int ioThreads = 1;
    private IoThreadPins ioPins;
    private int part = -1;
    private final SocketWait socketWait = new SocketWait();

    /**
     * How the agent survives a daemon restart.
     *
     * @param progress             where each publisher's applied sequence is recorded.
     * @param checkpointIntervalMs how often it is recorded.
     * @param clearOnReplayGap     true: a replay that no longer reaches back clears the pods (policy clear); false:
     *                             keep them and mark them suspect (policy keep).
     */
    public record Recovery(ProgressLog progress, long checkpointIntervalMs, boolean clearOnReplayGap) {
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
     * @param handshakeTimeoutMs  how long a new connection's ZeroMQ handshake may take before it is made again.
     * @param recovery            progress recording and replay after a restart, or null for none.
     */
    public ZmqIngestAgent(final List<ZmqEndpoint> endpoints, final PodDirectory directory, final WriterPool writers,
        final IngestCounters counters, final IngestErrors errors, final EpochClock clock,
        final long heartbeatIntervalMs, final int replayTimeoutMs, final int handshakeTimeoutMs,
        final Recovery recovery) {
        this.endpoints = List.copyOf(endpoints);
        this.directory = directory;
        this.writers = writers;
        this.counters = counters;
        this.errors = errors;
        this.clock = clock;
        this.heartbeatIntervalMs = heartbeatIntervalMs;
        this.replayTimeoutMs = replayTimeoutMs;
        this.handshakeTimeoutMs = handshakeTimeoutMs;
        this.recovery = recovery;
        this.sequencer = new Sequencer(directory, writers, counters, errors, channel,
            recovery != null && recovery.clearOnReplayGap(), replayTimeoutMs);
        this.checkpoints = new Checkpoints(recovery == null ? null : recovery.progress(),
            recovery == null ? 0 : recovery.checkpointIntervalMs(), writers);
        this.replay = new ZmqReplayAgent(configs, channel, counters, errors, clock, replayTimeoutMs,
            handshakeTimeoutMs);
    }

    /**
     * The agent that talks to this agent's engines' replay sockets ({@link ZmqReplayAgent}): the owner runs it on a
     * thread of its own, started with this agent's and closed before it. Requests queue for it until it runs.
     *
     * @return the replay agent.
     */
    public Agent replayAgent() {
        return replay;
    }

    /**
     * Binds one SUB socket that engines connect to (llm-d's centralized mode); call before the agent starts. Each
     * message's topic {@code kv@<pod>@<model>} names its pod, and each topic's sequence is tracked on its own.
     *
     * @param endpoint   where to bind, e.g. {@code tcp://*:5557}.
     * @param registered a pod id's registered subscription (for its replay endpoint and event format), or null.
     * @return this.
     */
    public ZmqIngestAgent bind(final String endpoint,
        final java.util.function.Function<String, ZmqEndpoint> registered) {
        this.bindEndpoint = endpoint;
        this.registered = registered;
        return this;
    }

    /**
     * Accepts, from topics {@code kv@<pod>@<model>} (the bound socket's, and those of endpoints without a configured
     * pod), only the pods these patterns match; call before the agent starts. Messages naming other pods are
     * dropped, counted ({@link CounterType#PODS_NOT_ALLOWED}) and logged once per pod id.
     *
     * @param setting  the list's YAML key, named in the log.
     * @param patterns pod ids or globs ({@code *}, {@code ?}); empty accepts every pod.
     * @return this.
     */
    public ZmqIngestAgent topicPods(final String setting, final List<String> patterns) {
        topicPodAllowList = patterns.isEmpty() ? null : new PodAllowList("ZeroMQ", setting, patterns,
            counters.get(CounterType.PODS_NOT_ALLOWED), errors, CounterType.PODS_NOT_ALLOWED.typeId() * 64 + 1);
        sequencer.topicPodAllowList(topicPodAllowList);
        return this;
    }

    /**
     * Sets the I/O threads of the subscription sockets' ZeroMQ context (default 1); call before the agent starts.
     *
     * @param threads 1 or more.
     * @return this.
     */
    public ZmqIngestAgent ioThreads(final int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("ZeroMQ I/O threads must be >= 1: " + threads);
        }
        this.ioThreads = threads;
        return this;
    }

    /**
     * Pins the threads of this agent's and its replay agent's ZeroMQ contexts ({@code zmqIoCpus}); call before the
     * agents start.
     *
     * @param pins the pins, shared by the transport's agents.
     * @return this.
     */
    public ZmqIngestAgent ioPins(final IoThreadPins pins) {
        this.ioPins = pins;
        replay.ioPins(pins);
        return this;
    }

    /**
     * @return the I/O threads of the running agent's ZeroMQ context, 0 before it started.
     */
    int contextIoThreads() {
        final ZContext c = context;
        return c == null ? 0 : c.getContext().getIOThreads();
    }

    @Override
    public void onStart() {
        context = ioPins == null ? new ZContext(ioThreads) : ioPins.install(new ZContext(ioThreads));
        if (bindEndpoint != null) {
            bound = new BoundSocket(bindEndpoint, context, directory, registered, sequencer, errors,
                counters.get(CounterType.FRAMING_ERRORS), counters.get(CounterType.INVALID_POD_IDS),
                new BoundSocket.Publishers() {
                    @Override
                    public Publisher create(final ZmqEndpoint config) {
                        final Publisher p = new Publisher(freeIndex(), config, directory, HOLD_CAPACITY_BYTES);
                        install(p);
                        return p;
                    }

                    @Override
                    public void remove(final Publisher p) {
                        uninstall(p);
                    }
                }, topicPodAllowList);
        }
        for (final ZmqEndpoint e : endpoints) {
            try {
                add(e);
            } catch (final RuntimeException ex) {
                // A configured endpoint ZeroMQ refuses is reported (by add) and skipped: the others still flow.
            }
        }
        if (recovery != null) {
            final Map<String, PublisherProgress.Entry> recorded = recovery.progress().read();
            for (final Publisher p : publishers) {
                final PublisherProgress.Entry e = p == null ? null : recorded.get(p.config.endpoint());
                if (e != null && e.sequence() >= 0) {
                    sequencer.recover(p, e);
                }
            }
        }
    }

    /**
     * Subscribes to one more publisher (a registered engine) from any thread; the ingest thread connects within its
     * next duty cycle, and the publisher's first batch triggers a replay from its start, as at startup.
     *
     * @param endpoint   the subscription.
     * @param subscribed completed by the ingest thread: with null once the publisher's socket is made and polled,
     *                   exceptionally when it cannot be made (the endpoint refused by ZeroMQ, too many pods).
     * @return false when too many changes are queued (the caller retries).
     */
    public boolean subscribe(final ZmqEndpoint endpoint, final CompletableFuture<Void> subscribed) {
        return changes.offer(new Change(endpoint, subscribed, null));
    }

    /**
     * Drops a publisher's subscription from any thread: the ingest thread closes its socket, cancels its replay and
     * takes its pods down (their alive bits at once, their blocks swept after), and frees their identities.
     *
     * @param endpoint the subscription, as subscribed.
     * @param queued   completed by the ingest thread once the pods' takedowns are queued, with the writers'
     *                 producer positions after them ({@link WriterPool#applied}: once the writers reach them, no
     *                 reader sees the pods alive); with an empty array when no publisher had that subscription.
     * @return false when too many changes are queued (the caller retries).
     */
    public boolean unsubscribe(final ZmqEndpoint endpoint, final CompletableFuture<long[]> queued) {
        return changes.offer(new Change(endpoint, null, queued));
    }

    private int applyChanges() {
        int work = 0;
        Change c;
        while ((c = changes.poll()) != null) {
            try {
                if (c.subscribed() != null) {
                    add(c.endpoint());
                    c.subscribed().complete(null);
                } else {
                    c.queued().complete(remove(c.endpoint()));
                }
            } catch (final RuntimeException ex) {
                c.fail(ex);
            }
            work++;
        }
        return work;
    }

    /** Makes and polls a publisher; throws (reported in the error log too) when its socket cannot be made. */
    private void add(final ZmqEndpoint endpoint) {
        final int index = freeIndex();
        final Publisher p;
        try {
            p = new Publisher(index, endpoint, context, directory, HOLD_CAPACITY_BYTES, handshakeTimeoutMs);
        } catch (final RuntimeException ex) {
            errors.report(CounterType.FRAMING_ERRORS.typeId(), -1 - index, () -> "ZeroMQ " + endpoint.endpoint()
                + ": cannot subscribe: " + ex.getMessage());
            throw ex;
        }
        install(p);
        if (p.fixedPod >= 0) {
            writers.offer(p.fixedPod, WriterMessages.REGISTER);
        }
    }

    /** @return the lowest publisher index no publisher holds. */
    private int freeIndex() {
        int index = 0;
        while (index < publishers.length && publishers[index] != null) {
            index++;
        }
        return index;
    }

    /** Makes a publisher (made at {@link #freeIndex()}) one the agent polls, sequences and checkpoints. */
    private void install(final Publisher p) {
        // A new publisher at a reused index starts its replay ids after the old one's: late replies stay stale.
        p.replayId = ++replayIdBase << 16;
        if (p.index == publishers.length) {
            publishers = java.util.Arrays.copyOf(publishers, p.index + 1);
        }
        configs.set(p.index, p.config);
        publishers[p.index] = p;
        sequencer.publishers(publishers);
        checkpoints.publishers(publishers);
    }

    /** Stops sequencing a publisher: its replay is cancelled, its index freed. */
    private void uninstall(final Publisher p) {
        sequencer.forget(p);
        publishers[p.index] = null;
        configs.set(p.index, null);
        sequencer.publishers(publishers);
        checkpoints.publishers(publishers);
    }

    /** @return the writers' producer positions after the pods' takedowns; empty when no publisher matched. */
    private long[] remove(final ZmqEndpoint endpoint) {
        for (int i = 0; i < publishers.length; i++) {
            final Publisher p = publishers[i];
            if (p != null && !p.isBound() && p.config.equals(endpoint)) {
                uninstall(p);
                final int[] pods = p.pods.toIntArray();
                p.close();
                // After the unpin: the writer frees each pod's identity once it has taken the pod down.
                for (final int pod : pods) {
                    writers.offer(pod, WriterMessages.POD_DOWN);
                }
                return writers.producerPositions();
            }
        }
        return new long[0];
    }

    /**
     * @return each publisher's last dispatched sequence (call once the agent has stopped and the writers have
     * drained their queues: then it is also the last applied one).
     */
    public List<PublisherProgress.Entry> dispatched() {
        return checkpoints.dispatched();
    }

    @Override
    public int doWork() {
        int work = applyChanges();
        if (bound != null) {
            work += bound.poll(frames);
        }
        for (final Publisher p : publishers) {
            if (p == null || p.isBound()) {
                continue;
            }
            // Before its messages: a disconnect must be seen before what the publisher sends after reconnecting.
            p.pollMonitor();
            work += poll(p);
        }
        work += channel.replies.read(sequencer, REPLY_LIMIT);
        final long now = clock.time();
        if (recovery != null) {
            checkpoints.maybeCheckpoint(now);
        }
        if (now >= nextHeartbeatMs) {
            nextHeartbeatMs = now + heartbeatIntervalMs;
            for (final Publisher p : publishers) {
                if (p != null) {
                    prunePods(p);
                    if (p.connected) {
                        heartbeat(p);
                    }
                }
            }
            if (bound != null) {
                bound.prune();
            }
        }
        return work;
    }

    /** Drops the publisher's pods whose handles are stale (they went down): its pod list stays bounded. */
    private void prunePods(final Publisher p) {
        for (int i = p.pods.size() - 1; i >= 0; i--) {
            if (!directory.isCurrent(p.pods.getInt(i))) {
                p.pods.fastUnorderedRemove(i);
            }
        }
    }

    /**
     * A connected publisher vouches for the pods it names now: its configured pod, its last topic's pod and the pod
     * (rank pod) its last batch went to. Pods it named before and names no longer (a renamed engine, a publisher of
     * many pods) go down after the pod timeout unless they send.
     */
    private void heartbeat(final Publisher p) {
        final int fixed = p.fixedPod;
        final int topic = p.lastTopicPod;
        final int fed = p.lastFedPod;
        if (fixed >= 0) {
            writers.offer(fixed, WriterMessages.HEARTBEAT);
        }
        if (topic >= 0 && topic != fixed && directory.isCurrent(topic)) {
            writers.offer(topic, WriterMessages.HEARTBEAT);
        }
        if (fed >= 0 && fed != fixed && fed != topic && directory.isCurrent(fed)) {
            writers.offer(fed, WriterMessages.HEARTBEAT);
        }
    }

    private int poll(final Publisher p) {
        int work = 0;
        while (work < READ_LIMIT) {
            final int n = Multipart.receive(p.sub, frames);
            if (n == 0) {
                break;
            }
            work++;
            if (n != 3) {
                sequencer.framingError(p, "message with " + n + " frames, expected 3 [topic, seq, payload]");
                continue;
            }
            if (frames[1].length != 8) {
                sequencer.framingError(p, "sequence frame of " + frames[1].length + " bytes, expected 8");
                continue;
            }
            sequencer.onLive(p, frames[0], ByteBuffer.wrap(frames[1]).getLong(), frames[2]);
        }
        return work;
    }

    /**
     * The idle wait of {@link SocketWaitBackoff}: waits until one of this agent's SUB sockets can be read, or for the
     * timeout. A failed poll is reported to the error log and the caller parks instead.
     *
     * @param timeoutMs longest wait, milliseconds (at least 1).
     * @return false when there was no socket to wait on, or the poll failed.
     */
    boolean awaitInput(final long timeoutMs) {
        try {
            return socketWait.await(context, bound, publishers, timeoutMs);
        } catch (final ZMQException ex) {
            errors.report(CounterType.AGENT_ERRORS.typeId(), -1,
                () -> "ZeroMQ idle wait failed (parking instead): " + ex);
            return false;
        }
    }

    @Override
    public void onClose() {
        socketWait.close();
        if (bound != null) {
            bound.close();
        }
        for (final Publisher p : publishers) {
            if (p != null) {
                p.close();
            }
        }
        if (context != null) {
            context.close();
        }
        Change c;
        while ((c = changes.poll()) != null) {
            c.fail(new IllegalStateException("the ZeroMQ transport closed before the change was applied"));
        }
    }

    @Override
    public String roleName() {
        return part < 0 ? "kvidx-zmq-ingest" : "kvidx-zmq-ingest-" + part;
    }

    /**
     * Names this agent as one of several ({@code --zmq-ingest-threads}): its thread is {@code kvidx-zmq-ingest-<part>}.
     * Call before the agent starts.
     *
     * @param part its index, 0 or more.
     * @return this.
     */
    public ZmqIngestAgent part(final int part) {
        this.part = part;
        return this;
    }

    /**
     * The agent that subscribes to an endpoint when {@code agents} share the subscriptions: fixed by the endpoint
     * alone, so that its removal and the daemon's next start find the same agent, and its recorded progress the same
     * share ({@link PublisherProgress#shares}).
     *
     * @param endpoint the subscription's endpoint.
     * @param agents   how many agents.
     * @return 0..agents-1.
     */
    public static int partOf(final String endpoint, final int agents) {
        return Math.floorMod(endpoint.hashCode(), agents);
    }

}
