package io.kvidx.client.routing;

import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PodSet;
import io.kvidx.client.index.PrefixResult;

/**
 * {@link PodIndex} over the shared-memory {@link IndexReader}. It tolerates a missing index: while no index is
 * mapped (or its writer's heartbeat is stale) {@link #isAvailable()} is false and selectors use their fallback
 * picker; every {@code retryIntervalMs} a caller of {@link #isAvailable()} tries to attach again (and, while the
 * heartbeat is stale, checks whether the daemon re-created the file and follows it), so routing turns cache-aware
 * again by itself when the daemon comes back. {@link #refresh()} does the same on demand.
 *
 * <p><b>Note:</b> thread safe. Attaching allocates and touches the file system; it happens only while the index
 * is missing, at most once per retry interval, on the thread that notices.
 */
public final class IndexReaderPodIndex implements PodIndex, AutoCloseable {
    private final IndexReader.Context attachContext;
    private final long retryIntervalMs;
    private volatile IndexReader reader;
    private volatile long nextAttachMs;
    private volatile boolean closed;

    /**
     * Wraps an attached reader; reattaches with its directory and cell if it goes away.
     *
     * @param reader          attached reader (owned by this object from now on).
     * @param retryIntervalMs how often to try to attach while the index is missing.
     */
    public IndexReaderPodIndex(final IndexReader reader, final long retryIntervalMs) {
        this(new IndexReader.Context().dir(reader.path().getParent().getParent()).cell(
            reader.path().getParent().getFileName().toString()), reader, retryIntervalMs);
    }

    /**
     * Attaches lazily: the index may not exist yet.
     *
     * @param context         where the index lives; its attach timeout is ignored (attempts never wait).
     * @param retryIntervalMs how often to try to attach while the index is missing.
     */
    public IndexReaderPodIndex(final IndexReader.Context context, final long retryIntervalMs) {
        this(context, null, retryIntervalMs);
    }

    private IndexReaderPodIndex(final IndexReader.Context context, final IndexReader reader,
        final long retryIntervalMs) {
        if (retryIntervalMs < 0) {
            throw new IllegalArgumentException("retryIntervalMs must be >= 0: " + retryIntervalMs);
        }
        this.attachContext = context;
        this.retryIntervalMs = retryIntervalMs;
        this.reader = reader;
        if (reader == null) {
            tryAttach();
        }
    }

    private synchronized void tryAttach() {
        if (reader != null || closed) {
            return;
        }
        nextAttachMs = System.currentTimeMillis() + retryIntervalMs;
        try {
            final IndexReader.Context c = new IndexReader.Context().dir(attachContext.dir())
                .cell(attachContext.cell()).attachTimeoutMs(0).heartbeatTimeoutMs(attachContext.heartbeatTimeoutMs());
            reader = IndexReader.attach(c);
        } catch (final IndexException ex) {
            reader = null;
        }
    }

    /**
     * Cold-path maintenance: drops a reader whose file was re-created (or which cannot be checked) and attaches to
     * the current one. Call it from a housekeeping thread now and then.
     */
    public synchronized void refresh() {
        final IndexReader r = reader;
        if (r != null && r.isReplaced()) {
            reader = null;
            r.close();
        }
        if (reader == null) {
            tryAttach();
        }
    }

    /**
     * @return the current reader, or null while the index is missing.
     */
    public IndexReader reader() {
        return reader;
    }

    @Override
    public boolean isAvailable() {
        IndexReader r = reader;
        if (r == null) {
            if (System.currentTimeMillis() < nextAttachMs) {
                return false;
            }
            tryAttach();
            r = reader;
            if (r == null) {
                return false;
            }
        }
        if (!r.isWriterStale()) {
            return true;
        }
        if (System.currentTimeMillis() >= nextAttachMs) {
            nextAttachMs = System.currentTimeMillis() + retryIntervalMs;
            refresh();
            final IndexReader fresh = reader;
            return fresh != null && !fresh.isWriterStale();
        }
        return false;
    }

    @Override
    public long aliveWord(final int word) {
        final IndexReader r = reader;
        return r == null ? 0L : r.aliveWord(word);
    }

    @Override
    public int maxChainLength() {
        final IndexReader r = reader;
        return r == null ? 0 : r.maxChainLength();
    }

    @Override
    public int blockSize() {
        final IndexReader r = reader;
        return r == null ? 0 : r.blockSize();
    }

    @Override
    public PodDescription describe(final int slot) {
        final IndexReader r = reader;
        if (r == null || slot >= r.maxPods()) {
            return null;
        }
        final IndexReader.PodInfo info = r.pod(slot);
        if (info.podId().isEmpty()) {
            return null;
        }
        return new PodDescription(slot, info.podId(), info.model());
    }

    @Override
    public Cursor newCursor() {
        return new ReaderCursor(this);
    }

    /**
     * Unmaps the index; later queries find it unavailable.
     */
    @Override
    public synchronized void close() {
        closed = true;
        final IndexReader r = reader;
        reader = null;
        if (r != null) {
            r.close();
        }
    }

    private static final class ReaderCursor implements Cursor {
        private final IndexReaderPodIndex owner;
        private final PrefixResult result = new PrefixResult();
        private final PodSet mirror = new PodSet();
        private final long[] mirrored = new long[4];

        ReaderCursor(final IndexReaderPodIndex owner) {
            this.owner = owner;
        }

        @Override
        public int prefixDepths(final long[] keys, final int length, final long[] candidates,
            final int[] depthBySlot) {
            final IndexReader r = owner.reader;
            if (r == null) {
                throw new IndexException("index not mapped");
            }
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
        }
    }
}
