package io.kvidx.routing;

/**
 * The decision layer's view of the block index: which pods are alive, and how deep a chain each pod holds. The
 * production implementation is {@link IndexReaderPodIndex} over the shared-memory
 * {@link io.kvidx.client.index.IndexReader}; the interface keeps the plugins testable against a reference model.
 *
 * <p><b>Note:</b> implementations are thread safe; each thread queries through its own {@link Cursor}.
 */
public interface PodIndex {
    /** {@link #podTableVersion()} while the index is not available. */
    long NO_POD_TABLE_VERSION = -1;

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
     * A number that changes whenever a slot of the pod table may have been given to another pod: the index's pod
     * table version (layout 3.1), distinct for each file an implementation maps. Load it after the alive words and
     * query answers it is to vouch for; {@link PodRegistry} re-learns the pods when it changes. Allocation-free.
     *
     * @return the pod table version, or {@link #NO_POD_TABLE_VERSION} while the index is not available.
     */
    long podTableVersion();

    /**
     * Reads a pod table entry. Allocates: not for the decision path.
     *
     * @param slot pod slot.
     * @return the pod's id, model, generation and state, or null when the slot is free or the index unavailable.
     * @throws io.kvidx.client.index.IndexException when the entry cannot be read in time (e.g. it stays locked).
     */
    PodDescription describe(int slot);

    /**
     * @return a new per-thread query cursor (holds the query's scratch buffers).
     */
    Cursor newCursor();

    /**
     * A pod as the index knows it.
     *
     * @param slot       pod slot.
     * @param podId      pod id.
     * @param model      model name.
     * @param generation times the slot was given to a pod, this pod included: a slot's identity is (slot,
     *                   generation).
     * @param state      {@code IndexDescriptor.POD_STATE_ALIVE} or {@code POD_STATE_DRAINING} (down, its bits
     *                   being swept).
     * @param suspect    the pod table's suspect flag (layout 3.2): the daemon could not keep the pod's state
     *                   complete and has not resynced it since.
     */
    record PodDescription(int slot, String podId, String model, int generation, int state, boolean suspect) {
        /**
         * A pod that is not suspect.
         *
         * @param slot       pod slot.
         * @param podId      pod id.
         * @param model      model name.
         * @param generation times the slot was given to a pod.
         * @param state      pod state.
         */
        public PodDescription(final int slot, final String podId, final String model, final int generation,
            final int state) {
            this(slot, podId, model, generation, state, false);
        }
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
         * @throws io.kvidx.client.index.IndexException when the index fails (a stale writer, a shard busy past the
         *                                              read bound, the index closed or replaced meanwhile); the
         *                                              selector then falls back.
         */
        int prefixDepths(long[] keys, int length, long[] candidates, int[] depthBySlot);
    }
}
