package io.kvidx.client.index;

/**
 * A lookup gave up: a shard (or a pod table entry) stayed locked by the writer, or kept changing, for longer than
 * the reader's bound ({@link IndexReaderContext#readBoundNs(long)}) while the writer's heartbeat was still fresh.
 * The index is fine; this one answer is not available in time. Routers fall back for the request.
 *
 * <p>Cheap to throw: no stack trace (the message names the shard or slot and the time waited).
 */
public class IndexBusyException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what was busy and for how long.
     */
    public IndexBusyException(final String message) {
        super(message, null, false);
    }
}
