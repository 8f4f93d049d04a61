package io.kvidx.daemon.writer;

import io.kvidx.daemon.agent.BackoffIdle;
import org.agrona.concurrent.ringbuffer.RingBuffer;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * A writer thread's backoff idle strategy that the threads queueing its messages cut short: spins, then yields, then
 * parks for a period that doubles from the shortest to the longest (as Agrona's {@code BackoffIdleStrategy}), but a
 * producer that commits a message to the writer's queue while the writer parks unparks it ({@link #wake}). A batch
 * no longer waits out the rest of a park (up to 1 ms with the default {@code backoff}) before its writer looks, and an
 * idle writer still wakes at most once per longest park on its own (for its pods' timeouts and tasks).
 *
 * <p>No wake is lost: the writer announces that it parks, then (after a full fence) looks at its queue once more;
 * a producer commits its message, then (after a full fence) looks at the announcement. One of them sees the other's
 * write; an unpark that comes before the park makes the park return at once.
 *
 * <p><b>Note:</b> {@link #idle} and {@link #reset} run on the writer's thread only; {@link #wake} on any producer
 * thread.
 */
final class WakeableBackoff extends BackoffIdle {
    private static final VarHandle PARKED;

    static {
        try {
            PARKED = MethodHandles.lookup().findVarHandle(WakeableBackoff.class, "parked", boolean.class);
        } catch (final ReflectiveOperationException ex) {
            throw new ExceptionInInitializerError(ex);
        }
    }

    private final RingBuffer queue;
    /** The writer's thread, set by its first park; read by producers. */
    private volatile Thread thread;
    /** Written by the writer around a park (volatile), read by producers. */
    @SuppressWarnings("unused")
    private boolean parked;

    /**
     * @param queue     the writer's queue.
     * @param backoff   {spins, yields, shortest park ns, longest park ns} (the daemon's {@code IdleStrategies.backoff}).
     */
    WakeableBackoff(final RingBuffer queue, final long[] backoff) {
        super(backoff);
        this.queue = queue;
    }

    @Override
    protected void await() {
        if (thread == null) {
            thread = Thread.currentThread();
        }
        PARKED.setVolatile(this, true);
        VarHandle.fullFence();
        if (queue.size() == 0) {
            LockSupport.parkNanos(nextParkNs());
        }
        PARKED.setVolatile(this, false);
    }

    /** After a message is committed to the writer's queue: unparks the writer when it parks. Any thread. */
    void wake() {
        VarHandle.fullFence();
        if ((boolean) PARKED.getVolatile(this)) {
            final Thread t = thread;
            if (t != null) {
                LockSupport.unpark(t);
            }
        }
    }

    @Override
    public String alias() {
        return "backoff-wakeable";
    }
}
