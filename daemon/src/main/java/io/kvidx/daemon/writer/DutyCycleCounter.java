package io.kvidx.daemon.writer;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The duty cycles a writer agent has begun: bumped at the start of every {@link WriterAgent#doWork()}, busy or
 * idle (an idle writer's loop still turns), read by the index maintenance agent, which beats the index heartbeat
 * only while every writer's count moves (docs/index-layout.md, "Writer heartbeat"). The writer stores it every duty
 * cycle and the maintenance thread reads it: the value sits in the middle of a 256-byte array, so no other field
 * shares its cache lines (array elements are contiguous, unlike fields the JVM may reorder).
 *
 * <p><b>Note:</b> one writer thread ({@link #increment()}), any number of readers ({@link #get()}).
 */
public final class DutyCycleCounter {
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    /** 128 bytes of padding either side of the value. */
    private static final int PAD = 16;

    private final long[] cells = new long[2 * PAD + 1];

    /** Starts one more duty cycle: a plain read and a release store (single writer). */
    void increment() {
        LONGS.setRelease(cells, PAD, (long) LONGS.get(cells, PAD) + 1);
    }

    /**
     * @return duty cycles begun so far.
     */
    public long get() {
        return (long) LONGS.getAcquire(cells, PAD);
    }
}
