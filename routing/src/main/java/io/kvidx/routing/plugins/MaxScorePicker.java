package io.kvidx.routing.plugins;

import io.kvidx.routing.Picker;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;

/**
 * Picks the candidate with the highest total. Ties are broken by the prompt when a registry is given: the tied pod
 * whose id hashes highest with the request's fingerprint ({@link RoutingContext#requestFingerprint()}, rendezvous
 * hashing), so that replicas of a router or picker, each with its own daemon and its own slot numbers, pick the same
 * pod for the same prompt, a new prompt's repeats land on one pod, and different prompts spread uniformly. Without a
 * registry, or for a request with no prompt, ties are broken uniformly at random (reservoir sampling).
 *
 * <p><b>Note:</b> thread safe (stateless; randomness comes from the context).
 */
public final class MaxScorePicker implements Picker {
    /** The YAML {@code tie-break} values. */
    public enum TieBreak {
        /** By the prompt's fingerprint and the pods' ids: the same on every replica (the default). */
        PROMPT,
        /** Uniformly at random. */
        RANDOM
    }

    private final String name;
    private final PodRegistry registry;

    /**
     * Breaks ties at random.
     *
     * @param name plugin name.
     */
    public MaxScorePicker(final String name) {
        this(name, null);
    }

    /**
     * @param name     plugin name.
     * @param registry the pods' ids for the prompt tie-break, or null to break ties at random.
     */
    public MaxScorePicker(final String name, final PodRegistry registry) {
        this.name = name;
        this.registry = registry;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int pick(final RoutingContext ctx, final double[] totals) {
        final int n = ctx.sealCandidates();
        double best = Double.NEGATIVE_INFINITY;
        int ties = 0;
        int first = -1;
        for (int ci = 0; ci < n; ci++) {
            final double t = totals[ctx.candidateSlot(ci)];
            if (t > best) {
                best = t;
                ties = 1;
                first = ci;
            } else if (t == best) {
                ties++;
            }
        }
        if (ties == 1) {
            return ctx.candidateSlot(first);
        }
        final long fingerprint = registry == null ? 0 : ctx.requestFingerprint();
        if (fingerprint != 0) {
            int pick = -1;
            long top = 0;
            for (int ci = first; ci < n; ci++) {
                final int s = ctx.candidateSlot(ci);
                if (totals[s] == best) {
                    final long w = RoutingContext.mix(fingerprint ^ registry.podIdHash(s));
                    if (pick < 0 || Long.compareUnsigned(w, top) > 0) {
                        pick = s;
                        top = w;
                    }
                }
            }
            return pick;
        }
        int k = ctx.nextRandomInt(ties);
        for (int ci = first; ci < n; ci++) {
            final int s = ctx.candidateSlot(ci);
            if (totals[s] == best && k-- == 0) {
                return s;
            }
        }
        return ctx.candidateSlot(first);
    }
}
