package io.kvidx.routing.plugins;

import io.kvidx.routing.Filter;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.Objects;
import java.util.Set;

/**
 * Keeps pods serving the request's model (pods registered without a model serve any). A request without a model
 * keeps every pod. Reads {@link Slots#REQUEST}.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class ModelFilter implements Filter {
    private final String name;
    private final PodRegistry registry;

    /**
     * @param name     plugin name.
     * @param registry pod models.
     */
    public ModelFilter(final String name, final PodRegistry registry) {
        this.name = name;
        this.registry = Objects.requireNonNull(registry, "registry");
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
        final String model = ctx.get(Slots.REQUEST).model();
        if (model == null) {
            return;
        }
        for (int s = ctx.nextCandidate(0); s >= 0; s = ctx.nextCandidate(s + 1)) {
            final String m = registry.model(s);
            if (m != null && !m.equals(model)) {
                ctx.removeCandidate(s);
            }
        }
    }
}
