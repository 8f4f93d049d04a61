package io.kvidx.jcstress;

/**
 * What a reader actor saw, as a bit mask: the jcstress result of every test here ({@link Rendezvous} collects it).
 *
 * <p><b>Note:</b> constants only.
 */
public final class Seen {
    /** Saw the state before the change. */
    public static final int BEFORE = 1;
    /** Saw the state after the change. */
    public static final int AFTER = 2;
    /** Saw a state that never existed: neither before nor after (the forbidden outcome). */
    public static final int TORN = 4;
    /**
     * Gave up at least once: a read bound passed (the real readers' {@code IndexBusyException} or {@code BUSY}) or
     * the loop bound did, while the scheduler kept the writer off the CPU. Says nothing wrong happened.
     */
    public static final int GAVE_UP = 8;
    /** A second key, one the change moves but never removes, was missing or wrong (the forbidden outcome). */
    public static final int MOVED_KEY_LOST = 16;

    private Seen() {
    }
}
