package io.kvidx.daemon.serve;

import io.kvidx.client.index.IndexReader;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Whether the index file at the API's path is still the one it maps ({@link IndexReader#isReplaced}, which opens and
 * reads the file), kept current off the event loops: a thread of its own checks every {@link #CHECK_INTERVAL_MS}, and
 * {@code GET /health} reads the last verdict (two volatile loads), so no event loop touches the file system. Bounded:
 * a check that does not come back (a hung file system, a path that blocks on open) leaves the verdict to age; one
 * older than {@link #STALE_AFTER_MS} is reported as a problem of its own, and health answers at once either way.
 *
 * <p><b>Note:</b> the verdict is written by the watch's own thread only; read by any thread.
 */
final class IndexFileWatch implements AutoCloseable {
    /** How often the file is checked. */
    static final long CHECK_INTERVAL_MS = 500;
    /** A verdict older than this is not trusted: the last check has not come back. */
    static final long STALE_AFTER_MS = 3_000;

    private final IndexReader reader;
    private final ScheduledExecutorService thread;
    private volatile boolean replaced;
    /** {@link System#nanoTime()} when the last check completed. */
    private volatile long checkedNs;

    /**
     * Checks once on the calling thread (the server's start), then every {@link #CHECK_INTERVAL_MS} on its own.
     *
     * @param reader the API's index reader.
     */
    IndexFileWatch(final IndexReader reader) {
        this.reader = reader;
        check();
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            final Thread t = new Thread(r, "kvidx-http-index-watch");
            t.setDaemon(true);
            return t;
        });
        thread.scheduleWithFixedDelay(this::check, CHECK_INTERVAL_MS, CHECK_INTERVAL_MS, TimeUnit.MILLISECONDS);
    }

    private void check() {
        try {
            replaced = reader.isReplaced();
            checkedNs = System.nanoTime();
        } catch (final RuntimeException ex) {
            // Not vouched for: the verdict ages until a check comes back (a thrown check would end the schedule).
        }
    }

    /**
     * @return why the index file cannot be vouched for (replaced, or not checked for too long), or null when the last
     * check, recent enough, found the mapped file at its path.
     */
    String problem() {
        final long ageMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - checkedNs);
        if (ageMs > STALE_AFTER_MS) {
            return "the index file has not been checked for " + ageMs + " ms (its file system does not answer)";
        }
        return replaced ? "the index file was replaced" : null;
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
