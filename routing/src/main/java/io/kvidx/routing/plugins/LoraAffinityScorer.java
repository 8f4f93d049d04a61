package io.kvidx.routing.plugins;

import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Scorer;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.Objects;
import java.util.Set;

/**
 * For a request naming a LoRA adapter: 1 for pods that have it loaded, {@code roomScore} (default 0.5) for pods
 * that can still load an adapter, 0 for the rest. Every pod scores 1 for a request without adapter. Reads
 * {@link Slots#REQUEST}.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class LoraAffinityScorer implements Scorer {
    /** Default score of a pod with room to load the adapter. */
    public static final double ROOM_SCORE_DEFAULT = 0.5;

    private final String name;
    private final PodRegistry registry;
    private final double roomScore;

    /**
     * @param name      plugin name.
     * @param registry  adapters per pod.
     * @param roomScore score of a pod that can load the adapter, in [0, 1].
     */
    public LoraAffinityScorer(final String name, final PodRegistry registry, final double roomScore) {
        if (!(roomScore >= 0 && roomScore <= 1)) {
            throw new IllegalArgumentException("roomScore must be in [0, 1]: " + roomScore);
        }
        this.name = name;
        this.registry = Objects.requireNonNull(registry, "registry");
        this.roomScore = roomScore;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.REQUEST);
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        final String lora = ctx.get(Slots.REQUEST).lora();
        final int id = lora == null ? -1 : registry.loraId(lora);
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            if (lora == null || registry.hasLora(s, id)) {
                scores[s] = 1.0;
            } else {
                scores[s] = registry.loraCount(s) < registry.maxLoras(s) ? roomScore : 0.0;
            }
        }
    }
}
