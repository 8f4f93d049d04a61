package io.kvidx.routing.plugins;

import io.kvidx.routing.LongValue;
import io.kvidx.routing.Picker;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.Arrays;
import java.util.Set;

/**
 * Consistent hashing with virtual nodes (default 160 per pod): each registered pod owns {@code virtualNodes}
 * points on a 64-bit ring (hashes of its pod id and the point's number); the request's {@link Slots#HASH_KEY}
 * goes to the first point at or after it that belongs to a candidate. Adding or removing a pod moves only the
 * keys next to its points. Without a hash key it picks a random candidate.
 *
 * <p>The ring is rebuilt when the registry's pod set changes (allocates, once per change).
 *
 * <p><b>Note:</b> thread safe; the ring is an immutable snapshot swapped atomically.
 */
public final class ConsistentHashPicker implements Picker {
    /** Default virtual nodes per pod. */
    public static final int VIRTUAL_NODES_DEFAULT = 160;

    private final String name;
    private final PodRegistry registry;
    private final int virtualNodes;
    private volatile Ring ring;

    private record Ring(long version, long[] points, int[] owners) {
    }

    /**
     * @param name         plugin name.
     * @param registry     the pods (ids name the ring points).
     * @param virtualNodes points per pod, > 0.
     */
    public ConsistentHashPicker(final String name, final PodRegistry registry, final int virtualNodes) {
        if (virtualNodes <= 0) {
            throw new IllegalArgumentException("virtualNodes must be > 0: " + virtualNodes);
        }
        this.name = name;
        this.registry = registry;
        this.virtualNodes = virtualNodes;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.HASH_KEY);
    }

    private Ring ring() {
        final long v = registry.version();
        Ring r = ring;
        if (r == null || r.version != v) {
            r = build(v);
            ring = r;
        }
        return r;
    }

    private Ring build(final long version) {
        int pods = 0;
        for (int w = 0; w < 4; w++) {
            pods += Long.bitCount(registry.registeredWord(w));
        }
        final long[] points = new long[pods * virtualNodes];
        final int[] owners = new int[points.length];
        int k = 0;
        for (int slot = 0; slot < PodRegistry.MAX_PODS && k < points.length; slot++) {
            if (registry.isRegistered(slot)) {
                final String id = registry.podId(slot);
                final long base = RoutingContext.hash(id == null ? Integer.toString(slot) : id);
                for (int v = 0; v < virtualNodes; v++) {
                    points[k] = RoutingContext.mix(base + v * 0x9E3779B97F4A7C15L);
                    owners[k] = slot;
                    k++;
                }
            }
        }
        final long[] sorted = Arrays.copyOf(points, k);
        final Long[] idx = new Long[k];
        for (int i = 0; i < k; i++) {
            idx[i] = (long) i;
        }
        Arrays.sort(idx, (x, y) -> Long.compare(points[(int) (long) x], points[(int) (long) y]));
        final int[] sortedOwners = new int[k];
        for (int i = 0; i < k; i++) {
            sorted[i] = points[(int) (long) idx[i]];
            sortedOwners[i] = owners[(int) (long) idx[i]];
        }
        return new Ring(version, sorted, sortedOwners);
    }

    @Override
    public int pick(final RoutingContext ctx, final double[] totals) {
        final LongValue key = ctx.get(Slots.HASH_KEY);
        if (!key.isPresent()) {
            return ctx.candidateAt(ctx.nextRandomInt(ctx.candidateCount()));
        }
        final Ring r = ring();
        final long[] points = r.points;
        final int n = points.length;
        if (n == 0) {
            return ctx.candidateAt(ctx.nextRandomInt(ctx.candidateCount()));
        }
        int i = Arrays.binarySearch(points, key.get());
        if (i < 0) {
            i = -i - 1;
        }
        for (int step = 0; step < n; step++) {
            final int owner = r.owners[(i + step) % n];
            if (ctx.isCandidate(owner)) {
                return owner;
            }
        }
        return ctx.candidateAt(ctx.nextRandomInt(ctx.candidateCount()));
    }
}
