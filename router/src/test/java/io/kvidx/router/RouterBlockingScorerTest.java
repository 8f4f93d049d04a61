package io.kvidx.router;

import io.kvidx.testing.SlowLmCacheController;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code kvidx router} with the LMCache scorer's prefix lookup (issue 35): each decision waits for the controller's
 * {@code POST /lookup} (here a real HTTP controller answering after 800 ms). Those decisions leave the event loop, so
 * the router's one event loop answers {@code /health} at once while three lookups are pending, and every request is
 * routed by the lookup's answer (pod-b holds the prompt). A pod that fails makes the router replan on the event loop:
 * the request's lookup answer is reused, the controller is not asked (and waited for) again. Real sockets: the
 * controller, two scripted pods ({@link FakePod}), a real HTTP client. Fails when Decisions decides such requests on
 * the event loop (health then waits behind the lookups) or when the scorer asks the controller again on a replan.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RouterBlockingScorerTest {
    private static final long LOOKUP_MS = 800;

    @Test
    void shouldDecideOffTheEventLoopWhenAScorerMayWait() throws Exception {
        final SlowLmCacheController controller = new SlowLmCacheController(LOOKUP_MS);
        final AtomicBoolean bFails = new AtomicBoolean();
        final Path work = Routers.workDir("router-blocking-scorer");
        try (FakePod a = new FakePod(r -> FakePod.response(200, "application/json", "{\"pod\": \"a\"}"));
            FakePod b = new FakePod(r -> bFails.get() ? FakePod.response(503, "application/json", "{}")
                : FakePod.response(200, "application/json", "{\"pod\": \"b\"}"))) {
            final RouterConfig c = Routers.config(work);
            c.threads = 1;
            c.healthIntervalMs = 0;
            c.attempts = 3;
            c.pod("pod-a", a.url(), "m", null);
            c.pod("pod-b", b.url(), "m", null);
            c.routingYaml = "profiles:\n  lm:\n    score:\n      - {type: lmcache, lookup-mode: prefix-lookup, "
                + "controller: \"" + controller.url() + "\", timeout-ms: 5000, "
                + "key-weight: 1.0}\n    pick: max-score\nworkflow: {type: single, profile: lm}\n";
            try (RouterServer router = RouterServer.start(c)) {
                final String body = "{\"model\": \"m\", \"prompt\": " + Routers.ids(64, 100) + ", \"max_tokens\": 1}";
                final List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    inFlight.add(CompletableFuture.supplyAsync(() -> {
                        try {
                            return Routers.post(router.port(), "/v1/completions", body);
                        } catch (final Exception ex) {
                            throw new IllegalStateException(ex);
                        }
                    }));
                }
                Routers.await("three lookups pending", 5_000, () -> controller.lookups() == 3);
                final long asked = System.nanoTime();
                final HttpResponse<String> health = Routers.get(router.port(), "/health");
                final long healthMs = (System.nanoTime() - asked) / 1_000_000;
                assertTrue(healthMs < LOOKUP_MS / 2, "/health waited " + healthMs + " ms behind the lookups");
                assertTrue(health.statusCode() == 200 || health.statusCode() == 503, health.body());
                for (final CompletableFuture<HttpResponse<String>> f : inFlight) {
                    final HttpResponse<String> r = f.get(20, TimeUnit.SECONDS);
                    assertEquals(200, r.statusCode(), r.body());
                    assertEquals("pod-b", r.headers().firstValue("x-kvidx-pod").orElseThrow(), "routed by the lookup");
                }

                // pod-b fails: the replan (on the event loop) reuses the request's lookup answer.
                bFails.set(true);
                final int before = controller.lookups();
                final long sent = System.nanoTime();
                final HttpResponse<String> retried = Routers.post(router.port(), "/v1/completions", body);
                final long tookMs = (System.nanoTime() - sent) / 1_000_000;
                assertEquals(200, retried.statusCode(), retried.body());
                assertEquals("pod-a", retried.headers().firstValue("x-kvidx-pod").orElseThrow());
                assertEquals(before + 1, controller.lookups(), "one lookup per request, none for its replan");
                assertTrue(tookMs < 2 * LOOKUP_MS, tookMs + " ms: the replan waited for the controller again");
            }
        } finally {
            controller.close();
            Routers.deleteTree(work);
        }
    }
}
