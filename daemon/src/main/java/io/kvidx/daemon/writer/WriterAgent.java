package io.kvidx.daemon.writer;

import io.kvidx.client.index.PodCapacityExceededException;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.event.EventDecodeException;
import io.kvidx.daemon.event.EventDecoder;
import io.kvidx.daemon.event.EventDecoders;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.ShardRepairException;
import io.kvidx.daemon.ops.PodStatsFile;
import io.kvidx.daemon.state.PodBlockMaps;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentTerminationException;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.status.AtomicCounter;

import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Applies the events of the pods assigned to it, in arrival order per pod, to the index: decodes each queued message
 * with the decoder of its format ({@link EventDecoders}) into the {@link VllmApplier}. The only thread that
 * calls the {@link IndexWriter} for these pods (the index writer's rule: one thread per pod). Also takes a pod
 * down when nothing (event or heartbeat) was heard from it for the pod timeout.
 *
 * <p>Pod identities ({@link PodDirectory}): messages carry the pod's handle; state is kept per pod number. A
 * message whose handle is no longer current was queued for a pod whose number has been freed since: it is counted
 * ({@link CounterType#STALE_POD_MESSAGES}) and dropped. A current handle that differs from the state's means the
 * number changed hands: the old state goes, a fresh one is made. Once a pod is down (timeout or PodDown), or stayed
 * silent unregistered for the pod timeout, the agent {@link PodDirectory#release releases} its number and forgets
 * its state, unless the pod is pinned (it then keeps its number while down). So the per-number arrays are bounded
 * by the pods live at once.
 *
 * <p><b>Note:</b> run by one {@link org.agrona.concurrent.AgentRunner}; transports only write to its queue.
 */
public final class WriterAgent implements Agent, MessageHandler {
    private static final int READ_LIMIT = 256;
    private static final long TIMEOUT_CHECK_INTERVAL_MS = 100;

    private final int id;
    private final ManyToOneRingBuffer queue;
    private final IndexWriter index;
    private final PodBlockMaps blockMaps;
    private final PodDirectory directory;
    private final IngestCounters counters;
    private final IngestErrors errors;
    private final EpochClock clock;
    private final long podTimeoutMs;
    private final EventDecoder vllmDecoder;
    private final EventDecoder sglangDecoder;
    private final EventDecoder sbeDecoder;
    private final VllmApplier vllm;
    private final AtomicCounter decodeErrors;
    private final AtomicCounter podsAlive;
    private final AtomicCounter podsTimedOut;
    private final AtomicCounter podsRejected;
    private final AtomicCounter suspectPods;
    /** Work other threads hand this writer (a daemon snapshot), stepped between queue reads. */
    private final RegisteredPods tasks = new RegisteredPods();
    private final AtomicCounter staleMessages;
    private PodState[] pods = new PodState[16];
    private int[] owned = new int[16];
    private int ownedCount;
    private long now;
    private long nextTimeoutCheckMs;
    private long nextRateTickMs;
    private PodStatsFile stats;
    private ApplyObserver observer = ApplyObserver.NONE;
    private final DutyCycleCounter dutyCycles = new DutyCycleCounter();

    WriterAgent(final int id, final ManyToOneRingBuffer queue, final IndexWriter index, final PodBlockMaps blockMaps,
        final PodDirectory directory, final IngestCounters counters, final IngestErrors errors, final EpochClock clock,
        final long podTimeoutMs, final EventDecoders decoders) {
        this.id = id;
        this.blockMaps = blockMaps;
        this.queue = queue;
        this.index = index;
        this.directory = directory;
        this.counters = counters;
        this.errors = errors;
        this.clock = clock;
        this.podTimeoutMs = podTimeoutMs;
        this.vllm = new VllmApplier(index, counters, errors);
        this.vllmDecoder = decoders.vllm().get();
        this.sglangDecoder = decoders.sglang().get();
        this.sbeDecoder = decoders.sbe().get();
        this.decodeErrors = counters.get(CounterType.DECODE_ERRORS);
        this.podsAlive = counters.get(CounterType.PODS_ALIVE);
        this.podsTimedOut = counters.get(CounterType.PODS_TIMED_OUT);
        this.podsRejected = counters.get(CounterType.PODS_REJECTED);
        this.suspectPods = counters.get(CounterType.SUSPECT_PODS);
        this.staleMessages = counters.get(CounterType.STALE_POD_MESSAGES);
    }

    /**
     * One duty cycle: bumps {@link #dutyCycles()} first (the index heartbeat follows it), then applies queued
     * messages and tasks and checks rates and timeouts.
     *
     * @throws AgentTerminationException when a shard was left locked ({@link ShardRepairException}): the runner
     *                                   stops this agent, so its duty cycle and the index heartbeat stop.
     */
    @Override
    public int doWork() {
        dutyCycles.increment();
        now = clock.time();
        try {
            int work = queue.read(this, READ_LIMIT);
            work += tasks.step(pods, owned, ownedCount, queue.consumerPosition());
            if (stats != null && now >= nextRateTickMs) {
                work += tickRates();
            }
            if (podTimeoutMs > 0 && now >= nextTimeoutCheckMs) {
                nextTimeoutCheckMs = now + TIMEOUT_CHECK_INTERVAL_MS;
                work += checkTimeouts();
            }
            return work;
        } catch (final ShardRepairException ex) {
            throw new AgentTerminationException(roleName() + " stopped: " + ex.getMessage(), ex);
        }
    }

    /**
     * @return the duty cycles this agent has begun, bumped by its thread at the start of each, busy or idle.
     */
    public DutyCycleCounter dutyCycles() {
        return dutyCycles;
    }

    @Override
    public void onMessage(final int msgTypeId, final org.agrona.MutableDirectBuffer buffer, final int index,
        final int length) {
        final PodState pod = pod(buffer.getInt(index + WriterMessages.POD_OFFSET, ByteOrder.LITTLE_ENDIAN), msgTypeId);
        if (pod == null) {
            return;
        }
        final int payload = index + WriterMessages.HEADER_LENGTH;
        final int payloadLength = length - WriterMessages.HEADER_LENGTH;
        // SBE events were checked by the transport (SbeEventFrame) before they were queued.
        switch (msgTypeId) {
            case WriterMessages.VLLM_BATCH, WriterMessages.SGLANG_BATCH, WriterMessages.VLLM_BATCH_REPLAYED,
                WriterMessages.SGLANG_BATCH_REPLAYED -> applyBatch(pod, msgTypeId, buffer, index, payloadLength);
            case WriterMessages.SBE_EVENT -> {
                if (ensureRegistered(pod)) {
                    pod.lastHeardMs = now;
                    final long start = System.nanoTime();
                    vllm.pod(pod);
                    sbeDecoder.decode(buffer, payload, payloadLength, vllm);
                    // The kvidx SBE schema carries no timestamp: no event-to-visible time.
                    observeStages(buffer, index, start, System.nanoTime() - start, -1);
                    applied(pod, 1);
                }
            }
            case WriterMessages.REGISTER -> {
                if (ensureRegistered(pod)) {
                    pod.lastHeardMs = now;
                }
            }
            case WriterMessages.HEARTBEAT -> pod.lastHeardMs = now;
            case WriterMessages.CLEAR_POD -> {
                if (pod.registered()) {
                    this.index.clearPod(pod.slot);
                    counters.get(CounterType.POD_CLEARS).increment();
                }
                pod.forgetBlocks();
                // The transport clears a pod to resync it from a known point: what follows is complete again.
                endSuspicion(pod);
            }
            case WriterMessages.POD_DOWN -> {
                podDown(pod);
                if (directory.release(pod.handle)) {
                    discard(pod);
                }
            }
            case WriterMessages.MARK_SUSPECT -> {
                if (!pod.suspect) {
                    pod.suspect = true;
                    suspectPods.increment();
                }
                if (pod.registered()) {
                    this.index.markSuspect(pod.slot, true);
                }
            }
            default -> decodeErrors.increment();
        }
    }

    /**
     * Decodes and applies one msgpack batch, live or replayed (one path for both), and observes its apply time; its
     * event-to-visible time only when it is live ({@link WriterMessages#VLLM_BATCH_REPLAYED}).
     */
    private void applyBatch(final PodState pod, final int type, final DirectBuffer buffer, final int message,
        final int length) {
        if (!ensureRegistered(pod)) {
            return;
        }
        final int offset = message + WriterMessages.HEADER_LENGTH;
        pod.lastHeardMs = now;
        vllm.pod(pod);
        final long start = System.nanoTime();
        final boolean sglang = type == WriterMessages.SGLANG_BATCH || type == WriterMessages.SGLANG_BATCH_REPLAYED;
        final int events = sglang ? decode(pod, sglangDecoder, "SGLang", buffer, offset, length)
            : decode(pod, vllmDecoder, "vLLM", buffer, offset, length);
        final long applyNanos = System.nanoTime() - start;
        final boolean live = type == WriterMessages.VLLM_BATCH || type == WriterMessages.SGLANG_BATCH;
        final double ts = vllm.batchTimestamp();
        observeStages(buffer, message, start, applyNanos,
            live && ts > 0 ? Math.max(0, clock.time() - (long) (ts * 1000)) : -1);
        applied(pod, events);
    }

    /** Tells the observer a batch's stages: its message's header times, then the writer's own. */
    private void observeStages(final DirectBuffer buffer, final int message, final long dequeuedNanos,
        final long applyNanos, final long eventToVisibleMs) {
        final long received = buffer.getLong(message + WriterMessages.RECEIVED_NANOS_OFFSET, ByteOrder.LITTLE_ENDIAN);
        final long queued = buffer.getLong(message + WriterMessages.QUEUED_NANOS_OFFSET, ByteOrder.LITTLE_ENDIAN);
        observer.batchApplied(Math.max(0, queued - received), Math.max(0, dequeuedNanos - queued), applyNanos,
            eventToVisibleMs);
    }

    private void endSuspicion(final PodState pod) {
        if (pod.suspect) {
            pod.suspect = false;
            suspectPods.decrement();
        }
        if (pod.registered()) {
            index.markSuspect(pod.slot, false);
        }
    }

    /** @return events decoded (0 when the batch was malformed). */
    private int decode(final PodState pod, final EventDecoder decoder, final String engine, final DirectBuffer buffer,
        final int offset, final int length) {
        try {
            return decoder.decode(buffer, offset, length, vllm);
        } catch (final EventDecodeException ex) {
            decodeErrors.increment();
            errors.report(CounterType.DECODE_ERRORS.typeId(), pod.podNumber,
                () -> "pod " + pod.podId + ": malformed " + engine + " batch dropped: " + ex.getMessage());
            return 0;
        }
    }

    /**
     * Publishes per-pod statistics to the cell's pod statistics file and observes apply times (set before start).
     *
     * @param podStats the file, or null for none.
     * @param applied  observer of batch apply times.
     */
    void observe(final PodStatsFile podStats, final ApplyObserver applied) {
        this.stats = podStats;
        this.observer = applied;
    }

    private void applied(final PodState pod, final int events) {
        if (stats != null && pod.registered()) {
            stats.applied(pod.slot, events, pod.blocks == null ? 0 : pod.blocks.size(), now);
        }
    }

    /** Once a second: each registered pod's events per second over the second that ended. */
    private int tickRates() {
        final long elapsed = now - (nextRateTickMs - RATE_TICK_MS);
        nextRateTickMs = now + RATE_TICK_MS;
        int work = 0;
        for (int i = 0; i < ownedCount; i++) {
            final PodState pod = pods[owned[i]];
            if (pod.registered()) {
                final long events = stats.events(pod.slot);
                if (elapsed > 0 && elapsed < 10 * RATE_TICK_MS) {
                    stats.rate(pod.slot, (events - pod.eventsAtRateTick) * 1_000_000 / elapsed);
                }
                pod.eventsAtRateTick = events;
                work++;
            }
        }
        return work;
    }

    private static final long RATE_TICK_MS = 1000;

    /**
     * @return the state of the pod the handle names (made on its first message), or null when the handle is no
     * longer current (counted as stale; a POD_DOWN for the state it names is applied first).
     */
    private PodState pod(final int handle, final int msgTypeId) {
        final int number = PodDirectory.number(handle);
        final PodState pod = number < pods.length ? pods[number] : null;
        if (pod != null && pod.handle == handle && directory.isCurrent(handle)) {
            return pod;
        }
        final String podId = directory.isCurrent(handle) ? directory.podId(handle) : null;
        if (podId == null || !directory.isCurrent(handle)) {
            if (msgTypeId != WriterMessages.POD_DOWN) {
                staleMessages.increment();
            } else if (pod != null && pod.handle == handle) {
                // The transport that saw the pod's PodDown freed the number right after queuing this.
                podDown(pod);
                discard(pod);
            }
            return null;
        }
        final PodState fresh = new PodState(handle, podId, directory.model(handle));
        fresh.lastHeardMs = now;
        if (pod != null) {
            // The number changed hands: the old pod was taken down when its number was freed; its state goes.
            podDown(pod);
            pod.closeBlocks();
            errors.forgetPod(number);
            pods[number] = fresh;
            return fresh;
        }
        if (number >= pods.length) {
            pods = Arrays.copyOf(pods, Math.max(number + 1, pods.length * 2));
        }
        pods[number] = fresh;
        if (ownedCount == owned.length) {
            owned = Arrays.copyOf(owned, owned.length * 2);
        }
        owned[ownedCount++] = number;
        return fresh;
    }

    /** Forgets a pod whose number was freed (it is down). */
    private void discard(final PodState pod) {
        for (int i = 0; i < ownedCount; i++) {
            if (owned[i] == pod.podNumber) {
                discardAt(i);
                return;
            }
        }
    }

    private void discardAt(final int ownedIndex) {
        final int number = owned[ownedIndex];
        pods[number].closeBlocks();
        pods[number] = null;
        owned[ownedIndex] = owned[--ownedCount];
        errors.forgetPod(number);
    }

    private boolean ensureRegistered(final PodState pod) {
        if (pod.model == null) {
            // Learnt late (a pod restored at startup before its transport named the model): keys need it.
            pod.model = directory.model(pod.podNumber);
        }
        if (pod.registered()) {
            return true;
        }
        try {
            final int slot = index.registerPod(pod.podId, pod.model);
            // The pod's map is its slot's: re-used when the slot and generation are those of a previous daemon's
            // (a warm restart), empty when the slot was just given to it.
            pod.closeBlocks();
            pod.blocks = blockMaps.open(slot, pod.podId, index.generation(slot));
            if (pod.blocks.restored()) {
                // The host tier map is re-created at every start: a warm restart refills it from the block map.
                vllm.tiers().refill(slot, pod.blocks);
            }
            pod.slot = slot;
            pod.lastHeardMs = now;
            if (stats != null) {
                stats.reset(slot, index.generation(slot));
                pod.eventsAtRateTick = 0;
            }
            podsAlive.increment();
            if (pod.suspect) {
                index.markSuspect(slot, true);
            } else if (index.isSuspect(slot)) {
                // A warm restart: the previous daemon flagged the pod and never resynced it.
                pod.suspect = true;
                suspectPods.increment();
            }
            return true;
        } catch (final PodCapacityExceededException | IllegalArgumentException ex) {
            // Heard, though not indexed: its number is kept while it sends.
            pod.lastHeardMs = now;
            podsRejected.increment();
            errors.report(CounterType.PODS_REJECTED.typeId(), pod.podNumber,
                () -> "pod " + pod.podId + " cannot be registered: " + ex.getMessage() + "; its events are dropped");
            return false;
        }
    }

    private void podDown(final PodState pod) {
        if (pod.registered()) {
            index.podDown(pod.slot);
            if (pod.suspect) {
                // Its blocks are swept: it comes back empty, nothing stale.
                pod.suspect = false;
                suspectPods.decrement();
            }
            pod.slot = -1;
            pod.forgetBlocks();
            pod.closeBlocks();
            podsAlive.decrement();
        }
    }

    /**
     * Takes down the pods silent for the pod timeout and frees their numbers (a pinned pod keeps its number); forgets
     * the pods whose number was freed elsewhere. Walks backwards: a forgotten pod's place takes the last one's.
     */
    private int checkTimeouts() {
        int work = 0;
        for (int i = ownedCount - 1; i >= 0; i--) {
            final PodState pod = pods[owned[i]];
            if (!directory.isCurrent(pod.handle)) {
                podDown(pod);
                discardAt(i);
                work++;
            } else if (now - pod.lastHeardMs > podTimeoutMs) {
                if (pod.registered()) {
                    podDown(pod);
                    podsTimedOut.increment();
                    work++;
                }
                if (directory.release(pod.handle)) {
                    discardAt(i);
                    work++;
                }
            }
        }
        return work;
    }

    /**
     * Hands the agent a task, stepped on its thread between queue reads ({@link WriterTask}).
     *
     * @param task the task.
     * @return false when the agent's inbox is full ({@link RegisteredPods#TASK_CAPACITY} tasks wait).
     */
    boolean submit(final WriterTask task) {
        return tasks.submit(task);
    }

    @Override
    public void onClose() {
        tasks.abandonAll();
        for (int i = 0; i < ownedCount; i++) {
            pods[owned[i]].closeBlocks();
        }
    }

    /**
     * For tests and monitoring: a plain read of the agent's state, racy from another thread.
     *
     * @return pods this agent keeps state for (bounded by the pods live at once).
     */
    public int podCount() {
        return ownedCount;
    }

    /**
     * For tests and monitoring: a plain read of the agent's state, racy from another thread.
     *
     * @return length of its per-number arrays (grows only to the largest pod number it was sent).
     */
    public int podCapacity() {
        return pods.length;
    }

    /**
     * @return writer number.
     */
    public int id() {
        return id;
    }

    @Override
    public String roleName() {
        return "kvidx-writer-" + id;
    }
}
