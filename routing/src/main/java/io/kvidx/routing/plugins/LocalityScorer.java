package io.kvidx.routing.plugins;

import io.kvidx.routing.PodPick;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodTopology;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.Scorer;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.Objects;
import java.util.Set;

/**
 * Prefers pods near a reference: 1 on the reference's node, {@code zoneScore} elsewhere in its zone, 0 otherwise or
 * when either location is unknown (Modular's locality rule: keep a decode near its prefill so the KV transfer stays on
 * the node, then in the zone). The reference is either the prefill pick of a prefill/decode workflow
 * ({@link Slots#PREFILL_PICK}; use it in the decode profile) or a fixed origin (the router's own node and zone, for
 * single-pass profiles). Locations come from a {@link PodTopology} (pod discovery fills it).
 *
 * <p><b>Note:</b> thread safe (reads the shared topology, writes only the caller's score array).
 */
public final class LocalityScorer implements Scorer {
    /** Default score of a pod in the reference's zone but on another node. */
    public static final double ZONE_SCORE_DEFAULT = 0.5;

    private final String name;
    private final PodRegistry registry;
    private final PodTopology topology;
    private final boolean fromPrefill;
    private final PodTopology.Location origin;
    private final double zoneScore;

    private LocalityScorer(final String name, final PodRegistry registry, final PodTopology topology,
        final boolean fromPrefill, final PodTopology.Location origin, final double zoneScore) {
        if (!(zoneScore >= 0 && zoneScore <= 1)) {
            throw new IllegalArgumentException("zone score must be in [0, 1]: " + zoneScore);
        }
        this.name = name;
        this.registry = Objects.requireNonNull(registry, "registry");
        this.topology = Objects.requireNonNull(topology, "topology");
        this.fromPrefill = fromPrefill;
        this.origin = origin;
        this.zoneScore = zoneScore;
    }

    /**
     * Near the prefill pick (for the decode profile of a prefill/decode workflow).
     *
     * @param name      plugin name.
     * @param registry  pod ids of slots.
     * @param topology  pods' locations.
     * @param zoneScore score of the same zone on another node, in [0, 1].
     * @return the scorer.
     */
    public static LocalityScorer nearPrefill(final String name, final PodRegistry registry,
        final PodTopology topology, final double zoneScore) {
        return new LocalityScorer(name, registry, topology, true, null, zoneScore);
    }

    /**
     * Near a fixed origin (e.g. the router's own node and zone).
     *
     * @param name      plugin name.
     * @param registry  pod ids of slots.
     * @param topology  pods' locations.
     * @param node      the origin's node, or null.
     * @param zone      the origin's zone, or null.
     * @param zoneScore score of the same zone on another node, in [0, 1].
     * @return the scorer.
     */
    public static LocalityScorer nearOrigin(final String name, final PodRegistry registry,
        final PodTopology topology, final String node, final String zone, final double zoneScore) {
        if (node == null && zone == null) {
            throw new IllegalArgumentException("locality scorer '" + name + "' needs the origin's node or zone (or "
                + "reference: prefill)");
        }
        return new LocalityScorer(name, registry, topology, false, new PodTopology.Location(node, zone), zoneScore);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return fromPrefill ? Set.of(Slots.PREFILL_PICK) : Set.of();
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        PodTopology.Location ref = origin;
        if (fromPrefill) {
            final PodPick pick = ctx.get(Slots.PREFILL_PICK);
            ref = pick.slot() == RoutingPlan.NO_POD ? null : topology.location(registry.podId(pick.slot()));
        }
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            scores[s] = ref == null ? 0.0 : score(ref, topology.location(registry.podId(s)));
        }
    }

    private double score(final PodTopology.Location ref, final PodTopology.Location pod) {
        if (pod == null) {
            return 0.0;
        }
        if (ref.node() != null && ref.node().equals(pod.node())) {
            return 1.0;
        }
        return ref.zone() != null && ref.zone().equals(pod.zone()) ? zoneScore : 0.0;
    }
}
