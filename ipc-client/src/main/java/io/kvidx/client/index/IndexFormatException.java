package io.kvidx.client.index;

/**
 * The file is not a kvidx index: wrong magic or an impossible geometry.
 */
public class IndexFormatException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, with the values involved.
     */
    public IndexFormatException(final String message) {
        super(message);
    }

    /**
     * @param message what went wrong.
     * @param cause   the underlying failure.
     */
    public IndexFormatException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
