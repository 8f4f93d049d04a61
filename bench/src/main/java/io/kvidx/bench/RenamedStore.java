package io.kvidx.bench;

/**
 * Another report row for a store that is already in the run: the same instance under another name, for rows that
 * time it differently (for example over a few chains that stay in the cache, {@link QueryHarness#cycling}). Closing
 * it leaves the store open; its own row closes it.
 *
 * <p><b>Note:</b> not thread safe, like the store it names.
 */
final class RenamedStore implements QueryStore {
    private final QueryStore store;
    private final String name;

    /**
     * @param store the store, owned and closed elsewhere.
     * @param name  the row's name.
     */
    RenamedStore(final QueryStore store, final String name) {
        this.store = store;
        this.name = name;
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
    public int query(final long[] chain) {
        return store.query(chain);
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
