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
     * the loop bound did, while the scheduler kept the writer off the CPU. Legal during the change; after it, the
     * reader reads until a read does not give up ({@link Rendezvous}), so a correct reader also sees {@link #AFTER}
     * (or {@link #WRITER_LATE}).
     */
    public static final int GAVE_UP = 8;
    /** A second key, one the change moves but never removes, was missing or wrong (the forbidden outcome). */
    public static final int MOVED_KEY_LOST = 16;
    /**
     * The writer did not finish its change within the reader's loop bound (about 50 ms: descheduled), so no read came
     * after it (with {@link #GAVE_UP}). Without this bit a result with {@link #GAVE_UP} and no {@link #AFTER} means
     * the change was done and every read after it gave up: a reader that always gives up (forbidden).
     */
    public static final int WRITER_LATE = 32;

    private Seen() {
    }
}
