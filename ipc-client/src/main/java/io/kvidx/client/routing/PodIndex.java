package io.kvidx.client.routing;

/**
 * The decision layer's view of the block index: which pods are alive, and how deep a chain each pod holds. The
 * production implementation is {@link IndexReaderPodIndex} over the shared-memory
 * {@link io.kvidx.client.index.IndexReader}; the interface keeps the plugins testable against a reference model.
 *
 * <p><b>Note:</b> implementations are thread safe; each thread queries through its own {@link Cursor}.
 */
public interface PodIndex {
    /**
     * @return true when the index is mapped and its writer's heartbeat is fresh. When false, selectors fall back.
     */
    boolean isAvailable();

    /**
     * @param word 0..3.
     * @return that word of the alive bitmap (0 when the index is not available).
     */
    long aliveWord(int word);

    /**
     * @param slot pod slot.
     * @return true when the pod's alive bit is set.
     */
    default boolean isAlive(final int slot) {
        return (aliveWord(slot >>> 6) & (1L << slot)) != 0;
    }

    /**
     * @return the longest chain a query considers (longer chains are cut to it).
     */
    int maxChainLength();

    /**
     * @return tokens per block the index's keys were made with, or 0 when unknown (e.g. not attached yet).
     */
    default int blockSize() {
        return 0;
    }

    /**
     * Reads a pod table entry. Allocates: not for the decision path.
     *
     * @param slot pod slot.
     * @return the pod's id and model, or null when the slot is free or the index unavailable.
     */
    PodDescription describe(int slot);

    /**
     * @return a new per-thread query cursor (holds the query's scratch buffers).
     */
    Cursor newCursor();

    /**
     * A pod as the index knows it.
     *
     * @param slot  pod slot.
     * @param podId pod id.
     * @param model model name.
     */
    record PodDescription(int slot, String podId, String model) {
    }

    /**
     * A per-thread handle for prefix queries.
     *
     * <p><b>Note:</b> not thread safe.
     */
    interface Cursor {
        /**
         * Writes, for every pod in {@code candidates}, how many leading blocks of the chain it holds (0 for none);
         * other entries of {@code depthBySlot} are left as they are.
         *
         * @param keys        the chain.
         * @param length      chain length (cut to {@link #maxChainLength()}).
         * @param candidates  pods to answer for: a 256-bit bitmap in four words.
         * @param depthBySlot output by slot.
         * @return the deepest depth found.
         * @throws io.kvidx.client.index.IndexException when the index fails (e.g. stale writer); the selector
         *                                              then falls back.
         */
        int prefixDepths(long[] keys, int length, long[] candidates, int[] depthBySlot);
    }
}
