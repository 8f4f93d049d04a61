package io.kvidx.daemon.membership;

import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The daemon's one table of engines: pod id to {@link Engine}. Every way of adding or removing an engine goes
 * through it — {@code POST /register} and {@code /unregister}, the YAML file when it is reloaded, the
 * {@code --zmq} flags at start, and pod discovery ({@link #reconcile}) — and it tells the transport ({@link Subscriptions}) what to subscribe to or drop.
 * Engines added through the API are kept in the cell's state directory ({@link EngineFile}) and come back after a
 * daemon restart; configured ones come from the configuration again.
 *
 * <p>Changes run one at a time on the table's own thread (file writes included), so an HTTP event loop that
 * asks for one only waits on a future. Readers ({@link #engines()}) see an immutable snapshot
 * through a volatile read.
 *
 * <p><b>Note:</b> written only by its own single thread; read by any thread.
 */
public final class Membership implements AutoCloseable {
    /** What the transport does when the table changes. */
    public interface Subscriptions {
        /**
         * Subscribes to an engine's publisher (and replays it from the start); its events are the pod's.
         *
         * @param endpoint the subscription.
         */
        void subscribe(ZmqEndpoint endpoint);

        /**
         * Drops a subscription and takes its pods down (two-phase removal: alive bit now, blocks swept after).
         *
         * @param endpoint the subscription, as it was subscribed.
         */
        void unsubscribe(ZmqEndpoint endpoint);
    }

    /** What a change did. */
    public enum Outcome {
        /** The engine was added. */
        ADDED,
        /** The same engine was already registered: nothing changed. */
        UNCHANGED,
        /** Another engine is registered under the same instance and rank (unregister it first). */
        CONFLICT,
        /** The engine was removed. */
        REMOVED,
        /** No such engine. */
        UNKNOWN
    }

    private final EngineFile file;
    private final Subscriptions subscriptions;
    private final ExecutorService thread;
    private final Map<String, Engine> byPod = new LinkedHashMap<>();
    private volatile Map<String, Engine> snapshot = Map.of();
    private volatile int discoveryConflicts;

    /**
     * @param file          where API registrations are kept (null: nowhere, e.g. in tests).
     * @param subscriptions the transport.
     */
    public Membership(final EngineFile file, final Subscriptions subscriptions) {
        this.file = file;
        this.subscriptions = subscriptions;
        this.thread = Executors.newSingleThreadExecutor(r -> {
            final Thread t = new Thread(r, "kvidx-membership");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Adds the configured engines and the API registrations kept from the previous run; call once at start, before
     * the transport starts. A kept registration of a pod the configuration also names is dropped (the configuration
     * wins).
     *
     * @param configured the engines of the flags and the YAML file.
     * @return the engines to subscribe to.
     */
    public synchronized List<Engine> start(final Collection<Engine> configured) {
        for (final Engine e : configured) {
            byPod.put(e.key(), e);
        }
        if (file != null) {
            for (final Engine e : file.read()) {
                byPod.putIfAbsent(e.key(), e);
            }
        }
        publish();
        return new ArrayList<>(byPod.values());
    }

    /**
     * Registers an engine (an API registration is kept in the state directory before the transport subscribes).
     *
     * @param engine the engine.
     * @return what happened, once the subscription is under way.
     */
    public CompletableFuture<Outcome> register(final Engine engine) {
        return CompletableFuture.supplyAsync(() -> registerNow(engine), thread);
    }

    /**
     * Unregisters an instance's engines: one rank, or every rank when {@code dpRank} is negative.
     *
     * @param instanceId the instance.
     * @param dpRank     its rank, or -1 for all.
     * @return {@link Outcome#REMOVED} or {@link Outcome#UNKNOWN}.
     */
    public CompletableFuture<Outcome> unregister(final String instanceId, final int dpRank) {
        return CompletableFuture.supplyAsync(() -> unregisterNow(instanceId, dpRank), thread);
    }

    /**
     * Makes the configured engines those given (a reloaded YAML file): adds the new, removes the gone, re-subscribes
     * the changed; API registrations are left alone.
     *
     * @param configured the configuration's engines now.
     * @return how many engines were added, removed or changed.
     */
    public CompletableFuture<Integer> reconfigure(final Collection<Engine> configured) {
        return reconcile(Engine.Source.CONFIG, configured);
    }

    /**
     * Makes one source's engines those given: adds the new, removes the gone (two-phase removal in the transport),
     * re-subscribes the changed (a pod back with a new IP). The configuration wins over the other sources for the
     * same key; a discovered engine whose pod an API registration or the configuration already holds is left out
     * (and counted in {@link #discoveryConflicts()}).
     *
     * @param source  {@link Engine.Source#CONFIG} or {@link Engine.Source#DISCOVERY}.
     * @param engines that source's engines now, each of that source.
     * @return how many engines were added, removed or changed.
     */
    public CompletableFuture<Integer> reconcile(final Engine.Source source, final Collection<Engine> engines) {
        if (source == Engine.Source.API) {
            throw new IllegalArgumentException("API registrations are added and removed one by one");
        }
        for (final Engine e : engines) {
            if (e.source() != source) {
                throw new IllegalArgumentException("engine " + e.key() + " is from " + e.source() + ", not " + source);
            }
        }
        return CompletableFuture.supplyAsync(() -> reconcileNow(source, engines), thread);
    }

    /**
     * @return discovered engines left out because another source holds their pod id, at the last reconciliation.
     */
    public int discoveryConflicts() {
        return discoveryConflicts;
    }

    private synchronized Outcome registerNow(final Engine engine) {
        final Engine old = byPod.get(engine.key());
        if (old != null) {
            return old.sameSubscription(engine) ? Outcome.UNCHANGED : Outcome.CONFLICT;
        }
        byPod.put(engine.key(), engine);
        persist();
        publish();
        subscriptions.subscribe(engine.toEndpoint());
        return Outcome.ADDED;
    }

    private synchronized Outcome unregisterNow(final String instanceId, final int dpRank) {
        final List<Engine> gone = new ArrayList<>();
        for (final Engine e : byPod.values()) {
            if (instanceId.equals(e.instanceId()) && (dpRank < 0 || e.dpRank() == dpRank)) {
                gone.add(e);
            }
        }
        if (gone.isEmpty()) {
            return Outcome.UNKNOWN;
        }
        for (final Engine e : gone) {
            byPod.remove(e.key());
        }
        persist();
        publish();
        for (final Engine e : gone) {
            subscriptions.unsubscribe(e.toEndpoint());
        }
        return Outcome.REMOVED;
    }

    private synchronized int reconcileNow(final Engine.Source source, final Collection<Engine> engines) {
        final Map<String, Engine> wanted = new HashMap<>();
        for (final Engine e : engines) {
            wanted.put(e.key(), e);
        }
        int changes = 0;
        int conflicts = 0;
        for (final Engine e : new ArrayList<>(byPod.values())) {
            if (e.source() == source && !wanted.containsKey(e.key())) {
                byPod.remove(e.key());
                subscriptions.unsubscribe(e.toEndpoint());
                changes++;
            }
        }
        for (final Engine e : wanted.values()) {
            final Engine old = byPod.get(e.key());
            if (old != null && source == Engine.Source.DISCOVERY && old.source() != Engine.Source.DISCOVERY) {
                conflicts++;
                continue;
            }
            if (old != null && old.sameSubscription(e)) {
                if (old.source() != e.source()) {
                    byPod.put(e.key(), e);
                }
                continue;
            }
            byPod.put(e.key(), e);
            if (old != null) {
                subscriptions.unsubscribe(old.toEndpoint());
            }
            subscriptions.subscribe(e.toEndpoint());
            changes++;
        }
        if (source == Engine.Source.DISCOVERY) {
            discoveryConflicts = conflicts;
        }
        persist();
        publish();
        return changes;
    }

    private void persist() {
        if (file != null) {
            final List<Engine> kept = new ArrayList<>();
            for (final Engine e : byPod.values()) {
                if (e.source() == Engine.Source.API) {
                    kept.add(e);
                }
            }
            file.write(kept);
        }
    }

    private void publish() {
        snapshot = Map.copyOf(byPod);
    }

    /**
     * @return every engine, by {@link Engine#key()} (an immutable snapshot).
     */
    public Map<String, Engine> engines() {
        return snapshot;
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
