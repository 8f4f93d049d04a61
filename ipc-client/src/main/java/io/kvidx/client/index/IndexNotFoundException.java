package io.kvidx.client.index;

/**
 * No index file appeared (or it never became ready) before the attach timeout.
 */
public class IndexNotFoundException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, with the values involved.
     */
    public IndexNotFoundException(final String message) {
        super(message);
    }

    /**
     * @param message what went wrong.
     * @param cause   the underlying failure.
     */
    public IndexNotFoundException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
