package io.kvidx.bench;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The naive baseline: a {@code ConcurrentHashMap<Long, long[]>} from block key to a pod bitmap as wide as the cell
 * it stands beside (1 word for a 64-pod cell, 4 words for a 256-pod cell), in the heap.
 *
 * <p>Its query is what an engineer writes first: one pass over the chain, intersecting the surviving pods with each
 * block's bitmap (boxed {@code Long} lookups); the pods that leave at block i hold i blocks; stop when none survive.
 * {@link #perPodScanView()} answers by the older N x P scan instead (for each pod, walk the chain from block 0 until
 * the pod misses): kept as an extra row only, nobody would write it.
 *
 * <p><b>Note:</b> loading is single-threaded; queries are not thread safe (one result buffer per instance).
 */
public final class NaiveStore implements QueryStore {
    private final ConcurrentHashMap<Long, long[]> map;
    private final int pods;
    private final int words;
    private final long heapBytes;
    private final boolean perPodScan;
    private final long[] all;
    private final DepthResult result;
    private final int[] depthByPod;
    private final String name;

    private NaiveStore(final ConcurrentHashMap<Long, long[]> map, final int pods, final int words,
        final long heapBytes, final boolean perPodScan, final String name) {
        this.map = map;
        this.pods = pods;
        this.words = words;
        this.heapBytes = heapBytes;
        this.perPodScan = perPodScan;
        this.name = name;
        this.all = new long[4];
        for (int p = 0; p < pods; p++) {
            all[p >>> 6] |= 1L << p;
        }
        this.result = new DepthResult(pods);
        this.depthByPod = new int[pods];
    }

    /**
     * Builds the map with bitmaps of 1 word (the 64-pod cell's width) when the workload has at most 64 pods, else
     * of 4 words.
     *
     * @param workload the workload.
     * @return the loaded store, named "naive".
     */
    public static NaiveStore load(final Workload workload) {
        return load(workload, workload.pods() <= 64 ? 1 : 4, "naive");
    }

    /**
     * Builds the map and estimates its heap size by the retained-heap difference around the build (forced full GCs
     * before and after; approximate).
     *
     * @param workload the workload.
     * @param words    bitmap words per key: 1 (64 pods) or 4 (256 pods), covering the workload's pods.
     * @param name     the name this store reports.
     * @return the loaded store.
     */
    public static NaiveStore load(final Workload workload, final int words, final String name) {
        if (words < 1 || words > 4 || words * 64 < workload.pods()) {
            throw new IllegalArgumentException(words + " bitmap words cannot hold " + workload.pods() + " pods");
        }
        final long before = HeapProbe.usedAfterGc();
        final ConcurrentHashMap<Long, long[]> map = new ConcurrentHashMap<>((int) Math.min(1 << 30,
            workload.blocks() * 4 / 3 + 16));
        workload.forEachHolding((pod, chain, depth) -> {
            final int word = pod >>> 6;
            final long bit = 1L << pod;
            for (int i = 0; i < depth; i++) {
                map.computeIfAbsent(chain[i], k -> new long[words])[word] |= bit;
            }
        });
        final long after = HeapProbe.usedAfterGc();
        return new NaiveStore(map, workload.pods(), words, Math.max(0, after - before), false, name);
    }

    /**
     * @return a store over the same map that answers by the N x P per-pod scan, named "naive_per_pod_scan";
     *         closing it leaves the map alone.
     */
    public NaiveStore perPodScanView() {
        return new NaiveStore(map, pods, words, heapBytes, true, "naive_per_pod_scan");
    }

    /**
     * @return the map (shared with the Chronicle loader, which copies it).
     */
    ConcurrentHashMap<Long, long[]> map() {
        return map;
    }

    /**
     * @return bitmap words per key.
     */
    int words() {
        return words;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int query(final long[] keys, final int length) {
        return perPodScan ? scanPerPod(keys, length) : onePass(keys, length);
    }

    /**
     * One pass over the chain: the pods that survive block i-1 and lack block i hold i blocks. Written per width
     * (one word, four words), as anyone tuning it a little would.
     */
    private int onePass(final long[] chain, final int n) {
        result.reset();
        return words == 1 ? onePass1(chain, n) : onePass4(chain, n);
    }

    private int onePass1(final long[] chain, final int n) {
        final ConcurrentHashMap<Long, long[]> m = map;
        final DepthResult r = result;
        long s = all[0];
        int max = 0;
        for (int i = 0; i < n; i++) {
            final long[] bitmap = m.get(chain[i]);
            final long keep = bitmap == null ? 0 : s & bitmap[0];
            if (i > 0 && keep != s) {
                r.addWord(s & ~keep, 0, i);
                max = i;
            }
            s = keep;
            if (s == 0) {
                return max;
            }
        }
        if (n > 0) {
            r.addWord(s, 0, n);
            max = n;
        }
        return max;
    }

    private int onePass4(final long[] chain, final int n) {
        final ConcurrentHashMap<Long, long[]> m = map;
        final DepthResult r = result;
        long s0 = all[0];
        long s1 = all[1];
        long s2 = all[2];
        long s3 = all[3];
        int max = 0;
        for (int i = 0; i < n; i++) {
            final long[] b = m.get(chain[i]);
            final long k0 = b == null ? 0 : s0 & b[0];
            final long k1 = b == null ? 0 : s1 & b[1];
            final long k2 = b == null ? 0 : s2 & b[2];
            final long k3 = b == null ? 0 : s3 & b[3];
            if (i > 0 && ((k0 ^ s0) | (k1 ^ s1) | (k2 ^ s2) | (k3 ^ s3)) != 0) {
                r.addAll(s0 & ~k0, s1 & ~k1, s2 & ~k2, s3 & ~k3, i);
                max = i;
            }
            s0 = k0;
            s1 = k1;
            s2 = k2;
            s3 = k3;
            if ((s0 | s1 | s2 | s3) == 0) {
                return max;
            }
        }
        if (n > 0) {
            r.addAll(s0, s1, s2, s3, n);
            max = n;
        }
        return max;
    }

    /**
     * The N x P scan: for each pod, walk the chain from block 0 until it misses.
     */
    private int scanPerPod(final long[] chain, final int n) {
        final ConcurrentHashMap<Long, long[]> m = map;
        final int[] depths = depthByPod;
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
        return perPodScan ? depthByPod[pod] : result.depthOf(pod);
    }

    @Override
    public long footprintBytes() {
        return heapBytes;
    }

    @Override
    public void close() {
        if (!perPodScan) {
            map.clear();
        }
    }
}
