package io.kvidx.client.index;

/**
 * No index is mapped at the moment: it is missing, closed, or being replaced by a re-created file. Routers fall
 * back for the request and turn cache-aware again when the index is back.
 *
 * <p>Cheap to throw: no stack trace.
 */
public class IndexUnavailableException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message why the index is not available.
     */
    public IndexUnavailableException(final String message) {
        super(message, null, false);
    }
}
