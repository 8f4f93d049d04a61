/**
 * The host tier map: where each pod holds the blocks the index says it holds (GPU, CPU, disk; local or remote),
 * a shared-memory file beside the index ({@link io.kvidx.client.tiers.TierMapDescriptor}), read by routers through
 * {@link io.kvidx.client.tiers.TierMapReader} and {@link io.kvidx.client.tiers.TierMap}. It is consulted for a few
 * top candidates or the winner of a decision, never on the index's query path. JDK only.
 */
package io.kvidx.client.tiers;
