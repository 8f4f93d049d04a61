package io.kvidx.daemon.index;

import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;

/**
 * Keeps an index healthy: beats the writer's heartbeat every interval and runs the bounded pod sweep one shard
 * per duty cycle.
 *
 * <p><b>Note:</b> run by one {@link org.agrona.concurrent.AgentRunner}; the writer it drives is thread safe.
 */
public final class IndexMaintenanceAgent implements Agent {
    private final IndexWriter writer;
    private final EpochClock clock;
    private final long heartbeatIntervalMs;
    private long nextHeartbeatMs;

    /**
     * @param writer              the index writer.
     * @param clock               epoch clock.
     * @param heartbeatIntervalMs heartbeat interval.
     */
    public IndexMaintenanceAgent(final IndexWriter writer, final EpochClock clock, final long heartbeatIntervalMs) {
        if (heartbeatIntervalMs <= 0) {
            throw new IllegalArgumentException("heartbeat interval must be > 0: " + heartbeatIntervalMs);
        }
        this.writer = writer;
        this.clock = clock;
        this.heartbeatIntervalMs = heartbeatIntervalMs;
    }

    @Override
    public int doWork() {
        int work = 0;
        final long now = clock.time();
        if (now >= nextHeartbeatMs) {
            writer.heartbeat(now);
            nextHeartbeatMs = now + heartbeatIntervalMs;
            work++;
        }
        return work + writer.sweepStep();
    }

    @Override
    public String roleName() {
        return "kvidx-index-maintenance";
    }
}
