package io.kvidx.routing;

import io.kvidx.client.index.DataParallelRanks;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where each pod runs: its node and zone, by pod id, for the {@code locality} scorer. Filled by whoever knows (pod
 * discovery from the API server's pod objects, or code); the data-parallel ranks of a pod ({@code <pod>#<r>}) share
 * its location. A pod with no recorded location is "unknown": it is near nothing.
 *
 * <p><b>Note:</b> thread safe; written by the component that discovers pods, read by routing threads
 * (allocation-free lookups).
 */
public final class PodTopology {
    /**
     * A pod's location.
     *
     * @param node the node's name, or null when unknown.
     * @param zone the zone ({@code topology.kubernetes.io/zone}), or null when unknown.
     */
    public record Location(String node, String zone) {
    }

    private final Map<String, Location> byPod = new ConcurrentHashMap<>();

    /**
     * @param podId a pod's (base) id.
     * @param node  its node, or null.
     * @param zone  its zone, or null.
     * @return this.
     */
    public PodTopology put(final String podId, final String node, final String zone) {
        Objects.requireNonNull(podId, "podId");
        if (node == null && zone == null) {
            byPod.remove(podId);
        } else {
            byPod.put(podId, new Location(node, zone));
        }
        return this;
    }

    /**
     * Makes the recorded locations exactly those given (a discovery snapshot).
     *
     * @param locations pod id to location.
     */
    public void replaceAll(final Map<String, Location> locations) {
        byPod.keySet().retainAll(locations.keySet());
        byPod.putAll(locations);
    }

    /**
     * @param podId a pod id (a rank pod's id finds its pod's location).
     * @return its location, or null when unknown.
     */
    public Location location(final String podId) {
        if (podId == null) {
            return null;
        }
        final Location l = byPod.get(podId);
        return l != null || podId.indexOf(DataParallelRanks.SEPARATOR) < 0 ? l
            : byPod.get(DataParallelRanks.basePodId(podId));
    }

    /**
     * @return how many pods have a location.
     */
    public int size() {
        return byPod.size();
    }
}
