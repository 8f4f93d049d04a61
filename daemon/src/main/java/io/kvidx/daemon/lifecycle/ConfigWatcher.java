package io.kvidx.daemon.lifecycle;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Watches the daemon's YAML file and runs a reload when it changes (its modification time, size or file key moved),
 * checked every {@link #POLL_INTERVAL_MS} ms: editors that replace the file and tools that rewrite it in place are
 * both seen. Only the subscriptions follow the file (the reload action decides); settings that shape the index need
 * a restart.
 *
 * <p><b>Note:</b> the reload runs on the watcher's own thread.
 */
final class ConfigWatcher implements AutoCloseable {
    /** How often the file is looked at. */
    static final long POLL_INTERVAL_MS = 1_000;

    private final Path file;
    private final Runnable reload;
    private final Consumer<RuntimeException> failed;
    private final ScheduledExecutorService thread;
    private String seen;

    ConfigWatcher(final Path file, final Runnable reload, final Consumer<RuntimeException> failed) {
        this.file = file;
        this.reload = reload;
        this.failed = failed;
        this.seen = stamp();
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            final Thread t = new Thread(r, "kvidx-config-watcher");
            t.setDaemon(true);
            return t;
        });
        thread.scheduleWithFixedDelay(this::check, POLL_INTERVAL_MS, POLL_INTERVAL_MS, TimeUnit.MILLISECONDS);
    }

    private void check() {
        final String now = stamp();
        if (now == null || now.equals(seen)) {
            return;
        }
        seen = now;
        try {
            reload.run();
        } catch (final RuntimeException ex) {
            failed.accept(ex);
        }
    }

    private String stamp() {
        try {
            final BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
            return a.lastModifiedTime().toMillis() + "/" + a.size() + "/" + a.fileKey();
        } catch (final IOException ex) {
            return null; // being replaced, or gone: looked at again at the next poll
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
