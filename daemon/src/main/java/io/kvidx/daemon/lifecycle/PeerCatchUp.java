package io.kvidx.daemon.lifecycle;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.SnapshotSettings;
import io.kvidx.daemon.index.CellLock;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.snapshot.PeerClient;
import io.kvidx.serve.BearerAuth;
import io.kvidx.daemon.snapshot.SnapshotException;
import io.kvidx.daemon.snapshot.SnapshotIncompatibleException;
import io.kvidx.daemon.snapshot.SnapshotLoader;
import io.kvidx.daemon.snapshot.SnapshotView;
import io.kvidx.daemon.state.PodBlockMaps;
import io.kvidx.daemon.state.PublisherProgress;
import org.agrona.CloseHelper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * How a daemon's index begins: the cell's index opened (a new one when the last catch-up from a peer did not finish),
 * then, for a new index and a configured {@code peer}, the peer's snapshot loaded into it before any agent starts
 * ({@link SnapshotLoader}): the writers then find the pods restored and the ZeroMQ ingest agents replay each engine
 * from the snapshot's sequences.
 *
 * <p><b>Note:</b> used by the thread that starts the daemon.
 */
final class PeerCatchUp {
    /** The daemon's log: these lines are part of its start. */
    private static final Logger LOG = LoggerFactory.getLogger(KvidxDaemon.class);

    private PeerCatchUp() {
    }

    /**
     * Opens the cell's index; a cell whose catch-up from a peer did not finish ({@link SnapshotLoader}) gets a new
     * index rather than the half-loaded one. The writers get the daemon's cell lock: they neither take nor release
     * it.
     *
     * @param context the daemon's configuration.
     * @param lock    the cell's lock, held by the daemon.
     * @return the index writer.
     */
    static IndexWriter openIndex(final DaemonContext context, final CellLock lock) {
        final IndexWriter opened = IndexWriter.open(context.indexContext().cellLock(lock));
        final Path state = context.indexContext().indexFile().resolveSibling(PodBlockMaps.STATE_DIR_NAME);
        if (!SnapshotLoader.unfinished(state)) {
            return opened;
        }
        LOG.warn("the cell's last catch-up (from a peer or a JetStream snapshot) did not finish, or its JetStream "
            + "consumer lost messages: its index is replaced by a new one");
        CloseHelper.closeAll(opened);
        final IndexWriter created = IndexWriter.create(context.indexContext().cellLock(lock));
        try {
            Files.deleteIfExists(state.resolve(SnapshotLoader.MARKER_FILE_NAME));
        } catch (final IOException ex) {
            CloseHelper.quietClose(created);
            throw new UncheckedIOException("cannot delete the catch-up marker in " + state, ex);
        }
        return created;
    }

    /**
     * Loads the peer's snapshot into a new index ({@code --peer}), before any agent starts.
     *
     * @param settings  the peer and the snapshots' limits.
     * @param index     the index, just opened.
     * @param blockMaps the pods' block maps.
     * @param progress  each publisher's recorded sequence.
     * @param stateDir  the cell's state directory.
     * @param tokenFile the daemon's own HTTP token file, sent to the peer as a bearer token; null for none.
     * @return what was loaded, or null when nothing was (no peer, a re-attached index, an optional peer that could
     *     not be fetched).
     * @throws IllegalStateException when the peer cannot be fetched (unless {@code peerOptional}), its snapshot is
     *                               corrupt (likewise) or of another block size or key scheme, or loading fails.
     */
    static SnapshotLoader.Loaded load(final SnapshotSettings settings, final IndexWriter index,
        final PodBlockMaps blockMaps, final PublisherProgress progress, final Path stateDir, final String tokenFile) {
        final String peer = settings.peer();
        if (peer == null) {
            return null;
        }
        if (index.attached()) {
            LOG.info("re-attached to the cell's index: it continues from its own state, --peer {} not used", peer);
            return null;
        }
        final long start = System.nanoTime();
        // Until the load finishes, this new index is not to be continued: a failed start catches up again next time.
        SnapshotLoader.markUnfinished(stateDir, "catch-up from peer " + peer);
        final SnapshotView view;
        try {
            // The replicas share one token (one Secret): the daemon's own is what its peer requires.
            view = SnapshotView.wrap(PeerClient.fetch(peer, settings.peerTimeoutMs(), settings.snapshotMaxBytes(),
                tokenFile == null ? null : BearerAuth.authorization(BearerAuth.readToken(Path.of(tokenFile)))),
                settings.snapshotMaxBytes());
        } catch (final SnapshotException ex) {
            if (settings.peerOptional()) {
                LOG.warn("no snapshot from peer {} ({}); starting empty (peerOptional)", peer, ex.getMessage());
                SnapshotLoader.markFinished(stateDir);
                return null;
            }
            throw new IllegalStateException("cannot catch up from peer " + peer + ": " + ex.getMessage()
                + " (--peer-optional starts empty instead)", ex);
        }
        final long fetchedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        final SnapshotLoader.Loaded loaded;
        try {
            loaded = new SnapshotLoader(index, blockMaps, progress, settings.snapshotMaxBytes()).load(view);
        } catch (final SnapshotIncompatibleException ex) {
            throw new IllegalStateException("cannot catch up from peer " + peer + ": " + ex.getMessage(), ex);
        } catch (final SnapshotException ex) {
            throw new IllegalStateException("catch-up from peer " + peer + " failed part-way (the next start "
                + "creates a new index): " + ex.getMessage(), ex);
        }
        LOG.info("caught up from peer {}: {} pods, {} blocks ({} over podMaxBlocks left out), {} publishers to "
            + "replay from their snapshot sequences; {} bytes taken {} ms ago, fetched in {} ms, loaded in {} ms",
            peer, loaded.pods(), loaded.blocks(), loaded.skippedBlocks(), loaded.publishers(), loaded.bytes(),
            System.currentTimeMillis() - loaded.takenAtMs(), fetchedMs, loaded.millis());
        return loaded;
    }
}
