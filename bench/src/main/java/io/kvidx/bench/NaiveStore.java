package io.kvidx.bench;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The naive baseline: a {@code ConcurrentHashMap<Long, long[]>} from block key to a 4-word pod bitmap, queried by
 * the N x P scan: for each pod, walk the chain from its first block until the pod misses (boxed lookups).
 *
 * <p><b>Note:</b> loading is single-threaded; queries are not thread safe (one result buffer).
 */
public final class NaiveStore implements QueryStore {
    private final ConcurrentHashMap<Long, long[]> map;
    private final int pods;
    private final int[] depthByPod;
    private final long heapBytes;

    private NaiveStore(final ConcurrentHashMap<Long, long[]> map, final int pods, final long heapBytes) {
        this.map = map;
        this.pods = pods;
        this.depthByPod = new int[pods];
        this.heapBytes = heapBytes;
    }

    /**
     * Builds the map from a workload and estimates its heap size by the retained-heap difference around the
     * build (forced full GCs before and after; approximate).
     *
     * @param workload the workload.
     * @return the loaded store.
     */
    public static NaiveStore load(final Workload workload) {
        final long before = HeapProbe.usedAfterGc();
        final ConcurrentHashMap<Long, long[]> map = new ConcurrentHashMap<>((int) Math.min(1 << 30,
            workload.blocks() * 4 / 3 + 16));
        workload.forEachHolding((pod, chain, depth) -> {
            final int word = pod >>> 6;
            final long bit = 1L << pod;
            for (int i = 0; i < depth; i++) {
                map.computeIfAbsent(chain[i], k -> new long[4])[word] |= bit;
            }
        });
        final long after = HeapProbe.usedAfterGc();
        return new NaiveStore(map, workload.pods(), Math.max(0, after - before));
    }

    /**
     * @return the map (shared with the Chronicle loader, which copies it).
     */
    ConcurrentHashMap<Long, long[]> map() {
        return map;
    }

    @Override
    public String name() {
        return "naive";
    }

    @Override
    public int query(final long[] chain) {
        final ConcurrentHashMap<Long, long[]> m = map;
        final int[] depths = depthByPod;
        final int n = chain.length;
        int max = 0;
        for (int p = 0; p < pods; p++) {
            final int word = p >>> 6;
            final long bit = 1L << p;
            int d = 0;
            while (d < n) {
                final long[] bitmap = m.get(chain[d]);
                if (bitmap == null || (bitmap[word] & bit) == 0) {
                    break;
                }
                d++;
            }
            depths[p] = d;
            max = Math.max(max, d);
        }
        return max;
    }

    @Override
    public int depthOf(final int pod) {
        return depthByPod[pod];
    }

    @Override
    public long footprintBytes() {
        return heapBytes;
    }

    @Override
    public void close() {
        map.clear();
    }
}
