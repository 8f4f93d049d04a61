package io.kvidx.daemon.index;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Beats for a test's in-process writer every 100 ms, as the daemon's agent does, until closed (close it before the
 * writer: a try-with-resources declaring it after the writer does). Readers treat a writer whose heartbeat is older than
 * the heartbeat timeout (2 s) as stale, and a test that loads a tokenizer or starts a server can take that long on a
 * loaded machine.
 */
public final class TestHeartbeat implements AutoCloseable {
    private final ScheduledExecutorService beat = Executors.newSingleThreadScheduledExecutor(r -> {
        final Thread t = new Thread(r, "test-writer-heartbeat");
        t.setDaemon(true);
        return t;
    });

    /**
     * @param writer the writer to beat for (its heartbeat is one field; no other writer state is touched).
     */
    public TestHeartbeat(final IndexWriter writer) {
        writer.heartbeat(System.currentTimeMillis());
        beat.scheduleAtFixedRate(() -> writer.heartbeat(System.currentTimeMillis()), 100, 100, TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        beat.shutdownNow();
        try {
            if (!beat.awaitTermination(5, TimeUnit.SECONDS)) {
                throw new AssertionError("the heartbeat did not stop within 5 s");
            }
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while stopping the heartbeat", ex);
        }
    }
}
