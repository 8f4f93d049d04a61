package io.kvidx.routing;

import java.util.Set;

/**
 * A step of a selection pass. Plugins declare the {@link Slot}s they read and write so that a {@link Profile}
 * can check the data flow when it is built.
 *
 * <p><b>Note:</b> a plugin instance is shared by every thread routing through its profile: it keeps per-decision
 * state only in the {@link RoutingContext} and any shared state thread safe.
 */
public interface RoutingPlugin {
    /**
     * @return the plugin's name in its profile (unique there), used in validation errors and counters.
     */
    String name();

    /**
     * @return the stage the plugin runs in.
     */
    Stage stage();

    /**
     * @return slots this plugin reads.
     */
    default Set<Slot<?>> reads() {
        return Set.of();
    }

    /**
     * @return slots this plugin writes.
     */
    default Set<Slot<?>> writes() {
        return Set.of();
    }

    /**
     * @return true when the plugin needs the shared-memory index; such plugins are skipped while the selector
     * falls back because the index is missing or its writer is stale.
     */
    default boolean needsIndex() {
        return false;
    }

    /**
     * Whether a decision through this plugin may wait: a network call with a timeout (the LMCache controller's
     * prefix lookup) rather than bounded memory reads. A server that decides on an event loop runs the decisions of a
     * workflow holding such a plugin on threads of their own; such a plugin answers a replan of the same request
     * (same {@link RoutingContext#requestNumber()}) without waiting again.
     *
     * @return true when a call of the plugin may wait.
     */
    default boolean mayBlock() {
        return false;
    }
}
