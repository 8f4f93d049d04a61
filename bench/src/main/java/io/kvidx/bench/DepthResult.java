package io.kvidx.bench;

/**
 * Caller-owned per-pod depth buffer for the baseline stores: reset cost is proportional to the pods it touched.
 *
 * <p><b>Note:</b> not thread safe.
 */
final class DepthResult {
    private final int[] depthByPod;
    private final int[] touched;
    private int count;

    DepthResult(final int pods) {
        depthByPod = new int[pods];
        touched = new int[pods];
    }

    void reset() {
        final int[] d = depthByPod;
        final int[] t = touched;
        for (int i = 0, n = count; i < n; i++) {
            d[t[i]] = 0;
        }
        count = 0;
    }

    /**
     * Records a depth for every pod whose bit is set in the 4-word mask.
     */
    void addAll(final long w0, final long w1, final long w2, final long w3, final int depth) {
        if (depth > 0) {
            addWord(w0, 0, depth);
            addWord(w1, 64, depth);
            addWord(w2, 128, depth);
            addWord(w3, 192, depth);
        }
    }

    /**
     * Records a depth for every pod whose bit is set in one word of a pod set.
     *
     * @param word  the word's pod bits.
     * @param base  the pod of the word's bit 0 (0, 64, 128 or 192).
     * @param depth the depth, greater than 0 (pods not recorded answer 0).
     */
    void addWord(final long word, final int base, final int depth) {
        long w = word;
        while (w != 0) {
            final int pod = base + Long.numberOfTrailingZeros(w);
            w &= w - 1;
            touched[count++] = pod;
            depthByPod[pod] = depth;
        }
    }

    int depthOf(final int pod) {
        return depthByPod[pod];
    }
}
