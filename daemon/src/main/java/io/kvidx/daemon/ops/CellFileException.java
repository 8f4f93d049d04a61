package io.kvidx.daemon.ops;

/**
 * A cell's operational file (counters, errors, pod statistics) is missing, unreadable or not what it should be; the
 * message says which file and what to do.
 */
public final class CellFileException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message names the file and the remedy.
     */
    public CellFileException(final String message) {
        super(message);
    }
}
