package io.kvidx.routing;

import io.kvidx.client.tiers.TierMap;

/**
 * Where a pod holds a block it holds, for the tier-weighted cache-affinity scorer and the executors' cache hints:
 * in product code the host tier map ({@link TierMapLookup}); tests give their own.
 *
 * <p><b>Note:</b> implementations are shared by routing threads and must be thread safe and allocation free.
 */
@FunctionalInterface
public interface TierLookup {
    /** GPU memory. */
    int GPU = TierMap.GPU;
    /** CPU memory. */
    int CPU = TierMap.CPU;
    /** Local disk or remote. */
    int DISK = TierMap.DISK;

    /**
     * @param slot pod slot.
     * @param key  block key the pod holds.
     * @return {@link #GPU}, {@link #CPU} or {@link #DISK}.
     */
    int tierOf(int slot, long key);
}
