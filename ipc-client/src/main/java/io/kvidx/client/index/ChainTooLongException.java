package io.kvidx.client.index;

/**
 * A query chain is longer than the index's configured maximum chain length.
 */
public class ChainTooLongException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, with the values involved.
     */
    public ChainTooLongException(final String message) {
        super(message);
    }

    /**
     * @param message what went wrong.
     * @param cause   the underlying failure.
     */
    public ChainTooLongException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
