package io.kvidx.client.index;

/**
 * The file is shorter than its header says: it was truncated or is still being written.
 */
public class IndexTruncatedException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, with the values involved.
     */
    public IndexTruncatedException(final String message) {
        super(message);
    }

    /**
     * @param message what went wrong.
     * @param cause   the underlying failure.
     */
    public IndexTruncatedException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
