package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.agent.BackoffIdle;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The ZeroMQ ingest thread's backoff idle strategy with the park replaced by a wait on its sockets: spins, then
 * yields (as Agrona's {@code BackoffIdleStrategy}), then polls the agent's SUB sockets for up to the longest park
 * ({@link ZmqIngestAgent#awaitInput}), so that a message that arrives while the thread is idle is read at once instead
 * of after the rest of a park (up to 1 ms with the default {@code backoff}). What does not come through a socket (a
 * subscription change, a replay's reply, a heartbeat due) waits at most the longest park, as before. With no socket
 * to wait on it parks as the backoff does.
 *
 * <p><b>Note:</b> runs on the ingest agent's thread only.
 */
public final class SocketWaitBackoff extends BackoffIdle {
    private final ZmqIngestAgent agent;
    private final long waitMs;

    /**
     * @param agent   the ingest agent whose sockets are waited on.
     * @param backoff {spins, yields, shortest park ns, longest park ns} (the daemon's {@code IdleStrategies.backoff});
     *                the socket wait lasts the longest park, in whole milliseconds.
     * @throws IllegalArgumentException when the longest park is under 1 ms (a poll's timeout is whole milliseconds).
     */
    public SocketWaitBackoff(final ZmqIngestAgent agent, final long[] backoff) {
        super(checked(backoff));
        this.agent = agent;
        this.waitMs = TimeUnit.NANOSECONDS.toMillis(backoff[3]);
    }

    private static long[] checked(final long[] backoff) {
        if (!suits(backoff)) {
            throw new IllegalArgumentException("a socket wait needs a longest park of at least 1 ms: "
                + (backoff == null ? "no backoff" : backoff[3] + " ns"));
        }
        return backoff;
    }

    /**
     * @param backoff the steps of a backoff strategy, or null.
     * @return whether this strategy can stand in for it: a backoff whose longest park is at least 1 ms.
     */
    public static boolean suits(final long[] backoff) {
        return backoff != null && backoff[3] >= TimeUnit.MILLISECONDS.toNanos(1);
    }

    @Override
    protected void await() {
        if (!agent.awaitInput(waitMs)) {
            LockSupport.parkNanos(nextParkNs());
        }
    }

    @Override
    public String alias() {
        return "backoff-socket-wait";
    }
}
