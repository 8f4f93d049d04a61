package io.kvidx.routing;

import io.kvidx.client.index.IndexException;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One selection pass over a {@link Profile}: Prepare, Filter, Score, Pick.
 *
 * <p>Candidates start as the registry's pods minus the request's exclusions. Each scorer writes a score in
 * [0, 1] per candidate and the selector sums weight x score; the picker chooses from the totals. When the profile
 * needs the index and the index is missing, its writer is stale, or a query fails, the selector skips the plugins
 * that need the index, skips scoring, picks with the profile's fallback picker and counts a fallback; it turns
 * cache-aware again as soon as the index is available again. A scorer without an answer for the request (a remote
 * lookup that timed out or failed) calls {@link RoutingContext#fallBack(String)}: the selector stops scoring and picks
 * with the fallback picker too. A query that gives up on a busy shard
 * ({@link io.kvidx.client.index.IndexBusyException}), or finds the index closed or being replaced, is such a
 * failure too.
 *
 * <p>Pod identity: the selector reads the registry's learnt pod table version ({@link PodRegistry#podTableVersion()})
 * before it reads the registry's pods, and the index's ({@link PodIndex#podTableVersion()}) after the last index
 * read of the pass (the prefix query, the alive filter). Equal, no slot changed hands in between, so every slot's
 * answer belongs to the pod the registry names: one compare per decision. Different (cold): the registry re-learns
 * the pod table ({@link PodRegistry#syncWithIndex}) and the pass runs again before anything is picked; if the
 * table keeps changing, or another thread is re-learning it (the selector only tries the registry's lock, it never
 * waits for it), the decision falls back.
 *
 * <p><b>Note:</b> thread safe: any number of threads may select concurrently, each with its own
 * {@link RoutingContext}. A decision allocates nothing.
 */
public final class Selector {
    /** Passes a decision makes while the pod table keeps changing under it before it falls back. */
    private static final int MAX_PASSES = 3;

    private final Profile profile;
    private final PodRegistry registry;
    private final PodIndex index;
    private final Preparer[] preparers;
    private final Filter[] filters;
    private final Scorer[] scorers;
    private final double[] weights;
    private final Picker picker;
    private final Picker fallback;
    private final PickListener[] listeners;
    private final boolean needsIndex;
    private final RoutingCounters counters = new RoutingCounters();

    /**
     * @param profile  the validated profile.
     * @param registry the router's pods.
     * @param index    the index (may be null when the profile does not need it).
     */
    public Selector(final Profile profile, final PodRegistry registry, final PodIndex index) {
        this.profile = Objects.requireNonNull(profile, "profile");
        this.registry = Objects.requireNonNull(registry, "registry");
        this.index = index;
        if (profile.needsIndex() && index == null) {
            throw new IllegalArgumentException("profile " + profile.name() + " needs an index");
        }
        this.preparers = profile.preparers().toArray(new Preparer[0]);
        this.filters = profile.filters().toArray(new Filter[0]);
        this.scorers = profile.scorers().toArray(new Scorer[0]);
        this.weights = new double[scorers.length];
        for (int i = 0; i < weights.length; i++) {
            weights[i] = profile.weight(i);
        }
        this.picker = profile.picker();
        this.fallback = profile.fallback();
        this.needsIndex = profile.needsIndex();
        final List<PickListener> l = new ArrayList<>();
        for (final RoutingPlugin p : profile.plugins()) {
            if (p instanceof PickListener pl && !l.contains(pl)) {
                l.add(pl);
            }
        }
        this.listeners = l.toArray(new PickListener[0]);
    }

    /**
     * Runs one pass.
     *
     * @param ctx the decision's context (request slots filled).
     * @return the picked slot, or {@link RoutingPlan#NO_POD} when no candidate survived the filters.
     */
    public int select(final RoutingContext ctx) {
        counters.decision();
        ctx.clearFallback();
        boolean indexed = !needsIndex || index.isAvailable();
        int passes = 0;
        while (true) {
            // Read before the registry's pods; the index's version after the pass's last index read.
            final long learnt = registry.podTableVersion();
            indexed = prepareAndFilter(ctx, indexed);
            if (!indexed || !needsIndex || index.podTableVersion() == learnt) {
                break;
            }
            // Cold: a slot may have changed hands since the registry learnt the pods; learn them again and redo the
            // pass, so that no answer is read under the name of the slot's previous pod.
            // Another thread re-reading it already: decide without the index (redo the pass) rather than wait.
            counters.podTableResync();
            indexed = registry.trySyncWithIndex(index) && ++passes < MAX_PASSES && index.isAvailable();
        }
        if (ctx.candidateCount() == 0) {
            counters.countNoCandidate();
            ctx.lastFallback = !indexed;
            return RoutingPlan.NO_POD;
        }
        final double[] totals = ctx.totals();
        final int n = ctx.sealCandidates();
        final int pick;
        boolean scored = indexed;
        if (indexed) {
            final double[] scratch = ctx.scratch();
            boolean first = true;
            for (int i = 0; i < scorers.length; i++) {
                final double w = weights[i];
                if (w == 0) {
                    continue;
                }
                scorers[i].score(ctx, scratch);
                if (ctx.fallbackScorer() != null) {
                    scored = false;
                    counters.scorerFallback();
                    break;
                }
                if (first) {
                    for (int ci = 0; ci < n; ci++) {
                        final int s = ctx.candidateSlot(ci);
                        totals[s] = w * scratch[s];
                    }
                    first = false;
                } else {
                    for (int ci = 0; ci < n; ci++) {
                        final int s = ctx.candidateSlot(ci);
                        totals[s] += w * scratch[s];
                    }
                }
            }
            if (first) {
                zero(ctx, totals, n);
            }
        }
        if (scored) {
            pick = picker.pick(ctx, totals);
        } else {
            counters.fallback();
            zero(ctx, totals, n);
            pick = fallback.pick(ctx, totals);
        }
        ctx.lastFallback = !scored;
        for (final PickListener l : listeners) {
            l.onPicked(ctx, pick);
        }
        return pick;
    }

    /**
     * Candidates from the registry, then the preparers and filters (those that need the index only while it is
     * usable).
     *
     * @return whether the index is still usable: false once a preparer met an index failure.
     */
    private boolean prepareAndFilter(final RoutingContext ctx, final boolean usable) {
        boolean indexed = usable;
        ctx.beginSelection(registry);
        for (final Preparer p : preparers) {
            if (indexed || !p.needsIndex()) {
                try {
                    p.prepare(ctx);
                } catch (final IndexException ex) {
                    counters.indexError(ex);
                    indexed = false;
                }
            }
        }
        for (final Filter f : filters) {
            if (indexed || !f.needsIndex()) {
                f.filter(ctx);
            }
        }
        return indexed;
    }

    private static void zero(final RoutingContext ctx, final double[] totals, final int n) {
        for (int ci = 0; ci < n; ci++) {
            totals[ctx.candidateSlot(ci)] = 0;
        }
    }

    /**
     * @return the profile.
     */
    public Profile profile() {
        return profile;
    }

    /**
     * @return this selector's counters.
     */
    public RoutingCounters counters() {
        return counters;
    }
}
