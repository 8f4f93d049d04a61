package io.kvidx.daemon.event;

/**
 * A message that is not well formed in its wire format (bad framing, a length past the end, trailing bytes): thrown
 * by an {@link EventDecoder}, counted and logged by the writer, which drops the rest of the message. Carries no stack
 * trace: it is an expected outcome of bad input, not a bug.
 */
public class EventDecodeException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what is wrong, for the error log.
     */
    public EventDecodeException(final String message) {
        super(message, null, false, false);
    }
}
