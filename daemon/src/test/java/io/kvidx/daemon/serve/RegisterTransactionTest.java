package io.kvidx.daemon.serve;

import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.daemon.membership.EngineFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Registration is one transaction (issue 35): the daemon subscribes first and keeps and publishes the engine only once
 * the subscription is made. An endpoint that passes the API's shape check but that ZeroMQ refuses (a port out of
 * range, no port) gets an error; nothing is left behind (no engine in {@code /workers}, none kept in
 * {@code state/engines.json}, none after a restart), and a retry really retries (the same error, not 200
 * {@code unchanged}). Real daemon, real HTTP client.
 */
@Timeout(60)
class RegisterTransactionTest {
    @TempDir
    Path dir;

    @Test
    void shouldLeaveNothingBehindWhenTheSubscriptionFails() throws Exception {
        final String bad = "{\"instance_id\":5,\"endpoint\":\"tcp://127.0.0.1:99999\",\"model_name\":\"m\"}";
        final String noPort = "{\"instance_id\":6,\"endpoint\":\"tcp://enginehost\",\"model_name\":\"m\"}";
        try (KvidxDaemon daemon = KvidxDaemon.start(HttpApiClient.daemonContext(dir))) {
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            for (int attempt = 0; attempt < 3; attempt++) {
                for (final String body : List.of(bad, noPort)) {
                    final HttpApiClient.Reply r = http.post("/register", body);
                    assertEquals(400, r.status(), "attempt " + attempt + ": " + r.body());
                    assertTrue(r.body().contains("is refused by ZeroMQ") && r.body().contains("nothing was registered")
                        && r.body().endsWith("\"code\":\"invalid_field\"}"), r.body());
                }
                assertEquals("[]", http.get("/workers").body());
                assertEquals(404, http.post("/unregister", "{\"instance_id\":5}").status());
            }
            assertFalse(kept().contains("\"5\"") || kept().contains("\"6\""), kept());
            // A good registration beside them is kept and listed.
            assertEquals(201, http.post("/register", "{\"instance_id\":7,\"endpoint\":\"tcp://127.0.0.1:9\","
                + "\"model_name\":\"m\"}").status());
            assertTrue(kept().contains("\"7\""), kept());
        }
        try (KvidxDaemon daemon = KvidxDaemon.start(HttpApiClient.daemonContext(dir))) {
            final String workers = new HttpApiClient(daemon.httpPort()).get("/workers").body();
            assertTrue(workers.startsWith("[{\"instance_id\":7,") && !workers.contains("\"instance_id\":5")
                && !workers.contains("\"instance_id\":6"), workers);
        }
    }

    private String kept() throws Exception {
        try (Stream<Path> files = Files.walk(dir)) {
            final List<Path> found = files.filter(p -> p.getFileName().toString().equals(EngineFile.FILE_NAME))
                .toList();
            return found.isEmpty() ? "" : Files.readString(found.get(0));
        }
    }
}
