package io.kvidx.client.index;

/**
 * The file's layout major version differs from the one this code reads.
 */
public class IndexVersionException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, with the values involved.
     */
    public IndexVersionException(final String message) {
        super(message);
    }

    /**
     * @param message what went wrong.
     * @param cause   the underlying failure.
     */
    public IndexVersionException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
