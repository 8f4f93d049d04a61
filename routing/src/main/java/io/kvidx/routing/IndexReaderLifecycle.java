package io.kvidx.routing;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.IndexUnavailableException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The attach / re-attach lifecycle of {@link IndexReaderPodIndex}'s readers, and the one place of the protocol that
 * keeps a query off an unmapped reader: attaching (never waiting), the housekeeping thread, following a re-created
 * file, retiring readers and unmapping them once nothing announces them; the announcements themselves (a cursor's pin,
 * a {@link IndexReaderPodIndex#describe describe}'s count) as named steps.
 *
 * <p>Protocol: the retiring thread (housekeeping, {@link #refresh()}, {@link #close()}) first replaces
 * {@link #current()}, then waits until no pin and no describer count announces the old reader; a query announces the
 * reader it reads (a volatile store or read-modify-write), then re-reads {@link #current()} and reads only when it
 * is unchanged. One of the two sees the other's write, so no query reads a reader that is being unmapped.
 *
 * <p><b>Note:</b> {@link #current()}, {@link #pin}, {@link #unpin}, {@link #announceDescriber()} and
 * {@link Mapping#withdrawDescriber()} are lock-free and never wait (deciding threads); attaching, the housekeeping
 * rounds, {@link #refresh()} and {@link #close()} run under this object's monitor, touch the file system and may wait
 * up to {@link IndexReaderPodIndex#RETIRE_WAIT_MS} for queries in flight.
 */
final class IndexReaderLifecycle {
    private static final VarHandle PIN = MethodHandles.arrayElementVarHandle(Mapping[].class);
    /** A cursor's pin array: its one used element sits in the middle, 64 bytes or more from any other object. */
    private static final int PIN_LENGTH = 48;
    private static final int PIN_INDEX = 24;
    /** Times a query re-reads a reader that changed while it was pinning before it reports the index unavailable. */
    private static final int PIN_ATTEMPTS = 3;
    /** Longest {@link #close()} waits for the housekeeping thread to finish its round. */
    private static final long STOP_WAIT_MS = IndexReaderPodIndex.RETIRE_WAIT_MS + 1_000;

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
     * @param context         where the index lives, its heartbeat timeout and read bound; its attach timeout is
     *                        ignored (attempts never wait).
     * @param reader          an attached reader (owned from now on), or null to attach here (one attempt, then on
     *                        the housekeeping thread).
     * @param retryIntervalMs how often to try to attach while the index is missing.
     */
    IndexReaderLifecycle(final IndexReaderContext context, final IndexReader reader, final long retryIntervalMs) {
        if (retryIntervalMs < 0) {
            throw new IllegalArgumentException("retryIntervalMs must be >= 0: " + retryIntervalMs);
        }
        this.attachContext = context.conclude();
        this.retryIntervalMs = retryIntervalMs;
        this.tickNs = TimeUnit.MILLISECONDS.toNanos(
            Math.clamp(retryIntervalMs, 1, IndexReaderPodIndex.REPLACED_CHECK_INTERVAL_MS));
        synchronized (this) {
            nextReplacedCheckMs = System.currentTimeMillis() + IndexReaderPodIndex.REPLACED_CHECK_INTERVAL_MS;
            if (reader == null) {
                final Mapping fresh = attach();
                if (fresh != null) {
                    current = fresh;
                }
            } else {
                current = new Mapping(reader, ++attachCount << IndexReaderPodIndex.ATTACH_SHIFT);
            }
        }
    }

    /** @return the reader queries use, or null while none is mapped. One volatile read. */
    Mapping current() {
        return current;
    }

    /** @return the index file attached to. */
    Path indexFile() {
        return attachContext.indexFile();
    }

    /** @return why the last attempt to attach failed, or null after a success. */
    IndexException attachFailure() {
        return attachFailure;
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
            return new Mapping(reader, ++attachCount << IndexReaderPodIndex.ATTACH_SHIFT);
        } catch (final IndexException ex) {
            attachFailure = ex;
            return null;
        }
    }

    /** Starts the housekeeping thread unless it runs (or this index is closed): one volatile read once started. */
    void ensureHousekeeper() {
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
            nextReplacedCheckMs = now + IndexReaderPodIndex.REPLACED_CHECK_INTERVAL_MS;
            if (m.reader.isReplaced()) {
                current = attach();
                retired.add(m);
            }
        }
        reclaim();
    }

    /** What {@link IndexReaderPodIndex#refresh()} does: a housekeeping round now, whatever the intervals. */
    synchronized void refresh() {
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
        nextReplacedCheckMs = System.currentTimeMillis() + IndexReaderPodIndex.REPLACED_CHECK_INTERVAL_MS;
        reclaim();
    }

    /** What {@link IndexReaderPodIndex#close()} does: stops the housekeeping thread, retires and unmaps. */
    void close() {
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
     * Unmaps every retired reader no cursor or describer announces any more, waiting up to
     * {@link IndexReaderPodIndex#RETIRE_WAIT_MS} for the others. Holding this, after {@link #current} moved on: a
     * cursor that announces a reader after this thread looked re-reads {@link #current}, finds another reader and
     * leaves the retired one alone. Never on a deciding thread: the housekeeping thread, {@link #refresh()} or
     * {@link #close()}.
     */
    private void reclaim() {
        if (retired.isEmpty()) {
            return;
        }
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(IndexReaderPodIndex.RETIRE_WAIT_MS);
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

    /**
     * A cursor's announcement slot, known to retirement (weakly) from now on. Cold: allocates, takes a lock.
     *
     * @return the pin array the cursor passes to {@link #pin} and {@link #unpin}.
     */
    Mapping[] newPin() {
        final Mapping[] pin = new Mapping[PIN_LENGTH];
        synchronized (pins) {
            pins.removeIf(ref -> ref.get() == null);
            pins.add(new WeakReference<>(pin));
        }
        return pin;
    }

    /**
     * Announces the current reader in a cursor's pin, then checks it is still current (the retiring thread replaces
     * it first, then looks at the announcements: one of the two sees the other's store). Pair with {@link #unpin}.
     *
     * @param pin the cursor's pin array from {@link #newPin()}.
     * @return the pinned reader.
     * @throws IndexUnavailableException when no reader is mapped, or it keeps being replaced.
     */
    IndexReader pin(final Mapping[] pin) {
        Mapping m = current;
        for (int i = 0; i < PIN_ATTEMPTS && m != null; i++) {
            PIN.setVolatile(pin, PIN_INDEX, m);
            final Mapping now = current;
            if (now == m) {
                return m.reader;
            }
            m = now;
        }
        PIN.setRelease(pin, PIN_INDEX, (Mapping) null);
        throw new IndexUnavailableException("index not mapped (missing, closed or being replaced): "
            + attachContext.indexFile());
    }

    /**
     * Ends a cursor's query: a release store of null in its pin.
     *
     * @param pin the cursor's pin array.
     */
    static void unpin(final Mapping[] pin) {
        PIN.setRelease(pin, PIN_INDEX, (Mapping) null);
    }

    /**
     * Announces the current reader in its count of describers (a volatile read-modify-write, then a volatile read of
     * {@link #current}; retirement stores current, then reads the count: one of the two sees the other's write).
     *
     * @return the announced reader, still current when announced; or null when none is mapped or it kept being
     * replaced. Pair a non-null answer with {@link Mapping#withdrawDescriber()}.
     */
    Mapping announceDescriber() {
        Mapping m = current;
        for (int i = 0; i < PIN_ATTEMPTS && m != null; i++) {
            final Mapping announced = m;
            announced.describers.getAndIncrement();
            if (current == announced) {
                return announced;
            }
            announced.describers.getAndDecrement();
            m = current;
        }
        return null;
    }

    /** A mapped reader and the base that makes its pod table versions distinct from any other file's. */
    static final class Mapping {
        final IndexReader reader;
        final long versionBase;
        /** Describers reading this reader now (their announcements, which retirement waits for). */
        private final AtomicInteger describers = new AtomicInteger();

        Mapping(final IndexReader reader, final long versionBase) {
            this.reader = reader;
            this.versionBase = versionBase;
        }

        /** Ends what {@link IndexReaderLifecycle#announceDescriber()} announced. */
        void withdrawDescriber() {
            describers.getAndDecrement();
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
}
