package io.kvidx.router;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Routers in this JVM for the tests, HTTP calls to them, and bounded waits. */
final class Routers {
    private Routers() {
    }

    /** A condition that may do I/O. */
    @FunctionalInterface
    interface Condition {
        boolean test() throws Exception;
    }

    /**
     * @param work the test's directory.
     * @return a configuration listening on a free loopback port, over a directory with no index (decisions fall
     * back, listed pods are registered by hand), with the {@code x-kvidx-*} response headers on and no warm-up.
     */
    static RouterConfig config(final Path work) {
        final RouterConfig c = new RouterConfig();
        c.listen = "127.0.0.1:0";
        c.dir = work.resolve("no-index").toString();
        c.cell = "none";
        c.responseHeaders = true;
        c.connectMs = 1_000;
        c.threads = 2;
        c.warmUpDecisions = 0; // ready at once: RouterWarmUpTest covers the warm-up
        return c;
    }

    /** GET on a router (or an engine), with header name, value pairs. */
    static HttpResponse<String> get(final int port, final String path, final String... headers)
        throws IOException, InterruptedException {
        final HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10)).GET();
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return MockEngine.HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * POST of a JSON body.
     *
     * @param port    loopback port.
     * @param path    path.
     * @param json    body.
     * @param headers name, value pairs.
     */
    static HttpResponse<String> post(final int port, final String path, final String json, final String... headers)
        throws IOException, InterruptedException {
        final HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(15)).header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return MockEngine.HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** @return the router's {@code /metrics} page. */
    static String metrics(final RouterServer router) throws IOException, InterruptedException {
        return get(router.port(), "/metrics").body();
    }

    /**
     * @param n      token count.
     * @param first  first token id.
     * @return {@code [first, first+1, ...]} as JSON.
     */
    static String ids(final int n, final int first) {
        final StringBuilder s = new StringBuilder("[");
        for (int i = 0; i < n; i++) {
            s.append(i == 0 ? "" : ",").append(first + i);
        }
        return s.append(']').toString();
    }

    /**
     * Waits, bounded, for a condition.
     *
     * @param what      what is awaited (failure message).
     * @param timeoutMs bound.
     * @param condition the condition.
     * @return ms waited.
     */
    static long await(final String what, final long timeoutMs, final Condition condition) throws Exception {
        final long start = System.nanoTime();
        final long deadline = start + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!condition.test()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            Thread.sleep(10);
        }
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    /** @return a fresh directory under the build's temp directory. */
    static Path workDir(final String prefix) throws IOException {
        return Files.createTempDirectory(prefix);
    }

    /** @return a fresh directory in /dev/shm when usable (an index's home), else under the temp directory. */
    static Path shmDir(final String prefix) throws IOException {
        final Path shm = Path.of("/dev/shm");
        return Files.isDirectory(shm) && Files.isWritable(shm) ? Files.createTempDirectory(shm, prefix)
            : Files.createTempDirectory(prefix);
    }

    /** Deletes a directory tree (best effort). */
    static void deleteTree(final Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (final IOException ex) {
            // best effort
        }
    }
}
