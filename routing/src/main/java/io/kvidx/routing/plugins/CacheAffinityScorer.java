package io.kvidx.routing.plugins;

import io.kvidx.routing.TierLookup;
import io.kvidx.routing.PodDepths;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Scorer;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.Set;

/**
 * Scores a pod by how much of the prompt it has cached. Depth mode: prefix depth / chain length. Tier-weighted
 * mode: the sum over the pod's cached leading blocks of the weight of the tier each block sits in (gpu 1.0,
 * cpu 0.8, disk 0.5 by default, configurable), divided by the chain length; a {@link TierLookup} (in product code
 * the host tier map through {@link io.kvidx.routing.TierMapLookup}) tells the tier.
 *
 * <p>The tier lookup is consulted only for the {@code tierCandidates} best candidates by prefix depth (ties broken
 * by the lower slot), at one lookup per cached leading block; every other candidate scores its depth times the
 * lowest tier weight, a lower bound of its tier-weighted score, so a pod whose tiers were not read never outscores
 * one whose tiers were on cache affinity alone. Cost per decision: {@code tierCandidates x depth} lookups at most.
 *
 * <p>Suspect pods: given the registry ({@link #CacheAffinityScorer(String, PodRegistry)}, as the built-in profiles
 * and YAML's {@code cache-affinity} do unless {@code trust-suspect: true}), the scorer does not trust the depth of a
 * pod the index flagged suspect ({@link PodRegistry#isSuspect}: an event gap its engine could not replay, so its
 * indexed blocks may be ones it no longer holds): it scores such a pod as holding 0 cached blocks, so it is picked
 * for load, never for affinity, until the daemon resyncs it. This is the one place the routing layer reads the flag;
 * other readers of the depths (the Dynamo cost, cache hints) take them as they are.
 *
 * <p>Reads {@link Slots#PREFIX_DEPTHS} (and {@link Slots#BLOCK_KEYS} in tier mode). A chain of length 0 scores 0.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class CacheAffinityScorer implements Scorer {
    /** Default weight of a block in GPU memory. */
    public static final double GPU_WEIGHT_DEFAULT = 1.0;
    /** Default weight of a block offloaded to CPU memory. */
    public static final double CPU_WEIGHT_DEFAULT = 0.8;
    /** Default weight of a block offloaded to local disk or further. */
    public static final double DISK_WEIGHT_DEFAULT = 0.5;
    /** Default number of best candidates by depth whose tiers are read. */
    public static final int TIER_CANDIDATES_DEFAULT = 3;

    private final String name;
    private final TierLookup tiers;
    private final double[] tierWeights;
    private final double lowestWeight;
    private final int tierCandidates;
    /** Whose suspect flags make depths untrusted; null: every depth is trusted. */
    private final PodRegistry suspects;

    /**
     * Depth mode, trusting every pod's depth (suspect pods' too).
     *
     * @param name plugin name.
     */
    public CacheAffinityScorer(final String name) {
        this(name, null);
    }

    /**
     * Depth mode, scoring the pods the registry knows as suspect as holding nothing.
     *
     * @param name     plugin name.
     * @param suspects the registry whose {@link PodRegistry#isSuspect} flags untrusted depths, or null to trust all.
     */
    public CacheAffinityScorer(final String name, final PodRegistry suspects) {
        this(name, null, GPU_WEIGHT_DEFAULT, CPU_WEIGHT_DEFAULT, DISK_WEIGHT_DEFAULT, TIER_CANDIDATES_DEFAULT,
            suspects);
    }

    /**
     * Tier-weighted mode.
     *
     * @param name       plugin name.
     * @param tiers      tier of a held block (null for depth mode).
     * @param gpuWeight  weight of a GPU block, in [0, 1].
     * @param cpuWeight  weight of a CPU block, in [0, 1].
     * @param diskWeight weight of a disk block, in [0, 1].
     */
    public CacheAffinityScorer(final String name, final TierLookup tiers, final double gpuWeight,
        final double cpuWeight, final double diskWeight) {
        this(name, tiers, gpuWeight, cpuWeight, diskWeight, TIER_CANDIDATES_DEFAULT);
    }

    /**
     * Tier-weighted mode, reading the tiers of the {@code tierCandidates} best candidates by depth; trusts every
     * pod's depth.
     *
     * @param name           plugin name.
     * @param tiers          tier of a held block (null for depth mode).
     * @param gpuWeight      weight of a GPU block, in [0, 1].
     * @param cpuWeight      weight of a CPU block, in [0, 1].
     * @param diskWeight     weight of a disk block, in [0, 1].
     * @param tierCandidates how many best candidates by depth get their tiers read, {@code >= 1}.
     */
    public CacheAffinityScorer(final String name, final TierLookup tiers, final double gpuWeight,
        final double cpuWeight, final double diskWeight, final int tierCandidates) {
        this(name, tiers, gpuWeight, cpuWeight, diskWeight, tierCandidates, null);
    }

    /**
     * Depth or tier-weighted mode, scoring suspect pods as holding nothing.
     *
     * @param name           plugin name.
     * @param tiers          tier of a held block (null for depth mode).
     * @param gpuWeight      weight of a GPU block, in [0, 1].
     * @param cpuWeight      weight of a CPU block, in [0, 1].
     * @param diskWeight     weight of a disk block, in [0, 1].
     * @param tierCandidates how many best candidates by depth get their tiers read, {@code >= 1}.
     * @param suspects       the registry whose {@link PodRegistry#isSuspect} flags untrusted depths, or null to
     *                       trust every pod's depth.
     */
    public CacheAffinityScorer(final String name, final TierLookup tiers, final double gpuWeight,
        final double cpuWeight, final double diskWeight, final int tierCandidates, final PodRegistry suspects) {
        if (tierCandidates < 1) {
            throw new IllegalArgumentException("tier candidates must be >= 1: " + tierCandidates);
        }
        this.name = name;
        this.tiers = tiers;
        this.tierWeights = new double[] {check(gpuWeight), check(cpuWeight), check(diskWeight)};
        this.lowestWeight = Math.min(gpuWeight, Math.min(cpuWeight, diskWeight));
        this.tierCandidates = tierCandidates;
        this.suspects = suspects;
    }

    /**
     * @return true when suspect pods score as holding nothing (a registry was given).
     */
    public boolean distrustsSuspects() {
        return suspects != null;
    }

    /** The depth the scorer credits a pod with: none for a suspect pod when suspects are distrusted. */
    private int depth(final int[] d, final int slot, final int n) {
        final PodRegistry r = suspects;
        return r != null && r.isSuspect(slot) ? 0 : Math.min(d[slot], n);
    }

    /**
     * @return how many best candidates by depth get their tiers read (tier mode).
     */
    public int tierCandidates() {
        return tierCandidates;
    }

    private static double check(final double w) {
        if (!(w >= 0 && w <= 1)) {
            throw new IllegalArgumentException("tier weight must be in [0, 1]: " + w);
        }
        return w;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return tiers == null ? Set.of(Slots.PREFIX_DEPTHS) : Set.of(Slots.PREFIX_DEPTHS, Slots.BLOCK_KEYS);
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        final PodDepths depths = ctx.get(Slots.PREFIX_DEPTHS);
        final int n = depths.chainLength();
        final int[] d = depths.depths();
        if (n == 0) {
            for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
                final int s = ctx.candidateSlot(ci);
                scores[s] = 0;
            }
            return;
        }
        final double inv = 1.0 / n;
        if (tiers == null) {
            for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
                final int s = ctx.candidateSlot(ci);
                scores[s] = depth(d, s, n) * inv;
            }
            return;
        }
        final long[] keys = ctx.get(Slots.BLOCK_KEYS).keys();
        final int cn = ctx.sealCandidates();
        for (int ci = 0; ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            scores[s] = depth(d, s, n) * lowestWeight * inv;
        }
        // The k best by (depth descending, slot ascending), one pass each: no scratch state, no allocation.
        int prevDepth = Integer.MAX_VALUE;
        int prevSlot = -1;
        for (int k = 0; k < tierCandidates; k++) {
            int best = -1;
            int bestDepth = 0;
            for (int ci = 0; ci < cn; ci++) {
                final int s = ctx.candidateSlot(ci);
                final int depth = depth(d, s, n);
                final boolean after = depth < prevDepth || (depth == prevDepth && s > prevSlot);
                if (after && depth > 0 && (depth > bestDepth || (depth == bestDepth && s < best))) {
                    best = s;
                    bestDepth = depth;
                }
            }
            if (best < 0) {
                break;
            }
            double sum = 0;
            for (int i = 0; i < bestDepth; i++) {
                sum += tierWeights[Math.clamp(tiers.tierOf(best, keys[i]), 0, 2)];
            }
            scores[best] = sum * inv;
            prevDepth = bestDepth;
            prevSlot = best;
        }
    }
}
