package io.kvidx.routing;

import io.kvidx.client.tiers.TierMap;

import java.util.Objects;

/**
 * The host tier map ({@link TierMap}, the index client's reader of the daemon's tier file) as the tier-weighted
 * scorer's {@link TierLookup}: the adapter lives on the routing side so that the shared-memory
 * reader knows nothing of its consumers.
 *
 * <p><b>Note:</b> thread safe, as the tier map is; lookups are allocation free once a file is mapped.
 */
public final class TierMapLookup implements TierLookup, AutoCloseable {
    private final TierMap tiers;

    /**
     * @param tiers the tier map to read.
     */
    public TierMapLookup(final TierMap tiers) {
        this.tiers = Objects.requireNonNull(tiers, "tiers");
    }

    /**
     * The tier map beside a router's index: same directory and cell; slot generations from the registry (which
     * learns them from the index's pod table); a region left locked by a daemon whose index heartbeat stopped counts
     * as an unknown tier.
     *
     * @param index    the index.
     * @param registry the router's pods.
     * @return the lookup (attached when the file exists).
     */
    public static TierMapLookup nextTo(final IndexReaderPodIndex index, final PodRegistry registry) {
        return new TierMapLookup(TierMap.nextTo(index.indexFile(), registry::generation, index::isWriterStale));
    }

    @Override
    public int tierOf(final int slot, final long key) {
        return tiers.tierOf(slot, key);
    }

    /**
     * @return the tier map read.
     */
    public TierMap tierMap() {
        return tiers;
    }

    @Override
    public void close() {
        tiers.close();
    }
}
