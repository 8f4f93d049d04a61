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
 * <p><b>Note:</b> one thread (the daemon's start), before any writer thread uses the index.
 */
public final class SnapshotLoader {
    /** Marker file in the state directory: a catch-up from a peer started and has not finished. */
    public static final String MARKER_FILE_NAME = "catch-up";
    /** Entries whose index lines are loaded ahead of their stores, at a time. */
    static final int PREFETCH_WINDOW = 64;

    private final IndexWriter index;
    private final PodBlockMaps maps;
    private final PublisherProgress progress;
    private final long maxBytes;

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
        this.index = index;
        this.maps = maps;
        this.progress = progress;
        this.maxBytes = maxBytes;
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
        long blocks = 0;
        long skipped = 0;
        final long[] key = new long[1];
        final long[] window = new long[PREFETCH_WINDOW];
        for (int p = 0; p < view.podCount(); p++) {
            final String podId = view.podId(p);
            final int slot;
            try {
                slot = index.registerPod(podId, view.model(p));
            } catch (final PodCapacityExceededException | IllegalArgumentException ex) {
                throw new SnapshotException("cannot register pod " + podId + " of the snapshot: " + ex.getMessage(),
                    ex);
            }
            try (PodBlockMap map = maps.open(slot, podId, index.generation(slot))) {
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
                        skipped++;
                        continue;
                    }
                    key[0] = view.routerKey(p, e);
                    map.store(hash, key[0], view.media(p, e));
                    index.store(slot, key, 0, 1, view.parent(p, e));
                    blocks++;
                }
            }
            if (view.suspect(p)) {
                index.markSuspect(slot, true);
            }
        }
        index.recountChildren();
        // Last: the ingest agent replays each engine from here, as after a daemon restart.
        progress.write(view.publishers());
        markFinished(maps.dir());
        return new Loaded(view.podCount(), blocks, skipped, view.publishers().size(), view.length(),
            view.takenAtMs(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), view.membership());
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
