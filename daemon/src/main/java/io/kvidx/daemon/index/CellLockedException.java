package io.kvidx.daemon.index;

import java.nio.file.Path;

/**
 * Another writer (a daemon, a demo, a benchmark's index writer) already writes this cell: it holds the cell's
 * {@link CellLock}.
 */
public final class CellLockedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /** Pid of the holder; -1 when it could not be read. */
    private final long holderPid;

    /**
     * @param cell      the cell.
     * @param lockFile  its lock file.
     * @param holderPid pid written by the holder, -1 when unknown.
     */
    public CellLockedException(final String cell, final Path lockFile, final long holderPid) {
        super("cell '" + cell + "' is already written by " + (holderPid > 0 ? "the kvidx process with pid "
            + holderPid : "another kvidx process (pid unknown)") + " (a daemon, demo or benchmark), which holds the"
            + " lock on " + lockFile + ": stop it first, or use another --cell or --dir");
        this.holderPid = holderPid;
    }

    /**
     * @return pid of the process holding the lock, -1 when unknown.
     */
    public long holderPid() {
        return holderPid;
    }
}
