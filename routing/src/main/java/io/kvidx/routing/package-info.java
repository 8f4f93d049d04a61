/**
 * The decision layer a router links: Prepare, Filter, Score, Pick over the shared-memory index, then Execute.
 *
 * <p>Plugins exchange data through typed {@link io.kvidx.routing.Slot}s on a per-thread
 * {@link io.kvidx.routing.RoutingContext}; a {@link io.kvidx.routing.Profile} is validated when it is
 * built; a {@link io.kvidx.routing.Selector} runs one pass; a {@link io.kvidx.routing.Workflow}
 * composes selectors into a {@link io.kvidx.routing.RoutingPlan}; an
 * {@link io.kvidx.routing.exec.Executor} carries the plan out. {@link io.kvidx.routing.Router} and
 * {@link io.kvidx.routing.profiles.RoutingProfiles} are the entry points. A decision allocates nothing. JDK only,
 * except the optional YAML loader (snakeyaml-engine). See docs/routing.md.
 */
package io.kvidx.routing;
