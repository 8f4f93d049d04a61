package io.kvidx.routing;

/**
 * Shared setup for plugin tests: a registry of n pods and a context whose candidates are those pods.
 */
final class PluginTestSupport {
    private PluginTestSupport() {
    }

    static PodRegistry registry(final int pods) {
        final PodRegistry r = new PodRegistry();
        for (int s = 0; s < pods; s++) {
            r.register(s, "pod-" + s, "m", PodRole.BOTH, null);
        }
        return r;
    }

    static RoutingContext context(final PodRegistry registry, final PodIndex index) {
        final RoutingContext ctx = new RoutingContext(index == null ? null : index.newCursor(), 42);
        ctx.reset();
        ctx.beginSelection(registry);
        return ctx;
    }
}
