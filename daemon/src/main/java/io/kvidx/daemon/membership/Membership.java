package io.kvidx.daemon.membership;

import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The daemon's one table of engines: pod id to {@link Engine}. Every way of adding or removing an engine goes
 * through it — {@code POST /register} and {@code /unregister}, the YAML file when it is reloaded, the
 * {@code --zmq} flags at start, and pod discovery ({@link #reconcile}) — and it tells the transport ({@link Subscriptions}) what to subscribe to or drop.
 * Engines added through the API are kept in the cell's state directory ({@link EngineFile}) and come back after a
 * daemon restart; configured ones come from the configuration again.
 *
 * <p>Changes run one at a time on the table's own thread (file writes included, and a registration's wait, bounded,
 * for its subscription), so an HTTP event loop that asks for one only waits on a future. Readers ({@link #engines()}) see an immutable snapshot
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
         * @return completed once the transport holds the subscription; exceptionally when it cannot (the endpoint
         * refused, the transport full or closed).
         */
        CompletableFuture<Void> subscribe(ZmqEndpoint endpoint);

        /**
         * Drops a subscription and takes its pods down (two-phase removal: alive bit now, blocks swept after).
         *
         * @param endpoint the subscription, as it was subscribed.
         * @return completed once the first phase is done: the pods' alive bits are cleared, so that no reader of the
         * index (no query answer) sees them any more.
         */
        CompletableFuture<Void> unsubscribe(ZmqEndpoint endpoint);
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
        UNKNOWN,
        /** The table holds the most API registrations allowed ({@link #maxRegistrations}): nothing changed. */
        FULL
    }

    /** How long a registration waits for the transport to make its subscription before it is refused. */
    public static final long SUBSCRIBE_TIMEOUT_MS = 10_000;

    private final EngineFile file;
    private final Subscriptions subscriptions;
    private final ExecutorService thread;
    private final Map<String, Engine> byPod = new LinkedHashMap<>();
    private volatile Map<String, Engine> snapshot = Map.of();
    private volatile int discoveryConflicts;
    private volatile int maxRegistrations = Integer.MAX_VALUE;

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
     * @param max the most engines API registrations may hold at once (each data-parallel rank counts); a
     *            registration beyond is refused ({@link Outcome#FULL}); the configuration's and discovery's engines do
     *            not count.
     * @return this.
     */
    public Membership maxRegistrations(final int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max registrations must be positive: " + max);
        }
        this.maxRegistrations = max;
        return this;
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
     * Registers an engine, as one transaction: the transport subscribes first; only once it holds the subscription is
     * the engine kept (an API registration in the state directory) and published to readers. A subscription that
     * fails, or is not made within {@link #SUBSCRIBE_TIMEOUT_MS}, leaves nothing behind (no kept engine, no entry, no
     * subscription): the future fails and registering again really tries again.
     *
     * @param engine the engine.
     * @return what happened, once the transport holds the subscription.
     */
    public CompletableFuture<Outcome> register(final Engine engine) {
        return CompletableFuture.supplyAsync(() -> registerNow(engine), thread);
    }

    /**
     * Unregisters an instance's engines: one rank, or every rank when {@code dpRank} is negative. They leave the table
     * (and the kept file) at once; the future completes once the transport has taken their pods down to readers
     * (their alive bits cleared: no query answer names them), their blocks being swept after. The table's thread does
     * not wait for that.
     *
     * @param instanceId the instance.
     * @param dpRank     its rank, or -1 for all.
     * @return {@link Outcome#REMOVED}, once the pods are down; or {@link Outcome#UNKNOWN}.
     */
    public CompletableFuture<Outcome> unregister(final String instanceId, final int dpRank) {
        return CompletableFuture.supplyAsync(() -> unregisterNow(instanceId, dpRank), thread)
            .thenCompose(removals -> removals == null ? CompletableFuture.completedFuture(Outcome.UNKNOWN)
                : removals.thenApply(done -> Outcome.REMOVED));
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
        if (engine.source() == Engine.Source.API) {
            int registered = 0;
            for (final Engine e : byPod.values()) {
                if (e.source() == Engine.Source.API) {
                    registered++;
                }
            }
            if (registered >= maxRegistrations) {
                return Outcome.FULL;
            }
        }
        final ZmqEndpoint endpoint = engine.toEndpoint();
        try {
            subscriptions.subscribe(endpoint).get(SUBSCRIBE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (final TimeoutException ex) {
            // It may still be made: the drop is queued behind it, so that nothing is left behind either way.
            subscriptions.unsubscribe(endpoint);
            throw new CompletionException(new IllegalStateException("the transport did not subscribe to "
                + engine.endpoint() + " within " + SUBSCRIBE_TIMEOUT_MS + " ms"));
        } catch (final ExecutionException ex) {
            throw new CompletionException(ex.getCause());
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            subscriptions.unsubscribe(endpoint);
            throw new CompletionException(ex);
        }
        byPod.put(engine.key(), engine);
        try {
            persist();
        } catch (final RuntimeException ex) {
            byPod.remove(engine.key());
            subscriptions.unsubscribe(endpoint);
            throw ex;
        }
        publish();
        return Outcome.ADDED;
    }

    /** @return the removals under way (see {@link #unregister}), or null when no engine matched. */
    private synchronized CompletableFuture<Void> unregisterNow(final String instanceId, final int dpRank) {
        final List<Engine> gone = new ArrayList<>();
        for (final Engine e : byPod.values()) {
            if (instanceId.equals(e.instanceId()) && (dpRank < 0 || e.dpRank() == dpRank)) {
                gone.add(e);
            }
        }
        if (gone.isEmpty()) {
            return null;
        }
        for (final Engine e : gone) {
            byPod.remove(e.key());
        }
        persist();
        publish();
        final CompletableFuture<?>[] removals = new CompletableFuture<?>[gone.size()];
        for (int i = 0; i < removals.length; i++) {
            removals[i] = subscriptions.unsubscribe(gone.get(i).toEndpoint());
        }
        return CompletableFuture.allOf(removals);
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
                queued(subscriptions.unsubscribe(e.toEndpoint()));
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
                queued(subscriptions.unsubscribe(old.toEndpoint()));
            }
            queued(subscriptions.subscribe(e.toEndpoint()));
            changes++;
        }
        if (source == Engine.Source.DISCOVERY) {
            discoveryConflicts = conflicts;
        }
        persist();
        publish();
        return changes;
    }

    /**
     * A reconciliation does not wait for its changes (the transport reports a subscription it cannot make in the
     * error log), but one the transport refused at once (its queue full) fails it, as it always did.
     */
    private static void queued(final CompletableFuture<Void> change) {
        if (change.isCompletedExceptionally()) {
            change.join();
        }
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
