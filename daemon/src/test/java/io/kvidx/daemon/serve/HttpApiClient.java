package io.kvidx.daemon.serve;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A real HTTP client (java.net.http, keep-alive) for the daemon's indexer API in tests. */
final class HttpApiClient {
    /** A response: status and body. */
    record Reply(int status, String body) {
    }

    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    private final String base;

    HttpApiClient(final int port) {
        this.base = "http://127.0.0.1:" + port;
    }

    Reply get(final String path) throws Exception {
        final HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(base + path))
            .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r.body());
    }

    Reply post(final String path, final String json) throws Exception {
        final HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(base + path))
            .timeout(Duration.ofSeconds(10)).header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r.body());
    }

    /**
     * @param dir the test's directory.
     * @return the daemon the serve tests run: a small cell, no pod timeout, a 50 ms heartbeat, backoff idling, the
     * HTTP API on a free loopback port.
     */
    static io.kvidx.daemon.config.DaemonContext daemonContext(final java.nio.file.Path dir) {
        final io.kvidx.daemon.config.DaemonContext context = new io.kvidx.daemon.config.DaemonContext().dir(dir)
            .shardCount(16).capacityBlocks(8192).podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
        context.serving().http("127.0.0.1:0");
        return context;
    }

    /**
     * @param tokens token ids.
     * @return them comma-separated (a Python client's argument).
     */
    static String csv(final int[] tokens) {
        final StringBuilder b = new StringBuilder();
        for (final int t : tokens) {
            b.append(b.isEmpty() ? "" : ",").append(t);
        }
        return b.toString();
    }

    static String tokens(final int[] tokens, final int count) {
        final StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < count; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(tokens[i]);
        }
        return b.append(']').toString();
    }
}
