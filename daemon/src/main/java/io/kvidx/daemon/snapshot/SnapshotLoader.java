package io.kvidx.daemon.snapshot;

import io.kvidx.client.index.PodCapacityExceededException;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.state.PodBlockMap;
import io.kvidx.daemon.state.PodBlockMaps;
import io.kvidx.daemon.state.PublisherProgress;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Loads a snapshot into a daemon's new, empty cell before its agents start, so that the daemon continues like one
 * restarted warm: each pod is registered in the index, its engine-hash map is written for its (slot, generation)
 * (its writer then finds the map "restored" and refills the host tier map from it), its blocks are stored in the
 * index with their parent keys (children counts are recounted after), and the publishers' progress is written last,
 * so that the ZeroMQ ingest agent asks each engine to replay from the snapshot's sequence + 1.
 *
 * <p>A snapshot of another block size or key scheme is refused before anything is written. A load that fails
 * part-way leaves a marker file ({@value #MARKER_FILE_NAME} in the state directory) until it finishes: the next
 * start sees it and creates a new index instead of re-attaching to a half-loaded one ({@link #unfinished}). The
 * daemon writes the marker before it even fetches the snapshot, so that a start that failed to catch up (peer
 * unreachable, snapshot refused) catches up again at the next start rather than continuing from an empty index.
 *
 * <p>The pods are registered first, in the snapshot's order; then their blocks are loaded by up to
 * {@link #LOAD_THREADS_MAX} threads (the host's processors), each pod by one thread, as the daemon's writer agents
 * share pods out: the index takes stores of different pods from different threads.
 *
 * <p><b>Note:</b> called by one thread (the daemon's start), before any writer thread uses the index; it starts its
 * load threads and joins them before it returns.
 */
public final class SnapshotLoader {
    /** Marker file in the state directory: a catch-up from a peer started and has not finished. */
    public static final String MARKER_FILE_NAME = "catch-up";
    /** Entries whose index lines are loaded ahead of their stores, at a time. */
    static final int PREFETCH_WINDOW = 64;
    /** Most threads a load uses: pods' blocks go to the index in parallel, one pod per thread at a time. */
    public static final int LOAD_THREADS_MAX = 8;

    private final IndexWriter index;
    private final PodBlockMaps maps;
    private final PublisherProgress progress;
    private final long maxBytes;
    private final int loadThreads;

    /**
     * What was loaded.
     *
     * @param pods          pods registered.
     * @param blocks        mappings loaded (each also stored in the index).
     * @param skippedBlocks mappings left out: the pod's map here holds fewer blocks ({@code podMaxBlocks}).
     * @param publishers    publishers whose progress was recorded.
     * @param bytes         the snapshot's length.
     * @param takenAtMs     when the peer took it (epoch ms).
     * @param millis        how long the load took.
     * @param membership    the snapshot's opaque membership section (empty when none); not copied.
     */
    public record Loaded(int pods, long blocks, long skippedBlocks, int publishers, int bytes, long takenAtMs,
        long millis, byte[] membership) {
    }

    /**
     * @param index    the daemon's index, created new.
     * @param maps     where the pods' engine-hash maps live.
     * @param progress where the ZeroMQ ingest agent reads each publisher's progress at its start.
     * @param maxBytes longest snapshot accepted.
     */
    public SnapshotLoader(final IndexWriter index, final PodBlockMaps maps, final PublisherProgress progress,
        final long maxBytes) {
        this(index, maps, progress, maxBytes, defaultLoadThreads());
    }

    /**
     * @param index       the daemon's index, created new.
     * @param maps        where the pods' engine-hash maps live.
     * @param progress    where the ZeroMQ ingest agent reads each publisher's progress at its start.
     * @param maxBytes    longest snapshot accepted.
     * @param loadThreads threads that load pods' blocks (at least 1; the calling thread is one of them).
     */
    public SnapshotLoader(final IndexWriter index, final PodBlockMaps maps, final PublisherProgress progress,
        final long maxBytes, final int loadThreads) {
        if (loadThreads < 1) {
            throw new IllegalArgumentException("load threads must be at least 1: " + loadThreads);
        }
        this.index = index;
        this.maps = maps;
        this.progress = progress;
        this.maxBytes = maxBytes;
        this.loadThreads = loadThreads;
    }

    /**
     * @return the load threads by default: this host's processors, at most {@link #LOAD_THREADS_MAX} (the daemon's
     * agents do not run yet while a snapshot loads).
     */
    public static int defaultLoadThreads() {
        return Math.min(LOAD_THREADS_MAX, Runtime.getRuntime().availableProcessors());
    }

    /**
     * @param stateDir a cell's state directory.
     * @return true when a load into it started and did not finish (its index is half-loaded).
     */
    public static boolean unfinished(final Path stateDir) {
        return Files.exists(stateDir.resolve(MARKER_FILE_NAME));
    }

    /**
     * Records that a catch-up into the cell of this state directory has started: until {@link #markFinished}, the
     * cell's index is not to be re-attached to.
     *
     * @param stateDir a cell's state directory.
     * @param why      what is being loaded (written into the marker for operators).
     */
    public static void markUnfinished(final Path stateDir, final String why) {
        final Path marker = stateDir.resolve(MARKER_FILE_NAME);
        try {
            Files.createDirectories(stateDir);
            Files.writeString(marker, why + "\n");
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot write " + marker, ex);
        }
    }

    /**
     * Records that the catch-up into the cell of this state directory finished (or was given up for an empty start).
     *
     * @param stateDir a cell's state directory.
     */
    public static void markFinished(final Path stateDir) {
        final Path marker = stateDir.resolve(MARKER_FILE_NAME);
        try {
            Files.deleteIfExists(marker);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot delete " + marker, ex);
        }
    }

    /**
     * Verifies and loads a snapshot.
     *
     * @param bytes the snapshot.
     * @return what was loaded.
     * @throws SnapshotFormatException       when the bytes are not a valid snapshot (nothing was written).
     * @throws SnapshotIncompatibleException when it is another cell geometry's (nothing was written).
     * @throws SnapshotException             when a pod cannot be registered.
     */
    public Loaded load(final byte[] bytes) throws SnapshotException {
        return load(SnapshotView.wrap(bytes, maxBytes));
    }

    /**
     * Loads a verified snapshot.
     *
     * @param view the snapshot.
     * @return what was loaded.
     * @throws SnapshotIncompatibleException when it is another cell geometry's (nothing was written).
     * @throws SnapshotException             when a pod cannot be registered.
     */
    public Loaded load(final SnapshotView view) throws SnapshotException {
        final long start = System.nanoTime();
        checkCompatible(view);
        markUnfinished(maps.dir(), "catch-up from a snapshot taken at " + view.takenAtMs() + " (epoch ms)");
        // Every pod first, in the snapshot's order (slots as before); then their blocks, pods shared out over the
        // load threads: the index takes stores of different pods from different threads, as from its writers.
        final int pods = view.podCount();
        final int[] slots = new int[pods];
        for (int p = 0; p < pods; p++) {
            final String podId = view.podId(p);
            try {
                slots[p] = index.registerPod(podId, view.model(p));
            } catch (final PodCapacityExceededException | IllegalArgumentException ex) {
                throw new SnapshotException("cannot register pod " + podId + " of the snapshot: " + ex.getMessage(),
                    ex);
            }
        }
        final int threads = Math.max(1, Math.min(loadThreads, pods));
        final long[][] counts = new long[threads][2];
        final Throwable[] failures = new Throwable[threads];
        final Thread[] workers = new Thread[threads - 1];
        for (int w = 1; w < threads; w++) {
            final int worker = w;
            workers[w - 1] = Thread.ofPlatform().name("kvidx-snapshot-load-" + w).start(() -> {
                try {
                    loadPods(view, slots, worker, threads, counts[worker]);
                } catch (final Throwable ex) {
                    failures[worker] = ex;
                }
            });
        }
        try {
            loadPods(view, slots, 0, threads, counts[0]);
        } catch (final RuntimeException ex) {
            failures[0] = ex;
        } finally {
            // Even when this thread fails: nothing may still write the index once the load returns or throws.
            join(workers);
        }
        for (final Throwable failure : failures) {
            if (failure instanceof RuntimeException ex) {
                throw ex;
            }
            if (failure instanceof Error err) {
                throw err;
            }
        }
        long blocks = 0;
        long skipped = 0;
        for (final long[] c : counts) {
            blocks += c[0];
            skipped += c[1];
        }
        for (int p = 0; p < pods; p++) {
            if (view.suspect(p)) {
                index.markSuspect(slots[p], true);
            }
        }
        index.recountChildren();
        // Last: the ingest agent replays each engine from here, as after a daemon restart.
        progress.write(view.publishers());
        markFinished(maps.dir());
        return new Loaded(pods, blocks, skipped, view.publishers().size(), view.length(),
            view.takenAtMs(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), view.membership());
    }

    /**
     * Loads the blocks of the pods {@code first}, {@code first + step}, ... into their maps and the index.
     *
     * @param counts receives blocks loaded [0] and left out [1].
     */
    private void loadPods(final SnapshotView view, final int[] slots, final int first, final int step,
        final long[] counts) {
        final long[] key = new long[1];
        final long[] window = new long[PREFETCH_WINDOW];
        for (int p = first; p < slots.length; p += step) {
            final int slot = slots[p];
            try (PodBlockMap map = maps.open(slot, view.podId(p), index.generation(slot))) {
                // A file left by an earlier, unfinished load of the same slot and generation is not this snapshot's.
                map.clear();
                map.mainGroup(view.mainGroup(p));
                final int count = view.entryCount(p);
                // Its final size at once: one new file instead of one per doubling as the entries go in.
                map.reserve(count);
                for (int e = 0; e < count; e++) {
                    if (e % PREFETCH_WINDOW == 0) {
                        // A pod's entries come in its hash map's order, not a chain's: each store alone would wait
                        // for its index line. Load the next window's lines first so that their misses overlap.
                        final int n = Math.min(PREFETCH_WINDOW, count - e);
                        for (int i = 0; i < n; i++) {
                            window[i] = view.routerKey(p, e + i);
                        }
                        index.prefetch(window, 0, n);
                    }
                    final long hash = view.hash(p, e);
                    if (map.isFull() && map.get(hash) == 0) {
                        counts[1]++;
                        continue;
                    }
                    key[0] = window[e % PREFETCH_WINDOW];
                    map.store(hash, key[0], view.media(p, e));
                    index.store(slot, key, 0, 1, view.parent(p, e));
                    counts[0]++;
                }
            }
        }
    }

    /** Waits for the load threads (each ends once its pods are loaded, or failed). */
    private static void join(final Thread[] workers) {
        boolean interrupted = false;
        for (final Thread worker : workers) {
            while (true) {
                try {
                    worker.join();
                    break;
                } catch (final InterruptedException ex) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void checkCompatible(final SnapshotView view) throws SnapshotIncompatibleException {
        final var context = index.context();
        if (view.blockSize() != context.blockSize()) {
            throw new SnapshotIncompatibleException("the snapshot's router block size is " + view.blockSize()
                + ", this daemon's " + context.blockSize() + ": its router keys name other blocks here. Start this "
                + "daemon with --block-size " + view.blockSize() + " or catch up from a peer of block size "
                + context.blockSize());
        }
        if (view.keyScheme() != context.keyScheme()) {
            throw new SnapshotIncompatibleException("the snapshot's key scheme is " + view.keyScheme()
                + ", this daemon's " + context.keyScheme() + ": its router keys mean nothing here");
        }
        if (view.podCount() > context.maxPods()) {
            throw new SnapshotIncompatibleException("the snapshot holds " + view.podCount() + " pods, this cell has "
                + context.maxPods() + " pod slots; start this daemon with --max-pods " + view.podCount()
                + " or more");
        }
    }
}
