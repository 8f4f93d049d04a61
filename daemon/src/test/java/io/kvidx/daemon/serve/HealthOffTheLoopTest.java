package io.kvidx.daemon.serve;

import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.FileOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code GET /health} never opens the index file on an event loop (issue 35): the index's path is made a named pipe,
 * whose open blocks until someone writes to it (a file system that does not answer). Health keeps answering at once
 * on the API's one event loop, and so do the other endpoints; once the file has not been checked for the bound it
 * answers 503 saying so. Then the path holds a different file: 503 "replaced". Fails when health reads the file on the
 * event loop: the first health call then hangs, and every request on that loop with it.
 */
@Timeout(60)
class HealthOffTheLoopTest {
    @TempDir
    Path dir;

    @Test
    void shouldAnswerHealthFromStateKeptOffTheEventLoop() throws Exception {
        final var context = HttpApiClient.daemonContext(dir);
        context.serving().httpThreads(1);
        try (KvidxDaemon daemon = KvidxDaemon.start(context)) {
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            assertEquals(200, http.get("/health").status());
            final Path index = indexFile();
            final Path moved = index.resolveSibling("index.moved");
            Files.move(index, moved);
            final Process mkfifo = new ProcessBuilder("mkfifo", index.toString()).inheritIO().start();
            assertTrue(mkfifo.waitFor(10, TimeUnit.SECONDS) && mkfifo.exitValue() == 0, "mkfifo");
            try {
                final long start = System.nanoTime();
                HttpApiClient.Reply health;
                do {
                    final long asked = System.nanoTime();
                    health = http.get("/health");
                    assertTrue(System.nanoTime() - asked < 1_000_000_000L, "health waited on the file");
                    assertEquals("[]", http.get("/workers").body(), "the event loop answers the rest");
                    Thread.sleep(100);
                } while (health.status() == 200 && System.nanoTime() - start < 20_000_000_000L);
                assertEquals(503, health.status(), health.body());
                assertTrue(health.body().contains("\"reason\":\"the index file has not been checked for "),
                    health.body());
            } finally {
                // Lets a check blocked in open() come back (a writer meets the reader).
                try (FileOutputStream unblock = new FileOutputStream(index.toFile())) {
                    unblock.write(0);
                } catch (final java.io.IOException ex) {
                    // Broken pipe: the check opened the FIFO (our open met it) and closed it before the byte;
                    // it is unblocked all the same, which is all this is for.
                }
            }
            Files.delete(index);
            Files.write(index, new byte[4096]);
            final long start = System.nanoTime();
            HttpApiClient.Reply health;
            do {
                Thread.sleep(100);
                health = http.get("/health");
            } while (!health.body().contains("replaced") && System.nanoTime() - start < 20_000_000_000L);
            assertEquals(503, health.status(), health.body());
            assertTrue(health.body().contains("\"reason\":\"the index file was replaced\""), health.body());
            Files.delete(index);
            Files.move(moved, index);
        }
    }

    private Path indexFile() throws Exception {
        try (Stream<Path> files = Files.walk(dir)) {
            final List<Path> found = files.filter(p -> p.getFileName().toString().equals("index")).toList();
            assertEquals(1, found.size(), found.toString());
            return found.get(0);
        }
    }
}
