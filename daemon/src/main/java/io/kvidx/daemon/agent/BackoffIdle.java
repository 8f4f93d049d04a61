package io.kvidx.daemon.agent;

import org.agrona.concurrent.IdleStrategy;

/**
 * A backoff idle strategy whose park a subclass replaces with a wait of its own (a writer woken by its batch, an
 * ingest thread waiting on its sockets): spins, then yields, then {@link #await()} on every idle call after those,
 * with a park period ({@link #nextParkNs()}) that doubles from the shortest to the longest, as Agrona's
 * {@code BackoffIdleStrategy}; work done starts over.
 *
 * <pre>
 *   idle: spin x spins ─▶ yield x yields ─▶ await (park shortest) ─▶ await (park 2 x) ─▶ ... ─▶ await (longest) ...
 *   work: back to the first spin
 * </pre>
 *
 * <p><b>Note:</b> one agent thread's idle strategy: {@link #idle}, {@link #reset} and {@link #await} run on that
 * thread only.
 */
public abstract class BackoffIdle implements IdleStrategy {
    private final long maxSpins;
    private final long maxYields;
    private final long minParkNs;
    private final long maxParkNs;
    private long spins;
    private long yields;
    private long parkNs;

    /**
     * @param backoff {spins, yields, shortest park ns, longest park ns} (the daemon's {@code IdleStrategies.backoff}).
     */
    protected BackoffIdle(final long[] backoff) {
        this.maxSpins = backoff[0];
        this.maxYields = backoff[1];
        this.minParkNs = backoff[2];
        this.maxParkNs = backoff[3];
        reset();
    }

    /**
     * The wait that replaces the park, once the spins and yields are spent: at most about {@link #nextParkNs()}
     * (which it calls when it parks) or the longest park.
     */
    protected abstract void await();

    /**
     * @return the period of the park about to be made; the next one is twice as long, up to the longest.
     */
    protected final long nextParkNs() {
        final long ns = parkNs;
        parkNs = Math.min(parkNs << 1, maxParkNs);
        return ns;
    }

    @Override
    public final void idle(final int workCount) {
        if (workCount > 0) {
            reset();
        } else {
            idle();
        }
    }

    @Override
    public final void idle() {
        if (spins < maxSpins) {
            spins++;
            Thread.onSpinWait();
        } else if (yields < maxYields) {
            yields++;
            Thread.yield();
        } else {
            await();
        }
    }

    @Override
    public final void reset() {
        spins = 0;
        yields = 0;
        parkNs = minParkNs;
    }
}
