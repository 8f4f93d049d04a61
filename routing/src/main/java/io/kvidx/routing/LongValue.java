package io.kvidx.routing;

/**
 * An optional 64-bit value (a hashed session id or hash key).
 *
 * <p><b>Note:</b> not thread safe; owned by one {@link RoutingContext}.
 */
public final class LongValue {
    private long value;
    private boolean present;

    /**
     * @param value the value, now present.
     */
    public void set(final long value) {
        this.value = value;
        this.present = true;
    }

    /**
     * Marks the value absent.
     */
    public void clear() {
        present = false;
        value = 0;
    }

    /**
     * @return true when a value was set since the last clear.
     */
    public boolean isPresent() {
        return present;
    }

    /**
     * @return the value (0 when absent).
     */
    public long get() {
        return value;
    }
}
