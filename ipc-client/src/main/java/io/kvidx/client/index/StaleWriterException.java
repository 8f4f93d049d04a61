package io.kvidx.client.index;

/**
 * The writer's heartbeat is older than the configured timeout: the daemon is gone or hung.
 */
public class StaleWriterException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, with the values involved.
     */
    public StaleWriterException(final String message) {
        super(message);
    }

    /**
     * @param message what went wrong.
     * @param cause   the underlying failure.
     */
    public StaleWriterException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
