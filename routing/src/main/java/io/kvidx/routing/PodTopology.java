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
 * (allocation-free once a rank pod was looked up: its location is cached; a lookup that races a write drops what it
 * cached).
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

    /** A rank pod's lookup that found no location (cached like one that did). */
    private static final Location UNKNOWN = new Location(null, null);

    private final Map<String, Location> byPod = new ConcurrentHashMap<>();
    /**
     * Rank pods' ({@code <pod>#<r>}) locations, learnt at their first lookup so that later ones do not cut the id
     * (allocation-free); emptied whenever a location changes.
     */
    private final Map<String, Location> byRankPod = new ConcurrentHashMap<>();
    /** Bumped by every write before it empties {@link #byRankPod}: a lookup that raced a write drops what it cached. */
    private volatile long version;

    /**
     * @param podId a pod's (base) id.
     * @param node  its node, or null.
     * @param zone  its zone, or null.
     * @return this.
     */
    public synchronized PodTopology put(final String podId, final String node, final String zone) {
        Objects.requireNonNull(podId, "podId");
        if (node == null && zone == null) {
            byPod.remove(podId);
        } else {
            byPod.put(podId, new Location(node, zone));
        }
        version++;
        byRankPod.clear();
        return this;
    }

    /**
     * Makes the recorded locations exactly those given (a discovery snapshot).
     *
     * @param locations pod id to location.
     */
    public synchronized void replaceAll(final Map<String, Location> locations) {
        byPod.keySet().retainAll(locations.keySet());
        byPod.putAll(locations);
        version++;
        byRankPod.clear();
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
        if (l != null || podId.indexOf(DataParallelRanks.SEPARATOR) < 0) {
            return l;
        }
        Location r = byRankPod.get(podId);
        if (r == null) {
            final long v = version;
            final Location base = byPod.get(DataParallelRanks.basePodId(podId));
            r = base == null ? UNKNOWN : base;
            byRankPod.put(podId, r);
            if (version != v) {
                byRankPod.remove(podId, r); // a write came between: the next lookup learns again
            }
        }
        return r == UNKNOWN ? null : r;
    }

    /**
     * @return how many pods have a location.
     */
    public int size() {
        return byPod.size();
    }
}
