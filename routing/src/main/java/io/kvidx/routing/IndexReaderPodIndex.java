package io.kvidx.routing;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.IndexUnavailableException;
import io.kvidx.client.index.PodSet;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.routing.IndexReaderLifecycle.Mapping;

import java.nio.file.Path;

/**
 * {@link PodIndex} over the shared-memory {@link IndexReader}. It tolerates a missing index: while no index is
 * mapped (or its writer's heartbeat is stale) {@link #isAvailable()} is false and selectors use their fallback
 * picker. A housekeeping thread of its own (a daemon thread, started by the first {@link #isAvailable()},
 * {@link #describe} or {@link #newCursor()}, stopped by {@link #close()}) tries to attach every {@code retryIntervalMs}
 * while none is mapped, checks every {@link #REPLACED_CHECK_INTERVAL_MS} whether the daemon re-created the file
 * (e.g. with another geometry) and follows it, and unmaps retired readers; so routing turns cache-aware again by
 * itself, and follows a new file within about that interval. {@link #refresh()} does the same on demand.
 *
 * <p>Decision path: {@link #isAvailable()}, {@link #aliveWord}, {@link #podTableVersion()}, {@link #describe} and
 * the cursors' queries read only volatile fields and the mapped file: no lock, no file-system call, no wait. Only
 * the housekeeping thread, {@link #refresh()} and {@link #close()} attach, read the file's header and unmap.
 *
 * <p>Reader lifetime: the housekeeping thread, {@link #refresh()} and {@link #close()} retire the current reader,
 * and a retired reader is unmapped only when no query is in flight on it. Each cursor announces the reader it
 * queries in a slot of its own (a hazard pointer: one uncontended volatile store per query, a release store after
 * it), {@link #describe} in a count on the reader (it copies bytes, so it must never overlap the unmap: a bulk copy
 * racing the unmap of a shared arena crashed the JVM with SIGSEGV), and each checks that the reader is still
 * current; the retiring thread first replaces the current reader, then waits until nothing announces the old one.
 * A query that loses the race sees the index as unavailable ({@link IndexUnavailableException}, which selectors
 * handle by falling back), never an unmapped segment. If the old reader is still announced after
 * {@link #RETIRE_WAIT_MS} (its thread stalled mid-query), it stays mapped and the next round tries again. The
 * single-word reads outside queries ({@link #isAvailable()}, {@link #aliveWord}, {@link #podTableVersion()}) do
 * not announce: one of them racing with the unmap fails inside the JDK (a closed shared arena makes the access
 * throw rather than touch unmapped memory) and is answered as "unavailable", so pinning each would cost an atomic
 * for nothing.
 *
 * <p><b>Note:</b> thread safe; each thread queries through its own cursor. Attaching allocates and touches the
 * file system on the housekeeping thread only. The housekeeping thread (and {@link #refresh()}, {@link #close()})
 * may wait up to {@link #RETIRE_WAIT_MS} for queries in flight; deciding threads never wait for it. The lifecycle
 * and the announcement protocol live in {@link IndexReaderLifecycle}; this class answers the queries.
 */
public final class IndexReaderPodIndex implements PodIndex, AutoCloseable {
    /** Longest one retirement round waits for queries in flight on a retired reader. */
    public static final long RETIRE_WAIT_MS = 1_000;
    /** How often the housekeeping thread checks whether the daemon re-created the file (one header read). */
    public static final long REPLACED_CHECK_INTERVAL_MS = 100;
    /** Bit position of the attach count in {@link #podTableVersion()}: a file's own version stays below it. */
    static final int ATTACH_SHIFT = 40;

    private final IndexReaderLifecycle lifecycle;

    /**
     * Wraps an attached reader; reattaches with its directory and cell if it goes away.
     *
     * @param reader          attached reader (owned by this object from now on).
     * @param retryIntervalMs how often to try to attach while the index is missing.
     */
    public IndexReaderPodIndex(final IndexReader reader, final long retryIntervalMs) {
        this.lifecycle = new IndexReaderLifecycle(new IndexReaderContext().dir(reader.path().getParent().getParent())
            .cell(reader.path().getParent().getFileName().toString()), reader, retryIntervalMs);
    }

    /**
     * Attaches lazily: the index may not exist yet (one attempt here, then on the housekeeping thread).
     *
     * @param context         where the index lives, its heartbeat timeout and read bound; its attach timeout is
     *                        ignored (attempts never wait).
     * @param retryIntervalMs how often to try to attach while the index is missing.
     */
    public IndexReaderPodIndex(final IndexReaderContext context, final long retryIntervalMs) {
        this.lifecycle = new IndexReaderLifecycle(context, null, retryIntervalMs);
    }

    /**
     * @return the index file this view attaches to (its directory also holds the cell's other shared files, e.g.
     * the host tier map).
     */
    public Path indexFile() {
        return lifecycle.indexFile();
    }

    /**
     * Cold-path maintenance on demand, what the housekeeping thread does on its own: replaces a reader whose file
     * was re-created (or which cannot be checked) with one of the current file, attaches when none is mapped, and
     * unmaps retired readers once no query is in flight on them (waiting up to {@link #RETIRE_WAIT_MS}). Never call
     * it from a deciding thread: it reads the file system and may wait.
     */
    public void refresh() {
        lifecycle.refresh();
    }

    /**
     * @return the current reader, or null while the index is missing. {@link #refresh()} or {@link #close()} may
     * retire and unmap it at any time: for diagnostics, not for queries (use a {@link #newCursor() cursor}).
     */
    public IndexReader reader() {
        final Mapping m = lifecycle.current();
        return m == null ? null : m.reader;
    }

    /**
     * @return why the last attempt to attach failed (e.g. {@link io.kvidx.client.index.IndexNotFoundException},
     * {@link io.kvidx.client.index.IndexAccessDeniedException}), or null after a success.
     */
    public IndexException attachFailure() {
        return lifecycle.attachFailure();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Two volatile reads and the heartbeat check (one load, one clock read); never attaches, reads the file
     * system or waits: the housekeeping thread (started here the first time) does that.
     */
    @Override
    public boolean isAvailable() {
        lifecycle.ensureHousekeeper();
        final Mapping m = lifecycle.current();
        return m != null && !m.isStale();
    }

    /**
     * Whether the current index's writer is stale (its heartbeat older than the context's heartbeat timeout, see
     * {@link IndexReader#isWriterStale}); false while no index is mapped. One acquire load and one clock read.
     *
     * @return true when the writer's heartbeat has stopped.
     */
    public boolean isWriterStale() {
        final Mapping m = lifecycle.current();
        return m != null && m.isStale();
    }

    @Override
    public long aliveWord(final int word) {
        final Mapping m = lifecycle.current();
        if (m == null) {
            return 0L;
        }
        try {
            return m.reader.aliveWord(word);
        } catch (final IllegalStateException ex) {
            m.checkRetired(ex);
            return 0L;
        }
    }

    @Override
    public long podTableVersion() {
        final Mapping m = lifecycle.current();
        if (m == null) {
            return NO_POD_TABLE_VERSION;
        }
        try {
            return m.versionBase + m.reader.podTableVersion();
        } catch (final IllegalStateException ex) {
            m.checkRetired(ex);
            return NO_POD_TABLE_VERSION;
        }
    }

    @Override
    public int maxChainLength() {
        final Mapping m = lifecycle.current();
        return m == null ? 0 : m.reader.maxChainLength();
    }

    @Override
    public int blockSize() {
        final Mapping m = lifecycle.current();
        return m == null ? 0 : m.reader.blockSize();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Takes no lock: it announces the reader it reads in the reader's count of describers, which retirement waits
     * for like a cursor's pin (the pod entry is copied out with a bulk copy, which must never overlap an unmap).
     * A reader retired meanwhile reads as unavailable (null). Allocates.
     */
    @Override
    public PodDescription describe(final int slot) {
        lifecycle.ensureHousekeeper();
        final Mapping m = lifecycle.announceDescriber();
        if (m == null) {
            return null;
        }
        try {
            return describe(m, slot);
        } finally {
            m.withdrawDescriber();
        }
    }

    private static PodDescription describe(final Mapping m, final int slot) {
        if (slot >= m.reader.maxPods()) {
            return null;
        }
        final IndexReader.PodInfo info;
        try {
            info = m.reader.pod(slot);
        } catch (final IllegalStateException ex) {
            m.checkRetired(ex);
            return null;
        }
        if (info.state() == IndexDescriptor.POD_STATE_FREE || info.podId().isEmpty()) {
            return null;
        }
        return new PodDescription(slot, info.podId(), info.model(), info.generation(), info.state(), info.suspect());
    }

    @Override
    public Cursor newCursor() {
        lifecycle.ensureHousekeeper();
        return new ReaderCursor(lifecycle);
    }

    /**
     * Stops the housekeeping thread and unmaps the index once no query is in flight on it (waiting up to
     * {@link #RETIRE_WAIT_MS}); later queries find it unavailable. Idempotent.
     */
    @Override
    public void close() {
        lifecycle.close();
    }

    private static final class ReaderCursor implements Cursor {
        private final IndexReaderLifecycle lifecycle;
        /** The reader this cursor is querying, announced through {@link IndexReaderLifecycle#pin}. */
        private final Mapping[] pin;
        private final PrefixResult result = new PrefixResult();
        private final PodSet mirror = new PodSet();
        private final long[] mirrored = new long[4];

        ReaderCursor(final IndexReaderLifecycle lifecycle) {
            this.lifecycle = lifecycle;
            this.pin = lifecycle.newPin();
        }

        /**
         * {@inheritDoc}
         *
         * @throws IndexUnavailableException when no reader is mapped, or it keeps being replaced.
         */
        @Override
        public int prefixDepths(final long[] keys, final int length, final long[] candidates,
            final int[] depthBySlot) {
            final IndexReader r = lifecycle.pin(pin);
            try {
                if (mirrored[0] != candidates[0] || mirrored[1] != candidates[1] || mirrored[2] != candidates[2]
                    || mirrored[3] != candidates[3]) {
                    mirror.clear();
                    for (int w = 0; w < 4; w++) {
                        mirrored[w] = candidates[w];
                        long bits = candidates[w];
                        while (bits != 0) {
                            mirror.add((w << 6) + Long.numberOfTrailingZeros(bits));
                            bits &= bits - 1;
                        }
                    }
                }
                final int n = Math.min(length, r.maxChainLength());
                final int max = r.query(keys, n, mirror, result);
                for (int w = 0; w < 4; w++) {
                    long bits = candidates[w];
                    while (bits != 0) {
                        final int slot = (w << 6) + Long.numberOfTrailingZeros(bits);
                        depthBySlot[slot] = result.depthOf(slot);
                        bits &= bits - 1;
                    }
                }
                return max;
            } finally {
                IndexReaderLifecycle.unpin(pin);
            }
        }
    }
}
