package io.kvidx.routing.plugins;

import io.kvidx.routing.Filter;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodRole;
import io.kvidx.routing.RoutingContext;

import java.util.Objects;

/**
 * Keeps pods whose role serves the stage: {@link PodRole#PREFILL} keeps prefill and both, {@link PodRole#DECODE}
 * keeps decode and both, {@link PodRole#BOTH} keeps every pod.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class RoleFilter implements Filter {
    private final String name;
    private final PodRegistry registry;
    private final PodRole role;

    /**
     * @param name     plugin name.
     * @param registry pod roles.
     * @param role     role the stage needs.
     */
    public RoleFilter(final String name, final PodRegistry registry, final PodRole role) {
        this.name = name;
        this.registry = Objects.requireNonNull(registry, "registry");
        this.role = Objects.requireNonNull(role, "role");
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void filter(final RoutingContext ctx) {
        for (int s = ctx.nextCandidate(0); s >= 0; s = ctx.nextCandidate(s + 1)) {
            if (!registry.role(s).serves(role)) {
                ctx.removeCandidate(s);
            }
        }
    }
}
