package io.kvidx.routing.exec;

import java.util.List;

/**
 * A request the executor could not carry out: no pod, or every attempt failed. Lists each attempt.
 */
public final class ExecutionException extends Exception {
    private static final long serialVersionUID = 1L;

    /**
     * One failed attempt.
     *
     * @param stage  "prefill", "decode" or "single".
     * @param slot   pod slot.
     * @param reason what went wrong (status and body start, or the I/O error).
     */
    public record Attempt(String stage, int slot, String reason) {
    }

    private final transient List<Attempt> attempts;

    /**
     * @param message  summary.
     * @param attempts failed attempts, in order.
     */
    public ExecutionException(final String message, final List<Attempt> attempts) {
        super(message + (attempts.isEmpty() ? "" : "; attempts: " + attempts));
        this.attempts = List.copyOf(attempts);
    }

    /**
     * @return failed attempts, in order.
     */
    public List<Attempt> attempts() {
        return attempts;
    }
}
