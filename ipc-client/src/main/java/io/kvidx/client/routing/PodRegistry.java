package io.kvidx.client.routing;

import io.kvidx.client.index.IndexException;

import java.net.URI;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

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
 * before it picks, so no request goes to a slot under the name of the pod that held it before.
 *
 * <p><b>Note:</b> thread safe. {@link #register}, {@link #unregister}, {@link #registerFromIndex} and
 * {@link #syncWithIndex} are cold (they may allocate); every getter and load setter is allocation-free.
 */
public final class PodRegistry {
    /** Pod slots in a cell. */
    public static final int MAX_PODS = 256;
    /** Distinct LoRA adapter names the registry can track. */
    public static final int MAX_LORAS = 256;
    /** Generation of a slot whose pod the registry has not matched with the index's pod table yet. */
    public static final int UNKNOWN_GENERATION = 0;
    /** Times {@link #syncWithIndex} reads the pod table again when it changed while being read. */
    private static final int SYNC_ATTEMPTS = 3;

    private final AtomicLongArray registered = new AtomicLongArray(4);
    private final AtomicIntegerArray role = new AtomicIntegerArray(MAX_PODS);
    private final AtomicIntegerArray queued = new AtomicIntegerArray(MAX_PODS);
    private final AtomicIntegerArray running = new AtomicIntegerArray(MAX_PODS);
    private final AtomicIntegerArray requests = new AtomicIntegerArray(MAX_PODS);
    private final AtomicIntegerArray maxConcurrency = new AtomicIntegerArray(MAX_PODS);
    private final AtomicIntegerArray maxLoras = new AtomicIntegerArray(MAX_PODS);
    private final AtomicLongArray tokens = new AtomicLongArray(MAX_PODS);
    private final AtomicLongArray kvUtilizationBits = new AtomicLongArray(MAX_PODS);
    private final AtomicLongArray prefillTokens = new AtomicLongArray(MAX_PODS);
    private final AtomicLongArray decodeBlocks = new AtomicLongArray(MAX_PODS);
    private final AtomicLongArray loraWords = new AtomicLongArray(MAX_PODS * 4);
    private final AtomicReferenceArray<String> podIds = new AtomicReferenceArray<>(MAX_PODS);
    private final AtomicReferenceArray<String> models = new AtomicReferenceArray<>(MAX_PODS);
    private final AtomicReferenceArray<URI> endpoints = new AtomicReferenceArray<>(MAX_PODS);
    private final ConcurrentHashMap<String, Integer> loraIds = new ConcurrentHashMap<>();
    private final AtomicLong version = new AtomicLong();
    private final AtomicIntegerArray generations = new AtomicIntegerArray(MAX_PODS);
    /** The index's suspect flags of the slots as last learnt (layout 3.2), one bit per slot. */
    private final AtomicLongArray suspect = new AtomicLongArray(4);
    /** Slots the router registered, routable or not (excluded while the index holds another pod); guarded by this. */
    private final long[] claimed = new long[4];
    /** Claimed slots taken from the index: they follow whichever pod the index gives the slot to; guarded by this. */
    private final long[] fromIndex = new long[4];
    private volatile long podTableVersion;

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
    public synchronized PodRegistry register(final int slot, final String podId, final String model,
        final PodRole role, final URI endpoint, final int generation) {
        checkSlot(slot);
        learn(slot, Objects.requireNonNull(podId, "podId"), model, Objects.requireNonNull(role, "role"), endpoint,
            generation);
        setBit(fromIndex, slot, false);
        version.incrementAndGet();
        // Not checked against the index yet: the next decision's selector finds another version and syncs.
        podTableVersion = PodIndex.NO_POD_TABLE_VERSION;
        return this;
    }

    private void learn(final int slot, final String podId, final String model, final PodRole role,
        final URI endpoint, final int generation) {
        podIds.set(slot, podId);
        models.set(slot, model);
        endpoints.set(slot, endpoint);
        this.role.set(slot, role.ordinal());
        for (int w = 0; w < 4; w++) {
            loraWords.set(slot * 4 + w, 0);
        }
        queued.set(slot, 0);
        running.set(slot, 0);
        requests.set(slot, 0);
        tokens.set(slot, 0);
        prefillTokens.set(slot, 0);
        decodeBlocks.set(slot, 0);
        kvUtilizationBits.set(slot, 0);
        maxConcurrency.set(slot, 0);
        maxLoras.set(slot, 0);
        generations.set(slot, generation);
        setBit(claimed, slot, true);
        setRoutable(slot, true);
    }

    /**
     * Stops routing to a pod, and forgets it: {@link #syncWithIndex} will not bring it back.
     *
     * @param slot pod slot.
     * @return this.
     */
    public synchronized PodRegistry unregister(final int slot) {
        checkSlot(slot);
        setRoutable(slot, false);
        setBit(claimed, slot, false);
        setBit(fromIndex, slot, false);
        generations.set(slot, UNKNOWN_GENERATION);
        setSuspect(slot, false);
        version.incrementAndGet();
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
    public synchronized int registerFromIndex(final PodIndex index) {
        int added = 0;
        for (int slot = 0; slot < MAX_PODS; slot++) {
            if (!bit(claimed, slot)) {
                final PodIndex.PodDescription d = index.describe(slot);
                if (d != null) {
                    learn(slot, d.podId(), modelOf(d), PodRole.BOTH, null, d.generation());
                    setSuspect(slot, d.suspect());
                    setBit(fromIndex, slot, true);
                    added++;
                }
            }
        }
        if (added > 0) {
            version.incrementAndGet();
            // Read entry by entry, not at one version: the next decision's selector syncs once.
            podTableVersion = PodIndex.NO_POD_TABLE_VERSION;
        }
        return added;
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
    public synchronized boolean syncWithIndex(final PodIndex index) {
        for (int attempt = 0; attempt < SYNC_ATTEMPTS; attempt++) {
            final long v = index.podTableVersion();
            if (v == PodIndex.NO_POD_TABLE_VERSION) {
                return false;
            }
            if (v == podTableVersion) {
                return true;
            }
            final PodIndex.PodDescription[] seen = new PodIndex.PodDescription[MAX_PODS];
            try {
                for (int slot = 0; slot < MAX_PODS; slot++) {
                    if (bit(claimed, slot)) {
                        seen[slot] = index.describe(slot);
                    }
                }
            } catch (final IndexException ex) {
                return false;
            }
            if (index.podTableVersion() != v) {
                continue;
            }
            boolean changed = false;
            for (int slot = 0; slot < MAX_PODS; slot++) {
                if (bit(claimed, slot)) {
                    changed |= follow(slot, seen[slot]);
                }
            }
            if (changed) {
                version.incrementAndGet();
            }
            // Stored after the slots: a decision that reads this version sees them.
            podTableVersion = v;
            return true;
        }
        return false;
    }

    /** Applies what the index shows in one claimed slot; returns true when the registry changed. */
    private boolean follow(final int slot, final PodIndex.PodDescription d) {
        setSuspect(slot, d != null && d.suspect());
        final int known = generations.get(slot);
        final boolean routable = isRegistered(slot);
        if (d == null) {
            if (known == UNKNOWN_GENERATION) {
                return false;
            }
            generations.set(slot, UNKNOWN_GENERATION);
            setRoutable(slot, false);
            return true;
        }
        final boolean samePod = d.podId().equals(podIds.get(slot));
        if (bit(fromIndex, slot)) {
            if (samePod && d.generation() == known && routable) {
                return false;
            }
            learn(slot, d.podId(), modelOf(d), role(slot), endpoints.get(slot), d.generation());
            return true;
        }
        if (samePod) {
            generations.set(slot, d.generation());
            setRoutable(slot, true);
            return !routable || d.generation() != known;
        }
        generations.set(slot, UNKNOWN_GENERATION);
        setRoutable(slot, false);
        return routable;
    }

    private void setSuspect(final int slot, final boolean on) {
        if (on) {
            suspect.getAndUpdate(slot >>> 6, w -> w | (1L << slot));
        } else {
            suspect.getAndUpdate(slot >>> 6, w -> w & ~(1L << slot));
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
        return (suspect.getOpaque(slot >>> 6) & (1L << slot)) != 0;
    }

    /**
     * @param word 0..3.
     * @return that word of the suspect-pod bitmap (bit p = slot p is suspect).
     */
    public long suspectWord(final int word) {
        return suspect.getOpaque(word);
    }

    private static String modelOf(final PodIndex.PodDescription d) {
        return d.model() == null || d.model().isEmpty() ? null : d.model();
    }

    private void setRoutable(final int slot, final boolean on) {
        if (on) {
            registered.getAndUpdate(slot >>> 6, w -> w | (1L << slot));
        } else {
            registered.getAndUpdate(slot >>> 6, w -> w & ~(1L << slot));
        }
    }

    private static boolean bit(final long[] words, final int slot) {
        return (words[slot >>> 6] & (1L << slot)) != 0;
    }

    private static void setBit(final long[] words, final int slot, final boolean on) {
        if (on) {
            words[slot >>> 6] |= 1L << slot;
        } else {
            words[slot >>> 6] &= ~(1L << slot);
        }
    }

    /**
     * @return the index's pod table version the registry last learnt ({@link #syncWithIndex}); 0 before any, and
     * {@link PodIndex#NO_POD_TABLE_VERSION} after a registration not checked against the index yet.
     */
    public long podTableVersion() {
        return podTableVersion;
    }

    /**
     * @param slot pod slot.
     * @return the slot's generation in the index's pod table as the registry learnt it, or
     * {@link #UNKNOWN_GENERATION}.
     */
    public int generation(final int slot) {
        return generations.get(slot);
    }

    /**
     * @param word 0..3.
     * @return that word of the registered-pod bitmap.
     */
    public long registeredWord(final int word) {
        return registered.getOpaque(word);
    }

    /**
     * @param slot pod slot.
     * @return true when the slot is registered and routable (not excluded by {@link #syncWithIndex}).
     */
    public boolean isRegistered(final int slot) {
        return (registered.get(slot >>> 6) & (1L << slot)) != 0;
    }

    /**
     * @return a number that changes whenever a pod is registered, unregistered, re-learnt or excluded.
     */
    public long version() {
        return version.get();
    }

    /**
     * @param slot pod slot.
     * @return pod id, or null.
     */
    public String podId(final int slot) {
        return podIds.get(slot);
    }

    /**
     * @param podId pod id.
     * @return its slot, or -1 when no registered pod has that id. Linear scan: cold path.
     */
    public synchronized int slotOf(final String podId) {
        for (int slot = 0; slot < MAX_PODS; slot++) {
            if (isRegistered(slot) && podId.equals(podIds.get(slot))) {
                return slot;
            }
        }
        return -1;
    }

    /**
     * @param slot pod slot.
     * @return model name, or null for any.
     */
    public String model(final int slot) {
        return models.get(slot);
    }

    /**
     * @param slot pod slot.
     * @return endpoint, or null.
     */
    public URI endpoint(final int slot) {
        return endpoints.get(slot);
    }

    /**
     * @param slot pod slot.
     * @return its role.
     */
    public PodRole role(final int slot) {
        return ROLES[role.getOpaque(slot)];
    }

    private static final PodRole[] ROLES = PodRole.values();

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
        final int oldQueued = this.queued.getAndSet(slot, queued);
        final int oldRunning = this.running.getAndSet(slot, running);
        this.requests.addAndGet(slot, queued - oldQueued + running - oldRunning);
        this.tokens.set(slot, tokens);
        return this;
    }

    /**
     * Counts a request the router sent to a pod.
     *
     * @param slot         pod slot.
     * @param promptTokens its prompt length.
     */
    public void requestStarted(final int slot, final int promptTokens) {
        running.incrementAndGet(slot);
        requests.incrementAndGet(slot);
        tokens.addAndGet(slot, promptTokens);
    }

    /**
     * Counts a request that finished on a pod.
     *
     * @param slot         pod slot.
     * @param promptTokens the prompt length passed to {@link #requestStarted}.
     */
    public void requestFinished(final int slot, final int promptTokens) {
        running.decrementAndGet(slot);
        requests.decrementAndGet(slot);
        tokens.addAndGet(slot, -promptTokens);
    }

    /**
     * @param slot pod slot.
     * @return requests waiting.
     */
    public int queued(final int slot) {
        return queued.getOpaque(slot);
    }

    /**
     * @param slot pod slot.
     * @return requests running.
     */
    public int running(final int slot) {
        return running.getOpaque(slot);
    }

    /**
     * @param slot pod slot.
     * @return requests waiting plus running (one read; kept in step with both).
     */
    public int requests(final int slot) {
        return requests.getOpaque(slot);
    }

    /**
     * @param slot pod slot.
     * @return tokens in flight.
     */
    public long tokens(final int slot) {
        return tokens.getOpaque(slot);
    }

    /**
     * @param slot        pod slot.
     * @param utilization KV-cache utilisation in [0, 1].
     * @return this.
     */
    public PodRegistry kvUtilization(final int slot, final double utilization) {
        if (!(utilization >= 0 && utilization <= 1)) {
            throw new IllegalArgumentException("utilization must be in [0, 1]: " + utilization);
        }
        kvUtilizationBits.set(slot, Double.doubleToRawLongBits(utilization));
        return this;
    }

    /**
     * @param slot pod slot.
     * @return KV-cache utilisation in [0, 1].
     */
    public double kvUtilization(final int slot) {
        return Double.longBitsToDouble(kvUtilizationBits.getOpaque(slot));
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
        this.prefillTokens.set(slot, prefillTokens);
        this.decodeBlocks.set(slot, decodeBlocks);
        return this;
    }

    /**
     * @param slot pod slot.
     * @return tokens queued for prefill.
     */
    public long prefillTokens(final int slot) {
        return prefillTokens.getOpaque(slot);
    }

    /**
     * @param slot pod slot.
     * @return active decode blocks.
     */
    public long decodeBlocks(final int slot) {
        return decodeBlocks.getOpaque(slot);
    }

    /**
     * @param slot pod slot.
     * @param cap  most requests the pod may run at once; 0 for no cap.
     * @return this.
     */
    public PodRegistry maxConcurrency(final int slot, final int cap) {
        if (cap < 0) {
            throw new IllegalArgumentException("cap must be >= 0: " + cap);
        }
        maxConcurrency.set(slot, cap);
        return this;
    }

    /**
     * @param slot pod slot.
     * @return concurrency cap, 0 for none.
     */
    public int maxConcurrency(final int slot) {
        return maxConcurrency.getOpaque(slot);
    }

    /**
     * @param slot pod slot.
     * @param max  most adapters the pod can hold at once (0: it cannot load more).
     * @return this.
     */
    public PodRegistry maxLoras(final int slot, final int max) {
        maxLoras.set(slot, max);
        return this;
    }

    /**
     * @param slot pod slot.
     * @return most adapters the pod can hold.
     */
    public int maxLoras(final int slot) {
        return maxLoras.getOpaque(slot);
    }

    /**
     * Records that a pod has an adapter loaded.
     *
     * @param slot pod slot.
     * @param lora adapter name.
     * @return this.
     */
    public PodRegistry loraLoaded(final int slot, final String lora) {
        final int id = internLora(lora);
        loraWords.getAndUpdate(slot * 4 + (id >>> 6), w -> w | (1L << id));
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
        final Integer id = loraIds.get(lora);
        if (id != null) {
            final int i = id;
            loraWords.getAndUpdate(slot * 4 + (i >>> 6), w -> w & ~(1L << i));
        }
        return this;
    }

    private int internLora(final String lora) {
        final Integer existing = loraIds.get(lora);
        if (existing != null) {
            return existing;
        }
        synchronized (loraIds) {
            final int next = loraIds.size();
            if (next >= MAX_LORAS) {
                throw new IllegalStateException("more than " + MAX_LORAS + " LoRA adapters");
            }
            return loraIds.computeIfAbsent(lora, k -> next);
        }
    }

    /**
     * @param lora adapter name.
     * @return its id, or -1 when no pod ever loaded it. Allocation-free.
     */
    public int loraId(final String lora) {
        final Integer id = loraIds.get(lora);
        return id == null ? -1 : id;
    }

    /**
     * @param slot   pod slot.
     * @param loraId adapter id from {@link #loraId}.
     * @return true when the pod has the adapter loaded.
     */
    public boolean hasLora(final int slot, final int loraId) {
        return loraId >= 0 && (loraWords.getOpaque(slot * 4 + (loraId >>> 6)) & (1L << loraId)) != 0;
    }

    /**
     * @param slot pod slot.
     * @return adapters the pod has loaded.
     */
    public int loraCount(final int slot) {
        int n = 0;
        for (int w = 0; w < 4; w++) {
            n += Long.bitCount(loraWords.get(slot * 4 + w));
        }
        return n;
    }

    private static void checkSlot(final int slot) {
        if (slot < 0 || slot >= MAX_PODS) {
            throw new IllegalArgumentException("pod slot must be in [0, " + MAX_PODS + "): " + slot);
        }
    }
}
