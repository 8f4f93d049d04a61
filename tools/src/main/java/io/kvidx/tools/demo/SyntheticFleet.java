package io.kvidx.tools.demo;

import io.kvidx.daemon.index.IndexWriter;

import java.util.Iterator;
import java.util.LinkedHashMap;

/**
 * Simulated inference pods feeding the index writer: each request lands on a pod (mostly its conversation's
 * home pod), the pod stores the request's blocks, and each pod keeps a fixed block budget with LRU eviction
 * like an engine's prefix cache (tail blocks are touched first so they are evicted first), removing evicted
 * blocks from the index.
 *
 * <p><b>Note:</b> single threaded: the demo's fleet thread is the writer of every simulated pod.
 */
public final class SyntheticFleet {
    private final IndexWriter writer;
    private final RequestStream workload;
    private final int[] slots;
    private final int budget;
    private final java.util.List<LinkedHashMap<Long, Boolean>> caches;
    private final long[] keys;
    private final long[] evicted;
    private long blocksStored;
    private long blocksRemoved;
    private long requests;

    /**
     * @param writer          index writer.
     * @param workload        request stream.
     * @param pods            simulated pods.
     * @param budgetPerPod    blocks each pod caches.
     * @param model           model name registered for the pods.
     */
    public SyntheticFleet(final IndexWriter writer, final RequestStream workload, final int pods,
        final int budgetPerPod, final String model) {
        if (pods < 1 || pods > 256 || budgetPerPod < workload.maxChain()) {
            throw new IllegalArgumentException("need 1..256 pods and a budget of at least one chain per pod");
        }
        this.writer = writer;
        this.workload = workload;
        this.budget = budgetPerPod;
        this.slots = new int[pods];
        this.caches = new java.util.ArrayList<>(pods);
        for (int p = 0; p < pods; p++) {
            slots[p] = writer.registerPod("demo-pod-" + p, model);
            caches.add(new LinkedHashMap<>(budgetPerPod * 2, 0.75f, true));
        }
        this.keys = new long[workload.maxChain()];
        this.evicted = new long[workload.maxChain() * 4];
    }

    /**
     * Serves one request: stores its chain on a pod and evicts beyond the pod's budget.
     *
     * @return blocks stored by this request.
     */
    public int step() {
        final int c = workload.nextConversation();
        final int length = workload.chain(c, keys);
        final int pod = workload.nextInt(10) < 8 ? c % slots.length : workload.nextInt(slots.length);
        final LinkedHashMap<Long, Boolean> cache = caches.get(pod);
        for (int i = length - 1; i >= 0; i--) {
            cache.put(keys[i], Boolean.TRUE);
        }
        writer.store(slots[pod], keys, 0, length);
        int n = 0;
        final Iterator<Long> eldest = cache.keySet().iterator();
        while (cache.size() > budget && eldest.hasNext()) {
            evicted[n++] = eldest.next();
            eldest.remove();
            if (n == evicted.length) {
                blocksRemoved += writer.remove(slots[pod], evicted, 0, n);
                n = 0;
            }
        }
        if (n > 0) {
            blocksRemoved += writer.remove(slots[pod], evicted, 0, n);
        }
        blocksStored += length;
        requests++;
        return length;
    }

    /**
     * @return blocks stored so far (including re-stores of held blocks).
     */
    public long blocksStored() {
        return blocksStored;
    }

    /**
     * @return blocks removed because a pod's cache evicted them.
     */
    public long blocksRemoved() {
        return blocksRemoved;
    }

    /**
     * @return requests served.
     */
    public long requests() {
        return requests;
    }

    /**
     * @return number of simulated pods.
     */
    public int pods() {
        return slots.length;
    }
}
