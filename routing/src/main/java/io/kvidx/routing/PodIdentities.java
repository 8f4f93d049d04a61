package io.kvidx.routing;

import java.net.URI;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The {@link PodRegistry}'s lookups of who each slot's pod is: its id, model, endpoint and role, as the registry
 * last learnt them (by hand or from the index's pod table, see {@link PodTableSync}).
 *
 * <p><b>Note:</b> written only under the registry's lock ({@link #learn}); read by any thread without locks,
 * allocation-free.
 */
final class PodIdentities {
    private static final PodRole[] ROLES = PodRole.values();

    private final AtomicIntegerArray role = new AtomicIntegerArray(PodRegistry.MAX_PODS);
    private final AtomicReferenceArray<String> podIds = new AtomicReferenceArray<>(PodRegistry.MAX_PODS);
    private final AtomicReferenceArray<String> models = new AtomicReferenceArray<>(PodRegistry.MAX_PODS);
    private final AtomicReferenceArray<URI> endpoints = new AtomicReferenceArray<>(PodRegistry.MAX_PODS);
    private final AtomicLongArray idHashes = new AtomicLongArray(PodRegistry.MAX_PODS);

    /** Records a slot's pod. Under the registry's lock. */
    void learn(final int slot, final String podId, final String model, final PodRole role, final URI endpoint) {
        idHashes.set(slot, RoutingContext.hash(podId));
        podIds.set(slot, podId);
        models.set(slot, model);
        endpoints.set(slot, endpoint);
        this.role.set(slot, role.ordinal());
    }

    /**
     * The slot of a registered pod by id. Linear scan: cold path, under the registry's lock.
     *
     * @param podId pod id.
     * @param table which slots are registered.
     * @return its slot, or -1 when no registered pod has that id.
     */
    int slotOf(final String podId, final PodTableSync table) {
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            if (table.isRegistered(slot) && podId.equals(podIds.get(slot))) {
                return slot;
            }
        }
        return -1;
    }

    String podId(final int slot) {
        return podIds.get(slot);
    }

    long idHash(final int slot) {
        return idHashes.get(slot);
    }

    String model(final int slot) {
        return models.get(slot);
    }

    URI endpoint(final int slot) {
        return endpoints.get(slot);
    }

    PodRole role(final int slot) {
        return ROLES[role.getOpaque(slot)];
    }
}
