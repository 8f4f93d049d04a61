package io.kvidx.daemon.writer;

import io.kvidx.daemon.agent.AgentThreads;
import io.kvidx.daemon.agent.PinnedAgent;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.event.EventDecoders;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.ops.PodStatsFile;
import io.kvidx.daemon.state.PodBlockMaps;
import org.agrona.CloseHelper;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.agrona.concurrent.status.AtomicCounter;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The writer agents and their queues. A pod is assigned to writer {@code number % writers}, its pod number being
 * its handle's ({@link PodDirectory}), for as long as it holds the number (sticky), so its events are applied in
 * the order its transports queued them, by one thread. Several transports may queue events for the same pod: every
 * event is idempotent. Each message carries the pod's handle; the writer drops those whose handle is no longer
 * current.
 *
 * <p>Transports call {@link #offer}; a full queue applies back-pressure: the caller idles until there is room
 * or the pool closes.
 *
 * <p><b>Note:</b> {@link #offer} is thread safe (many-to-one queues); {@link #start()} and {@link #close()} are
 * called by the owner.
 */
public final class WriterPool implements AutoCloseable {
    private final ManyToOneRingBuffer[] queues;
    private final WriterAgent[] agents;
    private final List<AgentRunner> runners = new ArrayList<>();
    /** Each writer's idle strategy when it is one producers wake ({@link #wakeableBackoff}), else null. */
    private final WakeableBackoff[] wakes;
    private final Supplier<IdleStrategy> idle;
    private final ThreadLocal<IdleStrategy> offerIdle;
    private final AtomicCounter oversized;
    private final AtomicCounter received;
    private final AgentThreads threads;
    private final IngestErrors errors;
    private final PodDirectory directory;
    /** Sees every message offered (a JetStream relay's), or null; set before the transports start. */
    private EventTap tap;
    private volatile boolean closed;

    /**
     * @param writers        number of writer agents (threads).
     * @param queueLength    bytes per writer queue (a power of two); the largest message is an eighth of it.
     * @param index          the index.
     * @param directory      pod ids.
     * @param counters       counters.
     * @param errors         error log.
     * @param clock          clock for heartbeats and timeouts.
     * @param podTimeoutMs   silence after which a pod is taken down (0: never).
     * @param idle           idle strategy of each writer thread.
     * @param offerIdle      idle strategy of a producer waiting for room (one per producer thread).
     * @param decoders       the decoders of each event format, a set per writer.
     */
    public WriterPool(final int writers, final int queueLength, final IndexWriter index, final PodDirectory directory,
        final IngestCounters counters, final IngestErrors errors, final EpochClock clock, final long podTimeoutMs,
        final Supplier<IdleStrategy> idle, final Supplier<IdleStrategy> offerIdle, final EventDecoders decoders) {
        this(writers, queueLength, index, PodBlockMaps.beside(index.context().indexFile(),
            PodBlockMaps.MAX_BLOCKS_DEFAULT), directory, counters, errors, clock, podTimeoutMs, idle, offerIdle,
            decoders);
    }

    /**
     * @param writers        number of writer agents (threads).
     * @param queueLength    bytes per writer queue (a power of two); the largest message is an eighth of it.
     * @param index          the index.
     * @param blockMaps      where the pods' engine-hash maps live, and their size.
     * @param directory      pod ids.
     * @param counters       counters.
     * @param errors         error log.
     * @param clock          clock for heartbeats and timeouts.
     * @param podTimeoutMs   silence after which a pod is taken down (0: never).
     * @param idle           idle strategy of each writer thread.
     * @param offerIdle      idle strategy of a producer waiting for room (one per producer thread).
     * @param decoders       the decoders of each event format, a set per writer.
     */
    public WriterPool(final int writers, final int queueLength, final IndexWriter index,
        final PodBlockMaps blockMaps, final PodDirectory directory, final IngestCounters counters,
        final IngestErrors errors, final EpochClock clock, final long podTimeoutMs,
        final Supplier<IdleStrategy> idle, final Supplier<IdleStrategy> offerIdle, final EventDecoders decoders) {
        if (writers < 1) {
            throw new IllegalArgumentException("writers must be >= 1: " + writers);
        }
        this.queues = new ManyToOneRingBuffer[writers];
        this.agents = new WriterAgent[writers];
        this.wakes = new WakeableBackoff[writers];
        this.idle = idle;
        this.offerIdle = ThreadLocal.withInitial(offerIdle);
        this.errors = errors;
        this.directory = directory;
        this.oversized = counters.get(CounterType.OVERSIZED_MESSAGES);
        this.received = counters.get(CounterType.MESSAGES_RECEIVED);
        this.threads = new AgentThreads(errors, counters);
        for (int i = 0; i < writers; i++) {
            queues[i] = new ManyToOneRingBuffer(new UnsafeBuffer(ByteBuffer.allocateDirect(
                queueLength + RingBufferDescriptor.TRAILER_LENGTH)));
            agents[i] = new WriterAgent(i, queues[i], index, blockMaps, directory, counters, errors, clock,
                podTimeoutMs, decoders);
        }
    }

    /**
     * Publishes per-pod statistics and observes batch apply times; call before {@link #start()}.
     *
     * @param podStats the cell's pod statistics file, or null for none.
     * @param applied  observer of batch apply times ({@link ApplyObserver#NONE} for none).
     * @return this.
     */
    public WriterPool observe(final PodStatsFile podStats, final ApplyObserver applied) {
        for (final WriterAgent agent : agents) {
            agent.observe(podStats, applied);
        }
        return this;
    }

    /**
     * Hands every message offered from now on to a tap as well, on the offering transport's thread, before it is
     * queued for its writer (a JetStream relay publishes them, ADR 0024). Call before the transports start.
     *
     * @param eventTap the tap, or null for none.
     * @return this.
     */
    public WriterPool tap(final EventTap eventTap) {
        this.tap = eventTap;
        return this;
    }

    /**
     * Starts one thread per writer agent, each with the pool's idle strategy, unpinned ({@link AgentThreads}).
     *
     * @return this.
     */
    public WriterPool start() {
        return start((writer, agent) -> threads.runner(agent, PinnedAgent.NO_CPU, idle.get()));
    }

    /**
     * Starts one thread per writer agent, each running the runner the factory makes for it (the daemon's pins
     * each writer's thread to its CPU).
     *
     * @param factory makes each writer's runner.
     * @return this.
     */
    public WriterPool start(final RunnerFactory factory) {
        for (int i = 0; i < agents.length; i++) {
            final AgentRunner runner = factory.runner(i, agents[i]);
            runners.add(runner);
            AgentRunner.startOnThread(runner);
        }
        return this;
    }

    /**
     * A backoff idle strategy for a writer's thread that the threads queueing the writer's messages unpark
     * ({@link WakeableBackoff}). Call before {@link #start}, at most once per writer.
     *
     * @param writer  the writer's index.
     * @param backoff {spins, yields, shortest park ns, longest park ns}: the configured backoff's steps.
     * @return its idle strategy.
     */
    public IdleStrategy wakeableBackoff(final int writer, final long[] backoff) {
        final WakeableBackoff w = new WakeableBackoff(queues[writer], backoff);
        wakes[writer] = w;
        return w;
    }

    /**
     * Makes the runner of one writer agent.
     */
    @FunctionalInterface
    public interface RunnerFactory {
        /**
         * @param writer the writer's index.
         * @param agent  its agent.
         * @return a runner of it, not started.
         */
        AgentRunner runner(int writer, Agent agent);
    }

    /**
     * @return each writer agent's duty cycle count ({@link WriterAgent#dutyCycles()}), for the index maintenance
     * agent, which beats the index heartbeat only while they all move.
     */
    public LongSupplier[] dutyCycles() {
        final LongSupplier[] counts = new LongSupplier[agents.length];
        for (int i = 0; i < agents.length; i++) {
            counts[i] = agents[i].dutyCycles()::get;
        }
        return counts;
    }

    /**
     * @return the agents (to run them by hand in tests).
     */
    public WriterAgent[] agents() {
        return agents.clone();
    }

    /**
     * @param pod a pod handle ({@link PodDirectory}).
     * @return the writer the pod is assigned to: by its number, not its generation.
     */
    public int writerOf(final int pod) {
        return PodDirectory.number(pod) % queues.length;
    }

    /**
     * Queues a message for a pod's writer, waiting while the queue is full.
     *
     * @param pod    pod handle ({@link PodDirectory}); the writer drops the message when it is no longer current.
     * @param type   a {@link WriterMessages} type.
     * @param src    payload buffer.
     * @param offset payload offset.
     * @param length payload length (0 for none).
     * @return false when the message is too large for the queue (counted, logged) or the pool is closed.
     */
    public boolean offer(final int pod, final int type, final DirectBuffer src, final int offset,
        final int length) {
        return offer(pod, type, src, offset, length, System.nanoTime());
    }

    /**
     * Queues a message for a pod's writer, waiting while the queue is full.
     *
     * @param pod           pod handle ({@link PodDirectory}); the writer drops the message when it is no longer
     *                      current.
     * @param type          a {@link WriterMessages} type.
     * @param src           payload buffer.
     * @param offset        payload offset.
     * @param length        payload length (0 for none).
     * @param receivedNanos {@code System.nanoTime()} when the transport thread received the message (the start of
     *                      its first stage, {@link ApplyObserver}).
     * @return false when the message is too large for the queue (counted, logged) or the pool is closed.
     */
    public boolean offer(final int pod, final int type, final DirectBuffer src, final int offset,
        final int length, final long receivedNanos) {
        return offer(pod, type, src, offset, length, receivedNanos, -1);
    }

    /**
     * Queues a message for a pod's writer, waiting while the queue is full; the {@link #tap} sees it first (with its
     * sequence).
     *
     * @param pod           pod handle ({@link PodDirectory}).
     * @param type          a {@link WriterMessages} type.
     * @param src           payload buffer.
     * @param offset        payload offset.
     * @param length        payload length (0 for none).
     * @param receivedNanos {@code System.nanoTime()} when the transport thread received the message.
     * @param sequence      the publisher's sequence of an engine batch or event; -1 for none.
     * @return false when the message is too large for the queue (counted, logged) or the pool is closed.
     */
    public boolean offer(final int pod, final int type, final DirectBuffer src, final int offset,
        final int length, final long receivedNanos, final long sequence) {
        final int number = PodDirectory.number(pod);
        final int writer = number % queues.length;
        final RingBuffer queue = queues[writer];
        final int total = WriterMessages.HEADER_LENGTH + length;
        if (total > queue.maxMsgLength()) {
            oversized.increment();
            errors.report(CounterType.OVERSIZED_MESSAGES.typeId(), number, () -> "pod "
                + directory.podId(pod) + ": message of " + length + " bytes exceeds the writer queue's "
                + "largest message (" + queue.maxMsgLength() + " bytes); dropped. Raise the queue length");
            return false;
        }
        if (WriterMessages.carriesEvents(type)) {
            received.increment();
        }
        final EventTap t = tap;
        if (t != null) {
            t.offered(pod, type, src, offset, length, sequence);
        }
        final IdleStrategy idleStrategy = offerIdle.get();
        idleStrategy.reset();
        while (!closed) {
            final int claim = queue.tryClaim(type, total);
            if (claim > 0) {
                final var b = queue.buffer();
                b.putInt(claim + WriterMessages.POD_OFFSET, pod, ByteOrder.LITTLE_ENDIAN);
                b.putLong(claim + WriterMessages.RECEIVED_NANOS_OFFSET, receivedNanos, ByteOrder.LITTLE_ENDIAN);
                if (length > 0) {
                    b.putBytes(claim + WriterMessages.HEADER_LENGTH, src, offset, length);
                }
                b.putLong(claim + WriterMessages.QUEUED_NANOS_OFFSET, System.nanoTime(), ByteOrder.LITTLE_ENDIAN);
                queue.commit(claim);
                final WakeableBackoff wake = wakes[writer];
                if (wake != null) {
                    wake.wake();
                }
                return true;
            }
            idleStrategy.idle();
        }
        return false;
    }

    /**
     * Queues a message without payload.
     *
     * @param pod  pod handle ({@link PodDirectory}).
     * @param type a {@link WriterMessages} type.
     * @return false when the pool is closed.
     */
    public boolean offer(final int pod, final int type) {
        return offer(pod, type, EMPTY, 0, 0);
    }

    private static final UnsafeBuffer EMPTY = new UnsafeBuffer(new byte[0]);

    /**
     * @return true when every queue is empty (everything offered so far has been applied or is being applied).
     */
    public boolean isIdle() {
        for (final ManyToOneRingBuffer q : queues) {
            if (q.size() > 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * @param writer a writer, 0 .. writers - 1.
     * @return bytes queued for that writer and not yet applied: how far it lags behind its transports.
     */
    public int queuedBytes(final int writer) {
        return queues[writer].size();
    }

    /**
     * @return number of writers.
     */
    public int writerCount() {
        return queues.length;
    }

    /**
     * Hands a writer a task that runs on its thread between reads of its queue ({@link WriterTask}).
     *
     * @param writer a writer, 0 .. writers - 1.
     * @param task   the task.
     * @return false when the writer's inbox is full or the pool is closed (the task will not run).
     */
    public boolean submit(final int writer, final WriterTask task) {
        return !closed && agents[writer].submit(task);
    }

    /**
     * @return each queue's producer position: every message offered so far lies before it; with a {@link #tap}
     * taking part in the barrier, its position last.
     */
    public long[] producerPositions() {
        final EventTap t = tap;
        final long[] positions = new long[t == null ? queues.length : queues.length + 1];
        for (int i = 0; i < queues.length; i++) {
            positions[i] = queues[i].producerPosition();
        }
        if (t != null) {
            positions[queues.length] = t.position();
        }
        return positions;
    }

    /**
     * @param positions producer positions taken earlier ({@link #producerPositions()}).
     * @return true when every message before those positions has been applied (its writer finished it).
     */
    public boolean appliedUpTo(final long[] positions) {
        for (int i = 0; i < queues.length; i++) {
            if (queues[i].consumerPosition() < positions[i]) {
                return false;
            }
        }
        final EventTap t = tap;
        return t == null || positions.length <= queues.length || t.passed(positions[queues.length]);
    }

    /**
     * A future that completes once every writer has applied every message before the given positions, without a
     * thread waiting for it: a task on each writer still behind ({@link WriterTask}) completes it from the writer's
     * thread when its queue's consumer position reaches the position.
     *
     * @param positions producer positions taken earlier ({@link #producerPositions()}); a shorter array (none)
     *                  covers the writers it has.
     * @return completed when they are applied; exceptionally when a writer cannot take the task (its inbox full, the
     * pool closed) or closes first.
     */
    public CompletableFuture<Void> applied(final long[] positions) {
        final List<CompletableFuture<Void>> parts = new ArrayList<>();
        for (int w = 0; w < positions.length && w < queues.length; w++) {
            final long position = positions[w];
            if (queues[w].consumerPosition() >= position) {
                continue;
            }
            final CompletableFuture<Void> part = new CompletableFuture<>();
            parts.add(part);
            if (!submit(w, new WriterTask() {
                @Override
                public boolean step(final Pods pods) {
                    if (pods.consumerPosition() < position) {
                        return false;
                    }
                    part.complete(null);
                    return true;
                }

                @Override
                public void abandon(final Throwable cause) {
                    part.completeExceptionally(cause);
                }
            })) {
                part.completeExceptionally(new IllegalStateException("writer " + w + " takes no task now (its inbox "
                    + "is full or the pool is closed)"));
            }
        }
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]));
    }

    @Override
    public void close() {
        closed = true;
        CloseHelper.closeAll(runners);
    }
}
