package io.kvidx.client.tiers;

import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexReader;

import java.nio.file.Path;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.IntUnaryOperator;

/**
 * A router's view of the cell's host tier map: where a pod holds a block it holds (GPU, CPU, disk; local or
 * remote), as one of {@link #GPU}, {@link #CPU} or {@link #DISK} ({@link #tierOf(int, long)}) or as raw tier bits
 * ({@link #tierBits}). It knows nothing of its consumers: the routing layer adapts it to its tier-weighted scorer
 * (which consults it only for its few best candidates by prefix depth, never for every pod).
 *
 * <p>It tolerates a missing file: until the daemon has created one (and for at most a retry interval after the
 * daemon replaced it with a newer file) every lookup answers "unknown", which {@link #tierOf} reports as GPU, vLLM's
 * default medium (what the depth-only scorer assumes for every block). Attaching allocates and touches the file
 * system; it happens only while no current file is mapped, at most once per retry interval, on the thread that
 * notices.
 *
 * <p>Slot reuse: a lookup names the generation of the slot its caller learnt from the index's pod table (here
 * through {@code generationOf}, e.g. the routing layer's pod registry); tiers recorded for another generation of the slot are
 * never returned (see {@link TierMapReader#tierBits}).
 *
 * <p><b>Note:</b> thread safe; lookups are allocation free once a file is mapped.
 */
public final class TierMap implements AutoCloseable {
    /** {@link #tierOf} result: a local GPU copy (also the answer for an unknown tier, vLLM's default medium). */
    public static final int GPU = 0;
    /** {@link #tierOf} result: a local CPU copy and no local GPU copy. */
    public static final int CPU = 1;
    /** {@link #tierOf} result: local disk, storage, other media, or only a remote copy. */
    public static final int DISK = 2;
    /** Default time between two attempts to attach while no current file is mapped. */
    public static final long RETRY_INTERVAL_MS_DEFAULT = 1_000;
    /** {@link #tierBits} result: no tier map file is mapped (missing, not ready, or replaced and not yet followed). */
    public static final int UNAVAILABLE = -4;

    private final Path file;
    private final IntUnaryOperator generationOf;
    private final long retryIntervalMs;
    private final long readBoundNs;
    private final BooleanSupplier writerStale;
    private volatile TierMapReader current;
    private volatile long nextAttachMs;
    private volatile IndexException attachFailure;
    private volatile boolean closed;

    /**
     * A tier map without a stale-writer check: a region left locked reads as {@link TierMapReader#BUSY}.
     *
     * @param file            the tier map file ({@code <dir>/<cell>/tiers}).
     * @param generationOf    slot to the generation the caller's answers belong to.
     * @param retryIntervalMs how often to try to attach while no current file is mapped, {@code >= 0}.
     * @param readBoundNs     how long one lookup may wait for the writer, {@code > 0}.
     */
    public TierMap(final Path file, final IntUnaryOperator generationOf, final long retryIntervalMs,
        final long readBoundNs) {
        this(file, generationOf, retryIntervalMs, readBoundNs, () -> false);
    }

    /**
     * @param file            the tier map file ({@code <dir>/<cell>/tiers}).
     * @param generationOf    slot to the generation the caller's answers belong to.
     * @param retryIntervalMs how often to try to attach while no current file is mapped, {@code >= 0}.
     * @param readBoundNs     how long one lookup may wait for the writer, {@code > 0}.
     * @param writerStale     whether the daemon's heartbeat has stopped (the index's
     *                        {@link io.kvidx.client.index.IndexReader#isWriterStale}): a lookup that finds its region
     *                        locked then answers {@link TierMapReader#STALE}, see {@link TierMapReader}.
     */
    public TierMap(final Path file, final IntUnaryOperator generationOf, final long retryIntervalMs,
        final long readBoundNs, final BooleanSupplier writerStale) {
        if (retryIntervalMs < 0 || readBoundNs <= 0) {
            throw new IllegalArgumentException("retry interval must be >= 0 and read bound > 0: " + retryIntervalMs
                + " ms, " + readBoundNs + " ns");
        }
        this.file = Objects.requireNonNull(file, "file");
        this.generationOf = Objects.requireNonNull(generationOf, "generationOf");
        this.retryIntervalMs = retryIntervalMs;
        this.readBoundNs = readBoundNs;
        this.writerStale = Objects.requireNonNull(writerStale, "writerStale");
        attachIfDue();
    }

    /**
     * The tier map beside an index: same directory and cell; a region left locked by a daemon whose index heartbeat
     * stopped answers {@link TierMapReader#STALE}.
     *
     * @param indexFile    the index file ({@code <dir>/<cell>/index}).
     * @param generationOf slot to the generation the caller's answers belong to (the pod table's, as the caller
     *                     learnt it).
     * @param writerStale  whether the index's writer heartbeat has stopped ({@link IndexReader#isWriterStale}).
     * @return the tier map (attached when the file exists).
     */
    public static TierMap nextTo(final Path indexFile, final IntUnaryOperator generationOf,
        final BooleanSupplier writerStale) {
        return new TierMap(indexFile.resolveSibling(TierMapDescriptor.FILE_NAME), generationOf,
            RETRY_INTERVAL_MS_DEFAULT, TierMapReader.READ_BOUND_NS_DEFAULT, writerStale);
    }

    /**
     * @param slot pod slot.
     * @param key  a router key the pod holds.
     * @return its tier bits (see {@link TierMapDescriptor}), or {@link TierMapReader#ABSENT},
     * {@link TierMapReader#OTHER_GENERATION}, {@link TierMapReader#BUSY}, {@link TierMapReader#STALE} or
     * {@link #UNAVAILABLE}.
     */
    public int tierBits(final int slot, final long key) {
        final TierMapReader r = reader();
        if (r == null) {
            return UNAVAILABLE;
        }
        try {
            return r.tierBits(slot, generationOf.applyAsInt(slot), key);
        } catch (final IllegalStateException ex) {
            // Unmapped under us by close(): the JDK refused the access.
            return UNAVAILABLE;
        }
    }

    /**
     * @param slot pod slot.
     * @param key  a router key the pod holds.
     * @return {@link #GPU}, {@link #CPU} or {@link #DISK}, see {@link #tierOf(int)}.
     */
    public int tierOf(final int slot, final long key) {
        return tierOf(tierBits(slot, key));
    }

    /**
     * The tier a block counts as for scoring: {@link #GPU} when a local GPU copy exists, else {@link #CPU} when a
     * local CPU copy exists, else {@link #DISK} (local disk, storage, other media, or any remote copy). Unknown
     * tiers (negative bits) count as GPU, vLLM's default medium.
     *
     * @param bits tier bits or a negative result of {@link #tierBits}.
     * @return {@link #GPU}, {@link #CPU} or {@link #DISK}.
     */
    public static int tierOf(final int bits) {
        if (bits < 0) {
            return GPU;
        }
        final int local = bits & TierMapDescriptor.MEDIA_MASK & ~(bits >>> TierMapDescriptor.REMOTE_SHIFT);
        if ((local & TierMapDescriptor.MEDIUM_GPU) != 0) {
            return GPU;
        }
        if ((local & TierMapDescriptor.MEDIUM_CPU) != 0) {
            return CPU;
        }
        return (bits & TierMapDescriptor.MEDIA_MASK) == 0 ? GPU : DISK;
    }

    /**
     * @return the mapped reader, or null while none is.
     */
    private TierMapReader reader() {
        final TierMapReader r = current;
        if (r != null && !r.isSuperseded()) {
            return r;
        }
        if (closed || System.currentTimeMillis() < nextAttachMs) {
            return null;
        }
        return attachIfDue();
    }

    private synchronized TierMapReader attachIfDue() {
        final TierMapReader r = current;
        if (closed) {
            return null;
        }
        if (r != null && !r.isSuperseded()) {
            return r;
        }
        nextAttachMs = System.currentTimeMillis() + retryIntervalMs;
        try {
            final TierMapReader fresh = TierMapReader.attach(file, readBoundNs, writerStale);
            if (fresh.isSuperseded()) {
                // The newer file is not renamed into place yet: try again at the next attempt.
                fresh.close();
                return null;
            }
            current = fresh;
            if (r != null) {
                // A lookup racing with this fails inside the JDK (closed shared arena) and answers UNAVAILABLE.
                r.close();
            }
            attachFailure = null;
            return fresh;
        } catch (final IndexException ex) {
            attachFailure = ex;
            return null;
        }
    }

    /**
     * @return why the last attempt to attach failed, or null.
     */
    public IndexException attachFailure() {
        return attachFailure;
    }

    /**
     * @param slot pod slot.
     * @return entries the tier map holds for the slot's pod (of the generation the caller names), 0 while no file is
     * mapped: a pod with none has no tier recorded for any block, so every lookup would answer "unknown".
     */
    public int entryCount(final int slot) {
        final TierMapReader r = reader();
        if (r == null) {
            return 0;
        }
        try {
            return r.entryCount(slot, generationOf.applyAsInt(slot));
        } catch (final IllegalStateException ex) {
            return 0; // unmapped under us by close()
        }
    }

    /**
     * @return true while a tier map file is mapped.
     */
    public boolean isAttached() {
        return current != null;
    }

    /**
     * @return lookups that gave up at the read bound (of the current file).
     */
    public long busyCount() {
        final TierMapReader r = current;
        return r == null ? 0 : r.busyCount();
    }

    /**
     * @return the file this view follows.
     */
    public Path file() {
        return file;
    }

    /**
     * Unmaps the file; lookups then answer {@link #UNAVAILABLE}.
     */
    @Override
    public synchronized void close() {
        closed = true;
        final TierMapReader r = current;
        current = null;
        if (r != null) {
            r.close();
        }
    }
}
