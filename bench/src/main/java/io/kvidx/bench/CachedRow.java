package io.kvidx.bench;

/**
 * The in-cache row of a store that is already in the run: the same instance, named {@code <name>_cached16}, timed
 * by {@link QueryHarness#cycling} over a few chains that stay in the cache. Closing it leaves the store open; its
 * own row closes it.
 *
 * <p><b>Note:</b> not thread safe, like the store it times.
 */
final class CachedRow implements QueryStore {
    private final QueryStore store;
    private final String name;

    /**
     * @param store the store, owned and closed elsewhere.
     */
    CachedRow(final QueryStore store) {
        this.store = store;
        this.name = store.name() + QueryBench.CACHED;
    }

    /**
     * @return the store this row times.
     */
    QueryStore store() {
        return store;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int query(final long[] keys, final int length) {
        return store.query(keys, length);
    }

    @Override
    public int depthOf(final int pod) {
        return store.depthOf(pod);
    }

    @Override
    public long footprintBytes() {
        return store.footprintBytes();
    }

    @Override
    public void close() {
        // The store's own row closes it.
    }
}
