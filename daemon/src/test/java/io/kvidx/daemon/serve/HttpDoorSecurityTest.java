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
 * given. Registrations are bounded in number and in the hosts their endpoints may name.
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
    void shouldKeepDumpAndMetricsForTheAdminToken() throws Exception {
        final Path token = dir.resolve("token");
        Files.writeString(token, TOKEN);
        final Path admin = dir.resolve("admin");
        Files.writeString(admin, "kvidx-admin-token-55e1b0");
        final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(4096)
            .heartbeatIntervalMs(50).idleStrategy("backoff");
        ctx.serving().http("127.0.0.1:0").httpTokenFile(token.toString()).httpAdminTokenFile(admin.toString());
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx); HttpClient client = HttpClient.newHttpClient()) {
            final String base = "http://127.0.0.1:" + daemon.httpPort();
            assertEquals(200, get(client, base + "/workers", "Bearer " + TOKEN).statusCode());
            assertEquals(401, get(client, base + "/workers", "Bearer kvidx-admin-token-55e1b0").statusCode(),
                "the admin token is for the admin paths only");
            for (final String path : new String[] {"/dump", "/metrics"}) {
                assertEquals(401, get(client, base + path, "Bearer " + TOKEN).statusCode(), path);
                assertEquals(200, get(client, base + path, "Bearer kvidx-admin-token-55e1b0").statusCode(), path);
            }
            final DaemonContext replica = new DaemonContext().dir(dir.resolve("replica")).shardCount(16)
                .capacityBlocks(4096).heartbeatIntervalMs(50).idleStrategy("backoff");
            replica.serving().httpTokenFile(token.toString()).httpAdminTokenFile(admin.toString());
            replica.snapshots().peer(base);
            try (KvidxDaemon second = KvidxDaemon.start(replica)) {
                assertTrue(second.catchUp() != null, "the replica's --peer sends the admin token");
            }
        }
        final DaemonContext alone = new DaemonContext().dir(dir.resolve("alone")).shardCount(16).capacityBlocks(4096);
        alone.serving().http("127.0.0.1:0").httpAdminTokenFile(admin.toString());
        assertThrows(ConfigException.class, alone::conclude, "an admin token needs the token");
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

    @Test
    void shouldBoundRegistrationsAndTheHostsTheyName() throws Exception {
        final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(4096)
            .heartbeatIntervalMs(50).idleStrategy("backoff");
        ctx.serving().http("127.0.0.1:0").httpMaxRegistrations(2).addHttpRegisterHost("127.0.0.0/8")
            .addHttpRegisterHost("*.vllm.test");
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx); HttpClient client = HttpClient.newHttpClient()) {
            final String base = "http://127.0.0.1:" + daemon.httpPort();
            final HttpResponse<String> far = register(client, base, 1, "tcp://10.9.9.9:5557", null);
            assertEquals(403, far.statusCode(), far.body());
            assertTrue(far.body().contains("\"code\":\"endpoint_not_allowed\""), far.body());
            assertEquals(403, register(client, base, 1, "tcp://127.0.0.1:5557", "tcp://10.9.9.9:5558").statusCode(),
                "the replay endpoint is checked too");
            assertEquals(201, register(client, base, 1, "tcp://127.0.0.1:45557", null).statusCode());
            assertEquals(201, register(client, base, 2, "tcp://127.0.0.2:45557", null).statusCode());
            final HttpResponse<String> third = register(client, base, 3, "tcp://127.0.0.3:45557", null);
            assertEquals(429, third.statusCode(), third.body());
            assertTrue(third.body().contains("\"code\":\"too_many_engines\""), third.body());
            final HttpResponse<String> again = register(client, base, 1, "tcp://127.0.0.1:45557", null);
            assertEquals(409, again.statusCode(), "the same registration again is Dynamo's 409, not a 429");
            assertTrue(again.body().contains("\"code\":\"already_registered\""), again.body());
            assertEquals(200, client.send(HttpRequest.newBuilder(URI.create(base + "/unregister"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"instance_id\":1}")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode());
            assertEquals(201, register(client, base, 3, "tcp://127.0.0.3:45557", null).statusCode(),
                "room again once one left");
        }
    }

    private static HttpResponse<String> register(final HttpClient client, final String base, final int instance,
        final String endpoint, final String replay) throws Exception {
        final String body = "{\"instance_id\":" + instance + ",\"endpoint\":\"" + endpoint + "\""
            + (replay == null ? "" : ",\"replay_endpoint\":\"" + replay + "\"") + ",\"model_name\":\"m\"}";
        return client.send(HttpRequest.newBuilder(URI.create(base + "/register"))
            .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
            HttpResponse.BodyHandlers.ofString());
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
