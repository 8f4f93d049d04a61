package io.kvidx.routing.plugins;

import io.kvidx.routing.Filter;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.Objects;
import java.util.Set;

/**
 * For a request naming a LoRA adapter, keeps the pods that have it loaded, and (unless strict) the pods that can
 * still load one more adapter. A request without an adapter keeps every pod. Reads {@link Slots#REQUEST}.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class LoraFilter implements Filter {
    private final String name;
    private final PodRegistry registry;
    private final boolean strict;

    /**
     * @param name     plugin name.
     * @param registry adapters per pod.
     * @param strict   true to keep only pods that have the adapter loaded.
     */
    public LoraFilter(final String name, final PodRegistry registry, final boolean strict) {
        this.name = name;
        this.registry = Objects.requireNonNull(registry, "registry");
        this.strict = strict;
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
    public void filter(final RoutingContext ctx) {
        final String lora = ctx.get(Slots.REQUEST).lora();
        if (lora == null) {
            return;
        }
        final int id = registry.loraId(lora);
        for (int s = ctx.nextCandidate(0); s >= 0; s = ctx.nextCandidate(s + 1)) {
            final boolean loaded = registry.hasLora(s, id);
            final boolean room = !strict && registry.loraCount(s) < registry.maxLoras(s);
            if (!loaded && !room) {
                ctx.removeCandidate(s);
            }
        }
    }
}
