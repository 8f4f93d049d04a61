package io.kvidx.daemon.serve;

import io.kvidx.daemon.config.ConfigException;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The daemon's HTTP API behind a bearer token, over a real daemon and a real HTTP client: every endpoint but
 * {@code /health} answers 401 without the token or with a wrong one, and works with it; the refusals are counted in
 * Prometheus. An address other hosts reach is refused at start unless a token file or {@code httpAllowRemote} is
 * given.
 */
@Timeout(60)
class HttpDoorSecurityTest {
    private static final String TOKEN = "kvidx-test-token-7f3a9c";

    @TempDir
    Path dir;

    @Test
    void shouldRequireTheTokenOnEveryEndpointButHealth() throws Exception {
        final Path token = dir.resolve("token");
        Files.writeString(token, TOKEN + "\n");
        final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(4096)
            .heartbeatIntervalMs(50).idleStrategy("backoff");
        ctx.serving().http("127.0.0.1:0").httpTokenFile(token.toString());
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx); HttpClient client = HttpClient.newHttpClient()) {
            final String base = "http://127.0.0.1:" + daemon.httpPort();
            assertEquals(200, get(client, base + "/health", null).statusCode(), "probes carry no token");
            for (final String path : new String[] {"/workers", "/metrics", "/dump"}) {
                final HttpResponse<String> none = get(client, base + path, null);
                assertEquals(401, none.statusCode(), path);
                assertTrue(none.body().contains("\"code\":\"unauthorized\""), none.body());
                assertEquals(401, get(client, base + path, "Bearer " + TOKEN.replace('7', '8')).statusCode(), path);
            }
            final HttpResponse<String> query = client.send(HttpRequest.newBuilder(URI.create(base + "/query"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"token_ids\":[1,2,3]}")).build(),
                HttpResponse.BodyHandlers.ofString());
            assertEquals(401, query.statusCode(), "a query needs it too");
            assertEquals(200, get(client, base + "/workers", "Bearer " + TOKEN).statusCode());
            final String metrics = get(client, base + "/metrics", "Bearer " + TOKEN).body();
            assertTrue(metrics.contains("kvidx_http_unauthorized_total 7.0"), metrics);
            assertTrue(metrics.contains("kvidx_http_connections_open "), metrics);
            assertTrue(metrics.contains("kvidx_http_read_deadlines_expired_total 0.0"), metrics);

            // A replica sharing the token catches up from this daemon's snapshot through the token-protected /dump.
            final DaemonContext replica = new DaemonContext().dir(dir.resolve("replica")).shardCount(16)
                .capacityBlocks(4096).heartbeatIntervalMs(50).idleStrategy("backoff");
            replica.serving().httpTokenFile(token.toString());
            replica.snapshots().peer(base);
            try (KvidxDaemon second = KvidxDaemon.start(replica)) {
                assertTrue(second.catchUp() != null, "the snapshot was loaded with the token");
            }
        }
    }

    @Test
    void shouldRefuseAnAddressOtherHostsReachWithoutATokenOrAllowRemote() throws Exception {
        final DaemonContext open = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(4096);
        open.serving().http("0.0.0.0:0");
        final ConfigException ex = assertThrows(ConfigException.class, open::conclude);
        assertTrue(ex.getMessage().contains("httpTokenFile (--http-token-file)")
            && ex.getMessage().contains("httpAllowRemote (--http-allow-remote)"), ex.getMessage());
        final Path token = dir.resolve("token");
        Files.writeString(token, TOKEN);
        final DaemonContext withToken = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(4096);
        withToken.serving().http("0.0.0.0:0").httpTokenFile(token.toString());
        withToken.conclude();
        final DaemonContext allowed = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(4096);
        allowed.serving().http("0.0.0.0:0").httpAllowRemote(true);
        allowed.conclude();
        final Path weak = dir.resolve("weak");
        Files.writeString(weak, "short");
        final DaemonContext bad = new DaemonContext().dir(dir.resolve("b")).shardCount(16).capacityBlocks(4096);
        bad.serving().http("127.0.0.1:0").httpTokenFile(weak.toString());
        final RuntimeException refused = assertThrows(RuntimeException.class, () -> KvidxDaemon.start(bad).close());
        assertTrue(String.valueOf(refused.getMessage()).contains("at least 16"), String.valueOf(refused));
    }

    private static HttpResponse<String> get(final HttpClient client, final String url, final String authorization)
        throws Exception {
        final HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).GET();
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }
}
