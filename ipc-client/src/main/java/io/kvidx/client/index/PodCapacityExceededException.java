package io.kvidx.client.index;

/**
 * Every pod slot of the cell is taken (alive or still being swept).
 */
public class PodCapacityExceededException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, with the values involved.
     */
    public PodCapacityExceededException(final String message) {
        super(message);
    }

    /**
     * @param message what went wrong.
     * @param cause   the underlying failure.
     */
    public PodCapacityExceededException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
