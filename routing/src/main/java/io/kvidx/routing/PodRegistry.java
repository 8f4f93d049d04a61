package io.kvidx.routing;

import java.net.URI;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What the router knows about its pods beyond the index: which slots it routes to, each pod's role, model,
 * endpoint, loaded LoRA adapters, concurrency cap, and live load (queued and running requests, tokens in flight,
 * KV-cache utilisation, Dynamo-style prefill tokens and active decode blocks). Slots are the index's pod slots
 * (0..255), so index answers and registry facts line up without a lookup.
 *
 * <p>Load figures are plain atomics: the router's request threads update them (e.g. {@link #requestStarted} /
 * {@link #requestFinished}, or {@link #load} from polled metrics) while deciders read them without locks, with
 * opaque reads (always a fresh value, no ordering: a decision may mix figures from before and after an update).
 *
 * <p>Pod identity: a slot of the index is given to another pod when its pod went down and its bits were swept,
 * and the pod table's generation of the slot then changes. The registry remembers the generation it learnt for
 * each slot and the index's pod table version it last learnt ({@link #podTableVersion()}); a {@link Selector}
 * compares that version with the index's on every decision and calls {@link #syncWithIndex} when they differ,
 * before it picks, so no request goes to a slot under the name of the pod that held it before. A deciding thread
 * never waits for another one's sync: it only tries the registry's lock ({@link #trySyncWithIndex}) and falls back
 * for that decision when another thread holds it.
 *
 * <p><b>Note:</b> thread safe. {@link #register}, {@link #unregister}, {@link #registerFromIndex} and
 * {@link #syncWithIndex} are cold (they may allocate) and take the registry's lock; every getter and load setter is
 * allocation-free and lock-free.
 */
public final class PodRegistry {
    /** Pod slots in a cell. */
    public static final int MAX_PODS = 256;
    /** Distinct LoRA adapter names the registry can track. */
    public static final int MAX_LORAS = 256;
    /** Generation of a slot whose pod the registry has not matched with the index's pod table yet. */
    public static final int UNKNOWN_GENERATION = 0;

    // The pods' identity, slot membership and the pod table sync, load figures and LoRA adapters each live in their
    // own part, which this facade delegates to; it holds the lock.
    private final PodIdentities pods = new PodIdentities();
    private final PodTableSync table = new PodTableSync();
    private final PodLoad load = new PodLoad();
    private final LoraAdapters loras = new LoraAdapters();
    /** Held while the pods' identity or the slot membership change (by {@link PodTableSync} too). */
    private final ReentrantLock lock = new ReentrantLock();

    /**
     * Adds a pod by hand (or replaces what is known about its slot), its generation in the index not known yet: the
     * first {@link #syncWithIndex} keeps it when the index's pod in that slot has the same id (learning its
     * generation) and excludes it while the index holds another pod there.
     *
     * @param slot     the pod's slot in the index.
     * @param podId    pod id (as the index knows it).
     * @param model    model it serves, or null for any.
     * @param role     its role.
     * @param endpoint base URI the executor sends requests to, or null when the router executes by itself.
     * @return this.
     */
    public PodRegistry register(final int slot, final String podId, final String model, final PodRole role,
        final URI endpoint) {
        return register(slot, podId, model, role, endpoint, UNKNOWN_GENERATION);
    }

    /**
     * Adds a pod by hand with the generation its slot has in the index's pod table (see
     * {@link io.kvidx.client.index.IndexReader#pod(int)}), or replaces what is known about its slot. When the slot
     * is later freed, the pod is excluded until the index gives the slot to a pod of the same id again.
     *
     * @param slot       the pod's slot in the index.
     * @param podId      pod id (as the index knows it).
     * @param model      model it serves, or null for any.
     * @param role       its role.
     * @param endpoint   base URI the executor sends requests to, or null when the router executes by itself.
     * @param generation the slot's generation in the pod table, or {@link #UNKNOWN_GENERATION}.
     * @return this.
     */
    public PodRegistry register(final int slot, final String podId, final String model,
        final PodRole role, final URI endpoint, final int generation) {
        checkSlot(slot);
        lock.lock();
        try {
            learn(slot, Objects.requireNonNull(podId, "podId"), model, Objects.requireNonNull(role, "role"),
                endpoint, generation);
            table.registeredByHand(slot);
        } finally {
            lock.unlock();
        }
        return this;
    }

    /**
     * (Re-)learns a slot: its pod's identity, no adapters, load figures and caps zeroed, then claimed with the
     * generation and routable. Called under the registry's lock (here and by {@link PodTableSync}).
     */
    void learn(final int slot, final String podId, final String model, final PodRole role,
        final URI endpoint, final int generation) {
        pods.learn(slot, podId, model, role, endpoint);
        loras.unloadAll(slot);
        load.reset(slot);
        loras.maxLoras(slot, 0);
        table.claim(slot, generation);
    }

    /**
     * Stops routing to a pod, and forgets it: {@link #syncWithIndex} will not bring it back.
     *
     * @param slot pod slot.
     * @return this.
     */
    public PodRegistry unregister(final int slot) {
        checkSlot(slot);
        lock.lock();
        try {
            table.release(slot);
        } finally {
            lock.unlock();
        }
        return this;
    }

    /**
     * Registers every pod the index's pod table holds that the registry does not know yet, with role
     * {@link PodRole#BOTH}, no endpoint and the slot's generation. Slots registered this way follow the index: when
     * the index gives one to another pod, {@link #syncWithIndex} re-learns it. Cold path.
     *
     * @param index the index.
     * @return number of pods added.
     */
    public int registerFromIndex(final PodIndex index) {
        lock.lock();
        try {
            return table.registerFromIndex(index, this);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Brings the registry in step with the index's pod table when its version moved since the registry last
     * learnt it. For each slot the router registered:
     * <ul>
     *   <li>the index holds the pod the registry knows (same id and generation): unchanged;</li>
     *   <li>a slot taken from the index ({@link #registerFromIndex}) that the index gave to another pod, or to the
     *   same pod again (new generation): re-learnt, pod id and model replaced and load figures reset;</li>
     *   <li>a slot registered by hand: kept (its generation learnt) while the index's pod there has the registered
     *   id, excluded while it holds a pod of another id;</li>
     *   <li>a slot now free whose generation the registry had learnt: excluded until the index gives it to a pod
     *   again (a hand-registered slot the index has never shown stays: the router may know a pod first).</li>
     * </ul>
     * Excluded slots stay known: they are routable again when the index shows their pod again. Cold path: reads
     * the pod table (allocates); the {@link Selector} calls it when a decision saw another pod table version.
     *
     * @param index the index.
     * @return true when the registry is in step with the index's current pod table version; false when the index
     * is unavailable, or the table kept changing or stayed locked while being read (a later call tries again).
     */
    public boolean syncWithIndex(final PodIndex index) {
        lock.lock();
        try {
            return table.syncWithIndex(index, this);
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@link #syncWithIndex} unless another thread holds the registry's lock (a sync, a registration): never waits.
     * What a deciding thread calls; when it gets {@code false} it decides without the index (falls back) rather than
     * queue behind the pod table re-read.
     *
     * @param index the index.
     * @return false when the lock was busy and nothing was done; true once a sync ran (in step or not: the caller
     * compares the pod table versions again).
     */
    boolean trySyncWithIndex(final PodIndex index) {
        if (!lock.tryLock()) {
            return false;
        }
        try {
            table.syncWithIndex(index, this);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * @param slot pod slot.
     * @return true when the index's pod table flagged the slot's pod suspect as the registry last learnt it
     * ({@link #syncWithIndex}, which runs whenever the flag changes: a change bumps the pod table version). A
     * suspect pod's state may be incomplete (an event gap its engine could not replay); a scorer may weigh its
     * depths less. Allocation-free.
     */
    public boolean isSuspect(final int slot) {
        return table.isSuspect(slot);
    }

    /**
     * @param word 0..3.
     * @return that word of the suspect-pod bitmap (bit p = slot p is suspect).
     */
    public long suspectWord(final int word) {
        return table.suspectWord(word);
    }

    /**
     * @return the index's pod table version the registry last learnt ({@link #syncWithIndex}); 0 before any, and
     * {@link PodIndex#NO_POD_TABLE_VERSION} after a registration not checked against the index yet.
     */
    public long podTableVersion() {
        return table.podTableVersion();
    }

    /**
     * @param slot pod slot.
     * @return the slot's generation in the index's pod table as the registry learnt it, or
     * {@link #UNKNOWN_GENERATION}.
     */
    public int generation(final int slot) {
        return table.generation(slot);
    }

    /**
     * @param word 0..3.
     * @return that word of the registered-pod bitmap.
     */
    public long registeredWord(final int word) {
        return table.registeredWord(word);
    }

    /**
     * @param slot pod slot.
     * @return true when the slot is registered and routable (not excluded by {@link #syncWithIndex}).
     */
    public boolean isRegistered(final int slot) {
        return table.isRegistered(slot);
    }

    /**
     * @return a number that changes whenever a pod is registered, unregistered, re-learnt or excluded.
     */
    public long version() {
        return table.version();
    }

    /**
     * @param slot pod slot.
     * @return pod id, or null.
     */
    public String podId(final int slot) {
        return pods.podId(slot);
    }

    /**
     * @param slot pod slot.
     * @return {@link RoutingContext#hash} of its pod's id (the same in every process for the same id), or
     * meaningless when the slot holds no pod.
     */
    public long podIdHash(final int slot) {
        return pods.idHash(slot);
    }

    /**
     * @param podId pod id.
     * @return its slot, or -1 when no registered pod has that id. Linear scan: cold path.
     */
    public int slotOf(final String podId) {
        lock.lock();
        try {
            return pods.slotOf(podId, table);
        } finally {
            lock.unlock();
        }
    }

    /**
     * @param slot pod slot.
     * @return model name, or null for any.
     */
    public String model(final int slot) {
        return pods.model(slot);
    }

    /**
     * @param slot pod slot.
     * @return endpoint, or null.
     */
    public URI endpoint(final int slot) {
        return pods.endpoint(slot);
    }

    /**
     * @param slot pod slot.
     * @return its role.
     */
    public PodRole role(final int slot) {
        return pods.role(slot);
    }

    /**
     * Sets the pod's load as reported by its metrics.
     *
     * @param slot    pod slot.
     * @param queued  requests waiting.
     * @param running requests running.
     * @param tokens  tokens in flight.
     * @return this.
     */
    public PodRegistry load(final int slot, final int queued, final int running, final long tokens) {
        load.load(slot, queued, running, tokens);
        return this;
    }

    /**
     * Counts a request the router sent to a pod.
     *
     * @param slot         pod slot.
     * @param promptTokens its prompt length.
     */
    public void requestStarted(final int slot, final int promptTokens) {
        load.requestStarted(slot, promptTokens);
    }

    /**
     * Counts a request that finished on a pod.
     *
     * @param slot         pod slot.
     * @param promptTokens the prompt length passed to {@link #requestStarted}.
     */
    public void requestFinished(final int slot, final int promptTokens) {
        load.requestFinished(slot, promptTokens);
    }

    /**
     * @param slot pod slot.
     * @return requests waiting.
     */
    public int queued(final int slot) {
        return load.queued(slot);
    }

    /**
     * @param slot pod slot.
     * @return requests running.
     */
    public int running(final int slot) {
        return load.running(slot);
    }

    /**
     * @param slot pod slot.
     * @return requests waiting plus running (one read; kept in step with both).
     */
    public int requests(final int slot) {
        return load.requests(slot);
    }

    /**
     * @param slot pod slot.
     * @return tokens in flight.
     */
    public long tokens(final int slot) {
        return load.tokens(slot);
    }

    /**
     * @param slot        pod slot.
     * @param utilization KV-cache utilisation in [0, 1].
     * @return this.
     */
    public PodRegistry kvUtilization(final int slot, final double utilization) {
        load.kvUtilization(slot, utilization);
        return this;
    }

    /**
     * @param slot pod slot.
     * @return KV-cache utilisation in [0, 1].
     */
    public double kvUtilization(final int slot) {
        return load.kvUtilization(slot);
    }

    /**
     * Dynamo-style load: prompt tokens waiting for prefill and KV blocks held by active decodes.
     *
     * @param slot          pod slot.
     * @param prefillTokens tokens queued for prefill.
     * @param decodeBlocks  blocks of active sequences.
     * @return this.
     */
    public PodRegistry activeBlocks(final int slot, final long prefillTokens, final long decodeBlocks) {
        load.activeBlocks(slot, prefillTokens, decodeBlocks);
        return this;
    }

    /**
     * @param slot pod slot.
     * @return tokens queued for prefill.
     */
    public long prefillTokens(final int slot) {
        return load.prefillTokens(slot);
    }

    /**
     * @param slot pod slot.
     * @return active decode blocks.
     */
    public long decodeBlocks(final int slot) {
        return load.decodeBlocks(slot);
    }

    /**
     * @param slot pod slot.
     * @param cap  most requests the pod may run at once; 0 for no cap.
     * @return this.
     */
    public PodRegistry maxConcurrency(final int slot, final int cap) {
        load.maxConcurrency(slot, cap);
        return this;
    }

    /**
     * @param slot pod slot.
     * @return concurrency cap, 0 for none.
     */
    public int maxConcurrency(final int slot) {
        return load.maxConcurrency(slot);
    }

    /**
     * @param slot pod slot.
     * @param max  most adapters the pod can hold at once (0: it cannot load more).
     * @return this.
     */
    public PodRegistry maxLoras(final int slot, final int max) {
        loras.maxLoras(slot, max);
        return this;
    }

    /**
     * @param slot pod slot.
     * @return most adapters the pod can hold.
     */
    public int maxLoras(final int slot) {
        return loras.maxLoras(slot);
    }

    /**
     * Records that a pod has an adapter loaded.
     *
     * @param slot pod slot.
     * @param lora adapter name.
     * @return this.
     */
    public PodRegistry loraLoaded(final int slot, final String lora) {
        loras.loraLoaded(slot, lora);
        return this;
    }

    /**
     * Records that a pod unloaded an adapter.
     *
     * @param slot pod slot.
     * @param lora adapter name.
     * @return this.
     */
    public PodRegistry loraUnloaded(final int slot, final String lora) {
        loras.loraUnloaded(slot, lora);
        return this;
    }

    /**
     * @param lora adapter name.
     * @return its id, or -1 when no pod ever loaded it. Allocation-free.
     */
    public int loraId(final String lora) {
        return loras.loraId(lora);
    }

    /**
     * @param slot   pod slot.
     * @param loraId adapter id from {@link #loraId}.
     * @return true when the pod has the adapter loaded.
     */
    public boolean hasLora(final int slot, final int loraId) {
        return loras.hasLora(slot, loraId);
    }

    /**
     * @param slot pod slot.
     * @return adapters the pod has loaded.
     */
    public int loraCount(final int slot) {
        return loras.loraCount(slot);
    }

    private static void checkSlot(final int slot) {
        if (slot < 0 || slot >= MAX_PODS) {
            throw new IllegalArgumentException("pod slot must be in [0, " + MAX_PODS + "): " + slot);
        }
    }
}
