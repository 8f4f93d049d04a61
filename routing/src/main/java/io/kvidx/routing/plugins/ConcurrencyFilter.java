package io.kvidx.routing.plugins;

import io.kvidx.routing.Filter;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;

import java.util.Objects;

/**
 * Removes pods already running as many requests as their cap allows: the pod's own cap
 * ({@link PodRegistry#maxConcurrency(int, int)}) or, when it has none, this filter's default cap (0: no cap).
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class ConcurrencyFilter implements Filter {
    private final String name;
    private final PodRegistry registry;
    private final int defaultCap;

    /**
     * @param name       plugin name.
     * @param registry   running requests and caps.
     * @param defaultCap cap for pods without their own; 0 for none.
     */
    public ConcurrencyFilter(final String name, final PodRegistry registry, final int defaultCap) {
        if (defaultCap < 0) {
            throw new IllegalArgumentException("defaultCap must be >= 0: " + defaultCap);
        }
        this.name = name;
        this.registry = Objects.requireNonNull(registry, "registry");
        this.defaultCap = defaultCap;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void filter(final RoutingContext ctx) {
        for (int s = ctx.nextCandidate(0); s >= 0; s = ctx.nextCandidate(s + 1)) {
            final int own = registry.maxConcurrency(s);
            final int cap = own > 0 ? own : defaultCap;
            if (cap > 0 && registry.running(s) >= cap) {
                ctx.removeCandidate(s);
            }
        }
    }
}
