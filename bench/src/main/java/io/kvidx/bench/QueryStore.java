package io.kvidx.bench;

/**
 * One of the stores under comparison, loaded with a {@link Workload}, answering the prefix query: for a chain of
 * block keys, how many leading blocks each pod holds.
 *
 * <p><b>Note:</b> not thread safe; one querying thread per instance (each owns its result buffer).
 */
public interface QueryStore extends AutoCloseable {
    /**
     * @return short name used in reports and JSON ("kvidx", "naive", "chronicle", ...).
     */
    String name();

    /**
     * Answers the prefix query for a chain, overwriting this store's result buffer.
     *
     * @param keys   block keys; the chain is {@code keys[0..length)}.
     * @param length blocks in the chain, at most {@code keys.length}.
     * @return the deepest depth over all pods.
     */
    int query(long[] keys, int length);

    /**
     * @param pod pod index in [0, pods).
     * @return that pod's depth in the last {@link #query} answer.
     */
    int depthOf(int pod);

    /**
     * @return bytes the store uses for the loaded workload (file length or heap estimate), or -1 when unknown.
     */
    long footprintBytes();

    @Override
    void close();
}
