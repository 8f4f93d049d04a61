package io.kvidx.daemon.snapshot;

/**
 * A snapshot could not be taken, fetched or loaded. Its subclasses say why a snapshot's bytes were refused:
 * {@link SnapshotFormatException} (not a snapshot, truncated, corrupt, too large, another major version) and
 * {@link SnapshotIncompatibleException} (a well-formed snapshot of another cell geometry).
 */
public class SnapshotException extends Exception {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, in one line.
     */
    public SnapshotException(final String message) {
        super(message);
    }

    /**
     * @param message what went wrong, in one line.
     * @param cause   the underlying failure.
     */
    public SnapshotException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
