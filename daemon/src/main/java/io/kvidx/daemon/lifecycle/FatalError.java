package io.kvidx.daemon.lifecycle;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.Consumer;

/**
 * The first fatal error of a running daemon (a writer stopped with a shard left locked) and who is told of it: the
 * daemon's command, which stops the daemon with the message and a non-zero status.
 *
 * <p><b>Note:</b> thread safe: any agent's thread may report, any thread listen.
 */
final class FatalError {
    /** The daemon's log. */
    private static final Logger LOG = LoggerFactory.getLogger(KvidxDaemon.class);

    private final Object lock = new Object();
    private String message;
    private Consumer<String> listener;

    /**
     * Records a fatal error and tells the listener. The first error wins.
     *
     * @param what what stopped.
     */
    void report(final String what) {
        final Consumer<String> l;
        synchronized (lock) {
            if (message != null) {
                return;
            }
            message = what;
            l = listener;
        }
        LOG.error("fatal: {}; the daemon stops", what);
        if (l != null) {
            l.accept(what);
        }
    }

    /**
     * @param l told once, on any thread, when a fatal error stops the daemon (at once if one already did).
     */
    void listen(final Consumer<String> l) {
        final String already;
        synchronized (lock) {
            listener = l;
            already = message;
        }
        if (already != null) {
            l.accept(already);
        }
    }

    /**
     * @return the fatal error, or null.
     */
    String message() {
        synchronized (lock) {
            return message;
        }
    }
}
