/**
 * The decision layer a router links: Prepare, Filter, Score, Pick over the shared-memory index, then Execute.
 *
 * <p>Plugins exchange data through typed {@link io.kvidx.client.routing.Slot}s on a per-thread
 * {@link io.kvidx.client.routing.RoutingContext}; a {@link io.kvidx.client.routing.Profile} is validated when it is
 * built; a {@link io.kvidx.client.routing.Selector} runs one pass; a {@link io.kvidx.client.routing.Workflow}
 * composes selectors into a {@link io.kvidx.client.routing.RoutingPlan}; an
 * {@link io.kvidx.client.routing.exec.Executor} carries the plan out. {@link io.kvidx.client.routing.Router} and
 * {@link io.kvidx.client.routing.RoutingProfiles} are the entry points. A decision allocates nothing. JDK only,
 * except the optional YAML loader (snakeyaml-engine). See docs/routing.md.
 */
package io.kvidx.client.routing;
