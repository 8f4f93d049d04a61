package io.kvidx.bench;

/**
 * Checks that stores agree with the naive baseline (the reference) on per-pod depths, so a benchmark never times a
 * store that answers wrongly.
 */
final class Verifier {
    private Verifier() {
    }

    /**
     * @param workload  the workload all stores were loaded with.
     * @param reference the reference store.
     * @param store     the store to check.
     * @param queries   how many queries of the query order to compare.
     * @throws IllegalStateException on the first disagreement.
     */
    static void check(final Workload workload, final QueryStore reference, final QueryStore store, final int queries) {
        final int[] order = workload.queryOrder();
        final int n = Math.min(queries, order.length);
        for (int i = 0; i < n; i++) {
            final long[] chain = workload.chain(order[i]);
            final int expectedMax = reference.query(chain, chain.length);
            final int max = store.query(chain, chain.length);
            if (max != expectedMax) {
                throw new IllegalStateException(store.name() + " answers max depth " + max + " for query " + i
                    + ", reference " + reference.name() + " answers " + expectedMax);
            }
            for (int p = 0; p < workload.pods(); p++) {
                if (store.depthOf(p) != reference.depthOf(p)) {
                    throw new IllegalStateException(store.name() + " answers depth " + store.depthOf(p) + " for pod "
                        + p + " in query " + i + ", reference " + reference.name() + " answers "
                        + reference.depthOf(p));
                }
            }
        }
    }
}
