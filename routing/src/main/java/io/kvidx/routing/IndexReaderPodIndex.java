package io.kvidx.routing;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.IndexUnavailableException;
import io.kvidx.client.index.PodSet;
import io.kvidx.client.index.PrefixResult;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

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
 * may wait up to {@link #RETIRE_WAIT_MS} for queries in flight; deciding threads never wait for it.
 */
public final class IndexReaderPodIndex implements PodIndex, AutoCloseable {
    /** Longest one retirement round waits for queries in flight on a retired reader. */
    public static final long RETIRE_WAIT_MS = 1_000;
    /** How often the housekeeping thread checks whether the daemon re-created the file (one header read). */
    public static final long REPLACED_CHECK_INTERVAL_MS = 100;
    /** Bit position of the attach count in {@link #podTableVersion()}: a file's own version stays below it. */
    static final int ATTACH_SHIFT = 40;
    private static final VarHandle PIN = MethodHandles.arrayElementVarHandle(Mapping[].class);
    /** A cursor's pin array: its one used element sits in the middle, 64 bytes or more from any other object. */
    private static final int PIN_LENGTH = 48;
    private static final int PIN_INDEX = 24;
    /** Times a query re-reads a reader that changed while it was pinning before it reports the index unavailable. */
    private static final int PIN_ATTEMPTS = 3;
    /** Longest {@link #close()} waits for the housekeeping thread to finish its round. */
    private static final long STOP_WAIT_MS = RETIRE_WAIT_MS + 1_000;

    private final IndexReaderContext attachContext;
    private final long retryIntervalMs;
    /** The housekeeping thread's sleep between rounds. */
    private final long tickNs;
    /** The reader queries use, null while none is mapped; replaced only under this object's monitor. */
    private volatile Mapping current;
    private volatile boolean closed;
    private volatile IndexException attachFailure;
    /** The housekeeping thread once started; set once, under {@link #housekeeperLock}. */
    private volatile Thread housekeeper;
    private final Object housekeeperLock = new Object();
    /** Guarded by this. */
    private long nextAttachMs;
    /** Guarded by this. */
    private long nextReplacedCheckMs;
    /** Guarded by this. */
    private long attachCount;
    /** Retired readers not yet unmapped; guarded by this. */
    private final List<Mapping> retired = new ArrayList<>();
    /** The pin arrays of the cursors made so far, weakly: a collected cursor has no query in flight. */
    private final List<WeakReference<Mapping[]>> pins = new ArrayList<>();

    /**
     * Wraps an attached reader; reattaches with its directory and cell if it goes away.
     *
     * @param reader          attached reader (owned by this object from now on).
     * @param retryIntervalMs how often to try to attach while the index is missing.
     */
    public IndexReaderPodIndex(final IndexReader reader, final long retryIntervalMs) {
        this(new IndexReaderContext().dir(reader.path().getParent().getParent()).cell(
            reader.path().getParent().getFileName().toString()), reader, retryIntervalMs);
    }

    /**
     * Attaches lazily: the index may not exist yet (one attempt here, then on the housekeeping thread).
     *
     * @param context         where the index lives, its heartbeat timeout and read bound; its attach timeout is
     *                        ignored (attempts never wait).
     * @param retryIntervalMs how often to try to attach while the index is missing.
     */
    public IndexReaderPodIndex(final IndexReaderContext context, final long retryIntervalMs) {
        this(context, null, retryIntervalMs);
    }

    private IndexReaderPodIndex(final IndexReaderContext context, final IndexReader reader,
        final long retryIntervalMs) {
        if (retryIntervalMs < 0) {
            throw new IllegalArgumentException("retryIntervalMs must be >= 0: " + retryIntervalMs);
        }
        this.attachContext = context.conclude();
        this.retryIntervalMs = retryIntervalMs;
        this.tickNs = TimeUnit.MILLISECONDS.toNanos(Math.clamp(retryIntervalMs, 1, REPLACED_CHECK_INTERVAL_MS));
        synchronized (this) {
            nextReplacedCheckMs = System.currentTimeMillis() + REPLACED_CHECK_INTERVAL_MS;
            if (reader == null) {
                final Mapping fresh = attach();
                if (fresh != null) {
                    current = fresh;
                }
            } else {
                current = new Mapping(reader, ++attachCount << ATTACH_SHIFT);
            }
        }
    }

    /** Attaches to the current file, or records why not; never waits. Holding this. */
    private Mapping attach() {
        nextAttachMs = System.currentTimeMillis() + retryIntervalMs;
        try {
            final IndexReaderContext c = new IndexReaderContext().dir(attachContext.dir())
                .cell(attachContext.cell()).attachTimeoutMs(0).heartbeatTimeoutMs(attachContext.heartbeatTimeoutMs())
                .readBoundNs(attachContext.readBoundNs()).prefetch(attachContext.prefetch());
            final IndexReader reader = IndexReader.attach(c);
            if (reader.keyScheme() != IndexDescriptor.KEY_SCHEME_ROUTER_V1) {
                reader.close();
                // The decision layer keys prompts with kvidx's router keys (RouterKeysPreparer): another scheme's
                // keys would match nothing, so the index is unavailable (fallback picks) and the reason is kept.
                attachFailure = new IndexException("the cell " + attachContext.cell() + " is keyed by the "
                    + IndexDescriptor.keySchemeName(reader.keyScheme()) + " scheme; the routing layer keys prompts "
                    + "with kvidx router keys: run the cell's daemon with --key-scheme kvidx, or query it over HTTP");
                return null;
            }
            attachFailure = null;
            return new Mapping(reader, ++attachCount << ATTACH_SHIFT);
        } catch (final IndexException ex) {
            attachFailure = ex;
            return null;
        }
    }

    /** Starts the housekeeping thread unless it runs (or this index is closed): one volatile read once started. */
    private void ensureHousekeeper() {
        if (housekeeper != null || closed) {
            return;
        }
        synchronized (housekeeperLock) {
            if (housekeeper != null || closed) {
                return;
            }
            final Thread t = new Thread(this::housekeep, "kvidx-index-housekeeper-" + attachContext.cell());
            t.setDaemon(true);
            housekeeper = t;
            t.start();
        }
    }

    /** The housekeeping thread's loop: a round, then a sleep of one tick, until {@link #close()}. */
    private void housekeep() {
        while (!closed) {
            try {
                housekeepingRound();
            } catch (final RuntimeException ex) {
                // Kept for diagnostics; the next round tries again (a reader's failures are typed IndexExceptions).
                attachFailure = ex instanceof IndexException ie ? ie
                    : new IndexException("housekeeping failed: " + ex, ex);
            }
            LockSupport.parkNanos(this, tickNs);
        }
    }

    /** One round: attach when none is mapped and the retry interval passed, follow a re-created file, reclaim. */
    private synchronized void housekeepingRound() {
        if (closed) {
            return;
        }
        final long now = System.currentTimeMillis();
        final Mapping m = current;
        if (m == null) {
            if (now >= nextAttachMs) {
                current = attach();
            }
        } else if (now >= nextReplacedCheckMs) {
            nextReplacedCheckMs = now + REPLACED_CHECK_INTERVAL_MS;
            if (m.reader.isReplaced()) {
                current = attach();
                retired.add(m);
            }
        }
        reclaim();
    }

    /**
     * @return the index file this view attaches to (its directory also holds the cell's other shared files, e.g.
     * the host tier map).
     */
    public java.nio.file.Path indexFile() {
        return attachContext.indexFile();
    }

    /**
     * Cold-path maintenance on demand, what the housekeeping thread does on its own: replaces a reader whose file
     * was re-created (or which cannot be checked) with one of the current file, attaches when none is mapped, and
     * unmaps retired readers once no query is in flight on them (waiting up to {@link #RETIRE_WAIT_MS}). Never call
     * it from a deciding thread: it reads the file system and may wait.
     */
    public synchronized void refresh() {
        if (closed) {
            return;
        }
        final Mapping m = current;
        if (m == null) {
            current = attach();
        } else if (m.reader.isReplaced()) {
            current = attach();
            retired.add(m);
        }
        nextReplacedCheckMs = System.currentTimeMillis() + REPLACED_CHECK_INTERVAL_MS;
        reclaim();
    }

    /**
     * @return the current reader, or null while the index is missing. {@link #refresh()} or {@link #close()} may
     * retire and unmap it at any time: for diagnostics, not for queries (use a {@link #newCursor() cursor}).
     */
    public IndexReader reader() {
        final Mapping m = current;
        return m == null ? null : m.reader;
    }

    /**
     * @return why the last attempt to attach failed (e.g. {@link io.kvidx.client.index.IndexNotFoundException},
     * {@link io.kvidx.client.index.IndexAccessDeniedException}), or null after a success.
     */
    public IndexException attachFailure() {
        return attachFailure;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Two volatile reads and the heartbeat check (one load, one clock read); never attaches, reads the file
     * system or waits: the housekeeping thread (started here the first time) does that.
     */
    @Override
    public boolean isAvailable() {
        ensureHousekeeper();
        final Mapping m = current;
        return m != null && !m.isStale();
    }

    /**
     * Whether the current index's writer is stale (its heartbeat older than the context's heartbeat timeout, see
     * {@link IndexReader#isWriterStale}); false while no index is mapped. One acquire load and one clock read.
     *
     * @return true when the writer's heartbeat has stopped.
     */
    public boolean isWriterStale() {
        final Mapping m = current;
        return m != null && m.isStale();
    }

    @Override
    public long aliveWord(final int word) {
        final Mapping m = current;
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
        final Mapping m = current;
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
        final Mapping m = current;
        return m == null ? 0 : m.reader.maxChainLength();
    }

    @Override
    public int blockSize() {
        final Mapping m = current;
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
        ensureHousekeeper();
        Mapping m = current;
        for (int i = 0; i < PIN_ATTEMPTS && m != null; i++) {
            final Mapping announced = m;
            // A volatile read-modify-write, then a volatile read of current; retirement stores current, then reads
            // the count: one of the two sees the other's write.
            announced.describers.getAndIncrement();
            try {
                if (current == announced) {
                    return describe(announced, slot);
                }
            } finally {
                announced.describers.getAndDecrement();
            }
            m = current;
        }
        return null;
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
        ensureHousekeeper();
        final ReaderCursor cursor = new ReaderCursor(this);
        synchronized (pins) {
            pins.removeIf(ref -> ref.get() == null);
            pins.add(new WeakReference<>(cursor.pin));
        }
        return cursor;
    }

    /**
     * Stops the housekeeping thread and unmaps the index once no query is in flight on it (waiting up to
     * {@link #RETIRE_WAIT_MS}); later queries find it unavailable. Idempotent.
     */
    @Override
    public void close() {
        final Thread t;
        synchronized (housekeeperLock) {
            closed = true;
            t = housekeeper;
        }
        if (t != null && t != Thread.currentThread()) {
            LockSupport.unpark(t);
            try {
                t.join(STOP_WAIT_MS);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (this) {
            final Mapping m = current;
            current = null;
            if (m != null) {
                retired.add(m);
            }
            reclaim();
        }
    }

    /**
     * Unmaps every retired reader no cursor or {@link #describe} announces any more, waiting up to
     * {@link #RETIRE_WAIT_MS} for the others. Holding this, after {@link #current} moved on: a cursor that announces
     * a reader after this thread looked re-reads {@link #current}, finds another reader and leaves the retired one
     * alone. Never on a deciding thread: the housekeeping thread, {@link #refresh()} or {@link #close()}.
     */
    private void reclaim() {
        if (retired.isEmpty()) {
            return;
        }
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETIRE_WAIT_MS);
        int rounds = 0;
        while (true) {
            for (final Iterator<Mapping> it = retired.iterator(); it.hasNext(); ) {
                final Mapping m = it.next();
                if (m.describers.get() == 0 && !isPinned(m)) {
                    it.remove();
                    m.reader.close();
                }
            }
            if (retired.isEmpty() || System.nanoTime() - deadline >= 0) {
                return;
            }
            // A query takes microseconds; a pin that lasts longer belongs to a thread that lost its CPU.
            if (++rounds < 100) {
                Thread.yield();
            } else {
                LockSupport.parkNanos(100_000);
            }
        }
    }

    private boolean isPinned(final Mapping m) {
        synchronized (pins) {
            for (final Iterator<WeakReference<Mapping[]>> it = pins.iterator(); it.hasNext(); ) {
                final Mapping[] pin = it.next().get();
                if (pin == null) {
                    it.remove();
                } else if ((Mapping) PIN.getVolatile(pin, PIN_INDEX) == m) {
                    return true;
                }
            }
        }
        return false;
    }

    /** A mapped reader and the base that makes its pod table versions distinct from any other file's. */
    private static final class Mapping {
        final IndexReader reader;
        final long versionBase;
        /** Calls of {@link #describe} reading this reader now (their announcements, see {@link #reclaim()}). */
        final AtomicInteger describers = new AtomicInteger();

        Mapping(final IndexReader reader, final long versionBase) {
            this.reader = reader;
            this.versionBase = versionBase;
        }

        boolean isStale() {
            try {
                return reader.isWriterStale();
            } catch (final IllegalStateException ex) {
                checkRetired(ex);
                return true;
            }
        }

        /** A read outside a query lost the race with the unmap: fine once retired, a bug otherwise. */
        void checkRetired(final IllegalStateException ex) {
            if (!reader.isClosed()) {
                throw ex;
            }
        }
    }

    private static final class ReaderCursor implements Cursor {
        private final IndexReaderPodIndex owner;
        /** The reader this cursor is querying, at {@link #PIN_INDEX}, null between queries. */
        private final Mapping[] pin = new Mapping[PIN_LENGTH];
        private final PrefixResult result = new PrefixResult();
        private final PodSet mirror = new PodSet();
        private final long[] mirrored = new long[4];

        ReaderCursor(final IndexReaderPodIndex owner) {
            this.owner = owner;
        }

        @Override
        public int prefixDepths(final long[] keys, final int length, final long[] candidates,
            final int[] depthBySlot) {
            final IndexReader r = pin();
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
                PIN.setRelease(pin, PIN_INDEX, (Mapping) null);
            }
        }

        /**
         * Announces the current reader, then checks it is still current (the retiring thread replaces it first,
         * then looks at the announcements: one of the two sees the other's store).
         *
         * @return the pinned reader.
         * @throws IndexUnavailableException when no reader is mapped, or it keeps being replaced.
         */
        private IndexReader pin() {
            Mapping m = owner.current;
            for (int i = 0; i < PIN_ATTEMPTS && m != null; i++) {
                PIN.setVolatile(pin, PIN_INDEX, m);
                final Mapping now = owner.current;
                if (now == m) {
                    return m.reader;
                }
                m = now;
            }
            PIN.setRelease(pin, PIN_INDEX, (Mapping) null);
            throw new IndexUnavailableException("index not mapped (missing, closed or being replaced): "
                + owner.attachContext.indexFile());
        }
    }
}
