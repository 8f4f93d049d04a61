package io.kvidx.routing.plugins;

import io.kvidx.routing.LoadMetric;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Scorer;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;
import io.kvidx.routing.TokenIds;
import io.kvidx.routing.lmcache.LmCacheLookupClient;
import io.kvidx.routing.lmcache.LmCacheWorkerPoller;

import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The LMCache-aware score, in one of two lookup modes (the vLLM router fork's {@code lookup_mode}):
 * <pre>
 *   score = w * cache_term + (1 - w) * (max_load - load) / max_load
 * </pre>
 * with maxima over the candidates (the load term is 1 when the maximum load is 0), {@code w} = 0.7 by default and
 * load a {@link LoadMetric} from the registry. The cache term is
 * <ul>
 * <li>{@link LookupMode#OCCUPANCY}: {@code key_count / max_key_count}, key counts polled by an
 * {@link LmCacheWorkerPoller} (0 when the maximum is 0). Allocation-free.</li>
 * <li>{@link LookupMode#PREFIX_LOOKUP}: {@code matched_tokens / request_tokens}, the request's longest prefix held
 * by each pod as the controller's {@code POST /lookup} answers it ({@link LmCacheLookupClient}), once per request.
 * When the request has no tokens, the lookup times out or fails, or no candidate matched anything, the scorer calls
 * {@link RoutingContext#fallBack(String)} and the selector picks with the profile's fallback picker (default
 * power-of-two choices), as the fork falls back to its {@code fallback_policy}; {@link #fallbacks()} and
 * {@link #misses()} count it. The lookup is a network call and allocates; nothing else does. It waits (up to its
 * timeout), so this mode {@link #mayBlock() may block}: servers decide off their event loops with it. Its answer is
 * kept in the request's context (a slot of this scorer's own), so a replan of the request (a pod failed) does not
 * ask again.</li>
 * </ul>
 *
 * <p><b>Note:</b> thread safe (reads the poller's atomics; the lookup client and counters are thread safe).
 */
public final class LmCacheScorer implements Scorer {
    /** Default weight of the cache term. */
    public static final double KEY_WEIGHT_DEFAULT = 0.7;

    /**
     * Where the cache term comes from.
     */
    public enum LookupMode {
        /** Each pod's total key count, polled from {@code GET /controller/workers}. */
        OCCUPANCY,
        /** The request's matched prefix per pod, from {@code POST /lookup} per request. */
        PREFIX_LOOKUP
    }

    /** A request's lookup answer, kept in its context so that a replan of the request does not ask again. */
    private static final class Lookup {
        long request = -1;
        int answered;
        final long[] matched = new long[PodRegistry.MAX_PODS];
    }

    private final String name;
    private final LookupMode mode;
    private final Slot<Lookup> lookupSlot;
    private final LmCacheWorkerPoller keys;
    private final LmCacheLookupClient lookup;
    private final PodRegistry registry;
    private final LoadMetric metric;
    private final double w;
    private final AtomicLong fallbacks = new AtomicLong();
    private final AtomicLong misses = new AtomicLong();

    /**
     * An occupancy-mode scorer.
     *
     * @param name      plugin name.
     * @param keys      the poller with key counts.
     * @param registry  load figures.
     * @param metric    load metric.
     * @param keyWeight weight of the cache term, in [0, 1].
     */
    public LmCacheScorer(final String name, final LmCacheWorkerPoller keys, final PodRegistry registry,
        final LoadMetric metric, final double keyWeight) {
        this(name, LookupMode.OCCUPANCY, Objects.requireNonNull(keys, "keys"), null, registry, metric, keyWeight);
    }

    private LmCacheScorer(final String name, final LookupMode mode, final LmCacheWorkerPoller keys,
        final LmCacheLookupClient lookup, final PodRegistry registry, final LoadMetric metric, final double keyWeight) {
        if (!(keyWeight >= 0 && keyWeight <= 1)) {
            throw new IllegalArgumentException("key weight must be in [0, 1]: " + keyWeight);
        }
        this.name = name;
        this.mode = mode;
        this.lookupSlot = mode == LookupMode.PREFIX_LOOKUP ? Slot.of("lmcache-lookup:" + name, Lookup.class,
            Lookup::new) : null;
        this.keys = keys;
        this.lookup = lookup;
        this.registry = Objects.requireNonNull(registry, "registry");
        this.metric = Objects.requireNonNull(metric, "metric");
        this.w = keyWeight;
    }

    /**
     * A prefix-lookup-mode scorer.
     *
     * @param name      plugin name.
     * @param lookup    the controller's lookup client.
     * @param registry  load figures.
     * @param metric    load metric.
     * @param keyWeight weight of the cache term, in [0, 1].
     * @return the scorer.
     */
    public static LmCacheScorer prefixLookup(final String name, final LmCacheLookupClient lookup,
        final PodRegistry registry, final LoadMetric metric, final double keyWeight) {
        return new LmCacheScorer(name, LookupMode.PREFIX_LOOKUP, null, Objects.requireNonNull(lookup, "lookup"),
            registry, metric, keyWeight);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return mode == LookupMode.PREFIX_LOOKUP ? Set.of(Slots.TOKENS) : Set.of();
    }

    @Override
    public Set<Slot<?>> writes() {
        return mode == LookupMode.PREFIX_LOOKUP ? Set.of(lookupSlot) : Set.of();
    }

    /**
     * @return true in prefix-lookup mode: a request's first decision waits for the controller (up to the lookup's
     * timeout); a replan of the same request reuses its answer.
     */
    @Override
    public boolean mayBlock() {
        return mode == LookupMode.PREFIX_LOOKUP;
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        if (mode == LookupMode.PREFIX_LOOKUP) {
            scorePrefix(ctx, scores);
            return;
        }
        long maxKeys = 0;
        long maxLoad = 0;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            maxKeys = Math.max(maxKeys, keys.keyCount(s));
            maxLoad = Math.max(maxLoad, metric.of(registry, s));
        }
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            final double keyTerm = maxKeys == 0 ? 0 : (double) keys.keyCount(s) / maxKeys;
            scores[s] = w * keyTerm + (1 - w) * loadTerm(s, maxLoad);
        }
    }

    private double loadTerm(final int s, final long maxLoad) {
        return maxLoad == 0 ? 1 : (double) (maxLoad - metric.of(registry, s)) / maxLoad;
    }

    private void scorePrefix(final RoutingContext ctx, final double[] scores) {
        final TokenIds tokens = ctx.tokens();
        final int n = tokens.length();
        if (n == 0) {
            fallBack(ctx, false);
            return;
        }
        // Once per request: a replan (a pod failed) reuses the answer instead of waiting for the controller again.
        final Lookup done = ctx.get(lookupSlot);
        final long[] matched = done.matched;
        if (done.request != ctx.requestNumber()) {
            done.answered = lookup.lookup(tokens.ids(), 0, n, matched);
            done.request = ctx.requestNumber();
        }
        if (done.answered < 0) {
            fallBack(ctx, false);
            return;
        }
        boolean any = false;
        long maxLoad = 0;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            any |= matched[s] > 0;
            maxLoad = Math.max(maxLoad, metric.of(registry, s));
        }
        if (!any) {
            fallBack(ctx, true);
            return;
        }
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            scores[s] = w * ((double) matched[s] / n) + (1 - w) * loadTerm(s, maxLoad);
        }
    }

    private void fallBack(final RoutingContext ctx, final boolean miss) {
        fallbacks.getAndIncrement();
        if (miss) {
            misses.getAndIncrement();
        }
        ctx.fallBack(name);
    }

    /**
     * @return the lookup mode.
     */
    public LookupMode mode() {
        return mode;
    }

    /**
     * @return the lookup client (prefix-lookup mode), or null; its counters: lookups, timeouts, errors, unknown
     * instances.
     */
    public LmCacheLookupClient lookupClient() {
        return lookup;
    }

    /**
     * @return decisions this scorer left to the fallback picker (prefix-lookup mode: no tokens, a timeout, an error,
     * or no candidate matched).
     */
    public long fallbacks() {
        return fallbacks.get();
    }

    /**
     * @return prefix lookups answered without a match on any candidate (each also a fallback).
     */
    public long misses() {
        return misses.get();
    }
}
