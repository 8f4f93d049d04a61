package io.kvidx.client.index;

/**
 * Base of every failure the index reports to a reader or writer.
 */
public class IndexException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what went wrong, with the values involved.
     */
    public IndexException(final String message) {
        super(message);
    }

    /**
     * @param message what went wrong.
     * @param cause   the underlying failure.
     */
    public IndexException(final String message, final Throwable cause) {
        super(message, cause);
    }

    /**
     * For failures that are part of normal operation and may be frequent (a busy shard, an index being replaced):
     * without a stack trace, so that throwing costs little more than the message.
     *
     * @param message            what went wrong.
     * @param cause              the underlying failure, or null.
     * @param writableStackTrace false to skip filling in the stack trace.
     */
    protected IndexException(final String message, final Throwable cause, final boolean writableStackTrace) {
        super(message, cause, false, writableStackTrace);
    }
}
