package io.kvidx.router;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The router sends the headers of routing's one proxy policy, as {@code HttpExecutor} does: a data-parallel rank pod
 * {@code <pod>#<r>} is called at its engine's URL with {@code X-data-parallel-rank: r} and the engine's own pod with
 * rank 0, whatever rank header the client sent; with {@code cache-hint} every call carries the hint for the chosen
 * pod in place of the client's header of that name. Fails if ProxyCall stops adding the policy's headers
 * ({@code ProxyExchange.Call.headers}) or forwards the client's rank or hint header
 * ({@code ProxyPolicy.forwardsRequestHeader}).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RouterHeadersTest {
    @Test
    void shouldSendTheRankAndTheCacheHintInPlaceOfTheClients() throws Exception {
        final Path work = Routers.workDir("router-headers");
        try (FakePod engine = new FakePod(r -> FakePod.response(200, "application/json", "{\"ok\": true}"))) {
            final RouterConfig c = Routers.config(work);
            c.policy = "round-robin";
            c.healthIntervalMs = 0; // the engine records only the proxied requests
            c.cacheHint = "x-kvidx-cache-hint";
            c.pod("eng", engine.url(), "m", null);
            c.pod("eng#1", engine.url(), "m", null);
            try (RouterServer router = RouterServer.start(c)) {
                final Set<String> ranks = new HashSet<>();
                for (int i = 0; i < 4; i++) {
                    final HttpResponse<String> r = Routers.post(router.port(), "/v1/completions",
                        "{\"model\": \"m\", \"prompt\": [1, 2, 3]}", "X-Data-Parallel-Rank", "7",
                        "x-kvidx-cache-hint", "tier=gpu; from the client");
                    assertEquals(200, r.statusCode(), r::body);
                    final FakePod.Request seen = engine.requests.poll(5, TimeUnit.SECONDS);
                    assertNotNull(seen);
                    final String pod = r.headers().firstValue("x-kvidx-pod").orElseThrow();
                    final String rank = seen.header("x-data-parallel-rank");
                    assertEquals("eng#1".equals(pod) ? "1" : "0", rank, "the rank of the pod chosen: " + pod);
                    ranks.add(rank);
                    int values = 0;
                    for (final String[] h : seen.headers()) {
                        if (h[0].equalsIgnoreCase("x-data-parallel-rank")
                            || h[0].equalsIgnoreCase("x-kvidx-cache-hint")) {
                            values++;
                        }
                    }
                    assertEquals(2, values, "one rank and one hint header, the client's dropped");
                    final String hint = seen.header("x-kvidx-cache-hint");
                    assertTrue(hint.startsWith("tier=none; blocks=0;"), hint);
                }
                assertEquals(Set.of("0", "1"), ranks, "round robin called both ranks of the engine");
            }
        } finally {
            Routers.deleteTree(work);
        }
    }
}
