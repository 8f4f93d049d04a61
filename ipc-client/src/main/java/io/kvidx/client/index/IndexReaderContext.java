package io.kvidx.client.index;

import java.nio.file.Path;

/**
 * Where and how an {@link IndexReader} attaches: the reader's counterpart of the daemon's IndexWriterContext.
 * Defaults come from {@link IndexConfiguration}.
 *
 * <p><b>Note:</b> not thread safe; fill it in on one thread, then attach.
 */
public final class IndexReaderContext {
    private Path dir;
    private String cell;
    private long attachTimeoutMs = -1;
    private long heartbeatTimeoutMs = -1;
    private long readBoundNs = -1;
    private Boolean prefetch;

    /**
     * Applies defaults to unset values and validates.
     *
     * @return this.
     */
    public IndexReaderContext conclude() {
        if (dir == null) {
            dir = IndexConfiguration.dir();
        }
        if (cell == null) {
            cell = IndexConfiguration.cell();
        }
        if (attachTimeoutMs < 0) {
            attachTimeoutMs = IndexConfiguration.attachTimeoutMs();
        }
        if (heartbeatTimeoutMs < 0) {
            heartbeatTimeoutMs = IndexConfiguration.heartbeatTimeoutMs();
        }
        if (readBoundNs < 0) {
            readBoundNs = IndexConfiguration.readBoundNs();
        }
        if (readBoundNs <= 0) {
            throw new IllegalArgumentException("read bound must be > 0 ns: " + readBoundNs);
        }
        if (prefetch == null) {
            prefetch = IndexConfiguration.prefetch();
        }
        IndexConfiguration.indexFile(dir, cell);
        return this;
    }

    /**
     * @param dir index directory (default /dev/shm/kvidx).
     * @return this.
     */
    public IndexReaderContext dir(final Path dir) {
        this.dir = dir;
        return this;
    }

    /**
     * @return index directory.
     */
    public Path dir() {
        return dir;
    }

    /**
     * @param cell cell name (default "default").
     * @return this.
     */
    public IndexReaderContext cell(final String cell) {
        this.cell = cell;
        return this;
    }

    /**
     * @return cell name.
     */
    public String cell() {
        return cell;
    }

    /**
     * @param ms how long to wait for the file; 0 tries once.
     * @return this.
     */
    public IndexReaderContext attachTimeoutMs(final long ms) {
        this.attachTimeoutMs = ms;
        return this;
    }

    /**
     * @return attach timeout.
     */
    public long attachTimeoutMs() {
        return attachTimeoutMs;
    }

    /**
     * @param ms heartbeat age beyond which the writer is stale; 0 disables the check.
     * @return this.
     */
    public IndexReaderContext heartbeatTimeoutMs(final long ms) {
        this.heartbeatTimeoutMs = ms;
        return this;
    }

    /**
     * @return heartbeat timeout.
     */
    public long heartbeatTimeoutMs() {
        return heartbeatTimeoutMs;
    }

    /**
     * @param ns longest a read waits for a shard or pod table entry the writer holds locked (or keeps changing)
     *           before it throws {@link IndexBusyException}; default
     *           {@value IndexConfiguration#READ_BOUND_NS_DEFAULT} ns. Must be &gt; 0.
     * @return this.
     */
    public IndexReaderContext readBoundNs(final long ns) {
        this.readBoundNs = ns;
        return this;
    }

    /**
     * @return read bound.
     */
    public long readBoundNs() {
        return readBoundNs;
    }

    /**
     * @param prefetch load the home entries a query will probe before it probes them (default true): the whole
     *                 chain when it has at most 64 blocks, else the top levels of the binary search and then each
     *                 level's next keys two levels ahead (ADR 0023), so that the cache misses of a large index
     *                 overlap instead of adding up, at a small cost when the index fits in cache. See docs/perf.md.
     * @return this.
     */
    public IndexReaderContext prefetch(final boolean prefetch) {
        this.prefetch = prefetch;
        return this;
    }

    /**
     * @return whether queries prefetch the home entries they will probe.
     */
    public boolean prefetch() {
        return prefetch == null || prefetch;
    }

    /**
     * @return the index file this context points at.
     */
    public Path indexFile() {
        return IndexConfiguration.indexFile(dir, cell);
    }
}
