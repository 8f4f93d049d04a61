package io.kvidx.client.index;

import java.nio.charset.StandardCharsets;

/**
 * Pod ids of data-parallel ranks. An engine run with data parallelism is one engine per rank, each with its own KV
 * cache; the daemon gives each (pod, rank) its own slot in the index's pod table: rank 0 (or none) keeps the pod's
 * plain id, rank {@code r > 0} is registered as {@code <pod>#<r>}. Routers see those ids in
 * {@link IndexReader#pod(int)} and the routing layer's pod registry; its HTTP executors send a request for
 * {@code <pod>#<r>} to the pod's own URL with the header {@link #HEADER} (see docs/routing.md).
 *
 * <p>A pod id that ends in {@code #} followed by a decimal rank in 1..{@link #MAX_RANK} without a leading zero is
 * read as a rank id; any other id (including one with a {@code #} elsewhere) is a plain pod.
 *
 * <p><b>Note:</b> stateless; thread safe.
 */
public final class DataParallelRanks {
    /** Largest rank accepted; a larger one in an event is absurd (dropped to the plain pod, counted). */
    public static final int MAX_RANK = 1024;
    /** Separates the pod id from the rank. */
    public static final char SEPARATOR = '#';
    /**
     * The HTTP request header by which vLLM's OpenAI server takes a data-parallel rank choice (read by
     * {@code OpenAIServing._get_data_parallel_rank} in {@code vllm/entrypoints/openai/engine/serving.py}; header
     * names are case-insensitive).
     */
    public static final String HEADER = "X-data-parallel-rank";

    private DataParallelRanks() {
    }

    /**
     * @param podId base pod id.
     * @param rank  rank, 0..{@link #MAX_RANK}.
     * @return the rank's pod id: {@code podId} for rank 0, {@code podId#rank} otherwise.
     * @throws IllegalArgumentException when the rank is out of range or the id is longer than the pod table's
     *                                  {@link IndexDescriptor#POD_ID_MAX_LENGTH} UTF-8 bytes.
     */
    public static String podId(final String podId, final int rank) {
        if (rank < 0 || rank > MAX_RANK) {
            throw new IllegalArgumentException("data-parallel rank must be 0.." + MAX_RANK + ": " + rank);
        }
        final String id = rank == 0 ? podId : podId + SEPARATOR + rank;
        final int bytes = id.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > IndexDescriptor.POD_ID_MAX_LENGTH) {
            throw new IllegalArgumentException("pod id '" + id + "' of data-parallel rank " + rank + " has " + bytes
                + " UTF-8 bytes; the pod table holds at most " + IndexDescriptor.POD_ID_MAX_LENGTH);
        }
        return id;
    }

    /**
     * @param podId a pod id.
     * @return its data-parallel rank: the number after the last {@code #} when the id is a rank id, else 0.
     */
    public static int rankOf(final String podId) {
        final int hash = podId.lastIndexOf(SEPARATOR);
        if (hash <= 0 || hash == podId.length() - 1 || podId.length() - hash - 1 > 4 || podId.charAt(hash + 1) == '0') {
            return 0;
        }
        int rank = 0;
        for (int i = hash + 1; i < podId.length(); i++) {
            final char c = podId.charAt(i);
            if (c < '0' || c > '9') {
                return 0;
            }
            rank = rank * 10 + (c - '0');
        }
        return rank <= MAX_RANK ? rank : 0;
    }

    /**
     * @param podId a pod id.
     * @return the pod id of its engine: {@code podId} without its rank suffix, or {@code podId} itself for rank 0.
     */
    public static String basePodId(final String podId) {
        return rankOf(podId) == 0 ? podId : podId.substring(0, podId.lastIndexOf(SEPARATOR));
    }
}
