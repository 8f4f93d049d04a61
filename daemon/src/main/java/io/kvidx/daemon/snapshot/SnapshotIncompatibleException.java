package io.kvidx.daemon.snapshot;

/**
 * A well-formed snapshot of a cell this daemon cannot continue: another router block size or key scheme (its
 * router keys mean other blocks here), or more pods than this cell's slots.
 */
public final class SnapshotIncompatibleException extends SnapshotException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what differs and how to fix it, in one line.
     */
    public SnapshotIncompatibleException(final String message) {
        super(message);
    }
}
