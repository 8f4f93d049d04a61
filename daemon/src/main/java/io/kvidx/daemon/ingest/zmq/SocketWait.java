package io.kvidx.daemon.ingest.zmq;

import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * An idle ingest thread's wait for its next message: a JeroMQ poll over the agent's SUB sockets, which returns as soon
 * as one of them can be read, where a park could not be cut short by them (JeroMQ's I/O threads deliver to the
 * socket, not to the ingest thread). The poller is made again whenever the sockets it polls are no longer the agent's
 * (a subscription added, dropped or made again).
 *
 * <pre>
 *   ingest thread idle ── poll(SUB sockets, at most the longest park) ──▶ a socket readable: returns at once
 *                                                                    └──▶ none: returns after the timeout
 * </pre>
 *
 * <p><b>Note:</b> used by the ingest agent's thread only, the thread that owns the sockets.
 */
final class SocketWait {
    private ZMQ.Poller poller;
    private ZMQ.Socket[] polled = new ZMQ.Socket[0];
    private int count;
    /** The agent's sockets, gathered on each wait (reused). */
    private ZMQ.Socket[] gathered = new ZMQ.Socket[0];

    /**
     * Waits until one of an ingest agent's SUB sockets (its bound socket's and its publishers') can be read, or for
     * the timeout.
     *
     * @param context    the sockets' context.
     * @param bound      the agent's bound socket, or null.
     * @param publishers the agent's publishers (null slots and publishers without a socket of their own skipped).
     * @param timeoutMs  longest wait, milliseconds (at least 1).
     * @return false when there is no socket to wait on (the caller parks instead), else true.
     * @throws org.zeromq.ZMQException when the poll fails (the poller is closed; the next call makes a new one).
     */
    boolean await(final ZContext context, final BoundSocket bound, final Publisher[] publishers,
        final long timeoutMs) {
        int n = bound != null ? 1 : 0;
        for (final Publisher p : publishers) {
            if (p != null && p.sub != null) {
                n++;
            }
        }
        if (gathered.length < n) {
            gathered = new ZMQ.Socket[Math.max(n, gathered.length * 2)];
        }
        int i = 0;
        if (bound != null) {
            gathered[i++] = bound.socket();
        }
        for (final Publisher p : publishers) {
            if (p != null && p.sub != null) {
                gathered[i++] = p.sub;
            }
        }
        return await(context, gathered, n, timeoutMs);
    }

    /**
     * Waits until one of the sockets can be read, or for the timeout.
     *
     * @param context   the sockets' context (a poller is made in it).
     * @param sockets   the sockets to wait on, in {@code [0, n)}; the same sockets in the same order as the last call
     *                  keep the poller.
     * @param n         how many.
     * @param timeoutMs longest wait, milliseconds (at least 1).
     * @return false when there is no socket to wait on (the caller parks instead), else true.
     * @throws org.zeromq.ZMQException when the poll fails (the poller is closed; the next call makes a new one).
     */
    boolean await(final ZContext context, final ZMQ.Socket[] sockets, final int n, final long timeoutMs) {
        if (n == 0) {
            close();
            return false;
        }
        if (!same(sockets, n)) {
            remake(context, sockets, n);
        }
        try {
            poller.poll(timeoutMs);
        } catch (final RuntimeException ex) {
            close();
            throw ex;
        }
        return true;
    }

    /** Closes the poller (not the sockets). */
    void close() {
        if (poller != null) {
            poller.close();
            poller = null;
        }
        java.util.Arrays.fill(polled, 0, count, null);
        count = 0;
    }

    private boolean same(final ZMQ.Socket[] sockets, final int n) {
        if (poller == null || n != count) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            if (sockets[i] != polled[i]) {
                return false;
            }
        }
        return true;
    }

    private void remake(final ZContext context, final ZMQ.Socket[] sockets, final int n) {
        close();
        if (polled.length < n) {
            polled = new ZMQ.Socket[Math.max(n, polled.length * 2)];
        }
        poller = context.createPoller(n);
        for (int i = 0; i < n; i++) {
            poller.register(sockets[i], ZMQ.Poller.POLLIN);
            polled[i] = sockets[i];
        }
        count = n;
    }
}
