package io.kvidx.daemon.index;

import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;

import java.util.function.LongSupplier;

/**
 * Keeps an index healthy: beats the writer's heartbeat every interval and runs the bounded pod sweep one shard
 * per duty cycle.
 *
 * <p>The heartbeat says the writers are alive, not only this agent: it is beaten only when every writer's duty cycle
 * count (given at construction) moved since the last beat. A writer thread that hangs (or stopped after leaving a
 * shard locked) therefore stops the heartbeat, and readers spinning on its shard see a stale writer within their
 * heartbeat timeout instead of a busy one forever. While a writer has not moved, the beat is retried every duty
 * cycle, so one that was only late (a pause) resumes the heartbeat as soon as it turns again
 * (docs/index-layout.md, "Writer heartbeat").
 *
 * <p><b>Note:</b> run by one {@link org.agrona.concurrent.AgentRunner}; the writer it drives is thread safe.
 */
public final class IndexMaintenanceAgent implements Agent {
    private final IndexWriter writer;
    private final EpochClock clock;
    private final long heartbeatIntervalMs;
    private final LongSupplier[] dutyCycles;
    /** Each writer's duty cycle count at the last beat. */
    private final long[] atLastBeat;
    private long nextHeartbeatMs;

    /**
     * @param writer              the index writer.
     * @param clock               epoch clock.
     * @param heartbeatIntervalMs heartbeat interval.
     * @param dutyCycles          each writer thread's duty cycle count (none: the heartbeat follows this agent only).
     */
    public IndexMaintenanceAgent(final IndexWriter writer, final EpochClock clock, final long heartbeatIntervalMs,
        final LongSupplier... dutyCycles) {
        if (heartbeatIntervalMs <= 0) {
            throw new IllegalArgumentException("heartbeat interval must be > 0: " + heartbeatIntervalMs);
        }
        this.writer = writer;
        this.clock = clock;
        this.heartbeatIntervalMs = heartbeatIntervalMs;
        this.dutyCycles = dutyCycles.clone();
        this.atLastBeat = new long[dutyCycles.length];
        for (int i = 0; i < dutyCycles.length; i++) {
            atLastBeat[i] = this.dutyCycles[i].getAsLong() - 1;
        }
    }

    @Override
    public int doWork() {
        int work = 0;
        final long now = clock.time();
        if (now >= nextHeartbeatMs && writersMoved()) {
            writer.heartbeat(now);
            nextHeartbeatMs = now + heartbeatIntervalMs;
            work++;
        }
        return work + writer.sweepStep();
    }

    /** True, and the counts noted, when every writer began a duty cycle since the last beat. */
    private boolean writersMoved() {
        final LongSupplier[] cycles = dutyCycles;
        final long[] last = atLastBeat;
        for (int i = 0; i < cycles.length; i++) {
            if (cycles[i].getAsLong() == last[i]) {
                return false;
            }
        }
        for (int i = 0; i < cycles.length; i++) {
            last[i] = cycles[i].getAsLong();
        }
        return true;
    }

    @Override
    public String roleName() {
        return "kvidx-index-maintenance";
    }
}
