package io.kvidx.router;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A pod's process killed mid-run, behind two routers over the same two mock engines (round robin, so every other
 * decision names the pod): one whose health check runs only at start (so nothing but its own calls can tell it the
 * pod died) and one checking every 200 ms. Requests in flight on the pod and requests sent after are answered by the
 * other pod (the router retries before anything reached the client), the dead pod is marked down and no longer
 * tried, and once it is started again on the same port the health check brings it back.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RouterRetryTest {
    private static final String FAST = "{\"prompt\": [5, 6, 7], \"max_tokens\": 1}";
    /** 100 tokens: about 2 s on pod B before its first byte (a non-streamed answer is sent whole). */
    private static final String LONG = "{\"prompt\": [5, 6, 7], \"max_tokens\": 100}";

    private static RouterServer router(final Path work, final MockEngine a, final MockEngine b,
        final int healthIntervalMs) {
        final RouterConfig c = Routers.config(work);
        c.policy = "round-robin";
        c.healthIntervalMs = healthIntervalMs;
        c.attempts = 3;
        c.pod(a.podId, a.url(), a.model, null);
        c.pod(b.podId, b.url(), b.model, null);
        return RouterServer.start(c);
    }

    /** Sends a request; asserts it was answered, by the pod the router names. @return the pod that answered. */
    private static String answeredBy(final RouterServer router, final String body) throws Exception {
        final HttpResponse<String> r = Routers.post(router.port(), "/v1/completions", body);
        return check(r);
    }

    private static String check(final HttpResponse<String> r) {
        assertEquals(200, r.statusCode(), r::body);
        final String pod = r.headers().firstValue("x-kvidx-mock-pod").orElseThrow();
        assertEquals(pod, r.headers().firstValue("x-kvidx-pod").orElseThrow(), "the router names the pod that"
            + " answered");
        return pod;
    }

    /**
     * Fails if ProxyCall stops retrying before the first byte ({@code failed} → ProxyExchange.failed replans →
     * {@code next}), if ProxyCall.connected stops marking a refusing pod down ({@code calls.pods.markDown(slot)}), if
     * the decisions stop leaving out the pods PodBook holds down ({@code pods.excludeUnroutable(rc)} in Decisions),
     * or if
     * PodBook.checkHealth stops clearing the down bit of a pod that answers again.
     */
    @Test
    void shouldRetryOnTheOtherPodMarkTheDeadOneDownAndTakeItBack() throws Exception {
        MockEngine.require();
        final Path work = Routers.workDir("router-retry");
        try (MockEngine a = MockEngine.start(work, "pod-a", "m");
            MockEngine b = MockEngine.start(work, "pod-b", "m", "--decode-ms-per-token", "20");
            RouterServer once = router(work, a, b, 60_000);
            RouterServer checking = router(work, a, b, 200)) {
            final Set<String> seen = new HashSet<>();
            for (int i = 0; i < 4; i++) {
                seen.add(answeredBy(once, FAST));
                seen.add(answeredBy(checking, FAST));
            }
            assertEquals(Set.of("pod-a", "pod-b"), seen, "round robin uses both pods");

            // Two requests at once: round robin sends one to each; B holds its own for about 2 s.
            final List<CompletableFuture<HttpResponse<String>>> inFlight = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                inFlight.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        return Routers.post(once.port(), "/v1/completions", LONG);
                    } catch (final Exception ex) {
                        throw new IllegalStateException(ex);
                    }
                }));
            }
            Routers.await("a request running on pod B", 5_000, () -> b.metric("vllm:num_requests_running") == 1);
            b.kill();
            for (final CompletableFuture<HttpResponse<String>> f : inFlight) {
                assertEquals("pod-a", check(f.get(10, TimeUnit.SECONDS)), "retried on A before the first byte");
            }
            String page = Routers.metrics(once);
            assertEquals(1, Metrics.value(page, "kvidx_router_upstream_failures_total", "stage", "single", "reason",
                "closed"), page);
            assertEquals(1, Metrics.value(page, "kvidx_router_retries_total"));

            // Sent after the kill: the first call to B is refused, B is marked down and never tried again.
            for (int i = 0; i < 10; i++) {
                assertEquals("pod-a", answeredBy(once, FAST));
            }
            page = Routers.metrics(once);
            assertEquals(1, Metrics.value(page, "kvidx_router_upstream_failures_total", "reason", "connect"),
                "B is tried once, then left out:\n" + page);
            assertEquals(Metrics.value(page, "kvidx_router_upstream_failures_total"),
                Metrics.value(page, "kvidx_router_retries_total"), "every failure retried");
            assertEquals(1, Metrics.value(page, "kvidx_router_pods_routable"));
            assertEquals(4 + 2 + 10, Metrics.value(page, "kvidx_router_requests_total", "status", "200"));

            // The checking router learns it from the health check: B is never tried.
            Routers.await("health check marks B down", 3_000, () -> Metrics.value(Routers.metrics(checking),
                "kvidx_router_pods_routable") == 1);
            for (int i = 0; i < 6; i++) {
                assertEquals("pod-a", answeredBy(checking, FAST));
            }
            assertEquals(0, Metrics.value(Routers.metrics(checking), "kvidx_router_upstream_failures_total"));

            // B again, on the same port: the health check brings it back.
            b.restart();
            Routers.await("health check brings B back", 3_000, () -> Metrics.value(Routers.metrics(checking),
                "kvidx_router_pods_routable") == 2);
            final Set<String> after = new HashSet<>();
            for (int i = 0; i < 4; i++) {
                after.add(answeredBy(checking, FAST));
            }
            assertEquals(Set.of("pod-a", "pod-b"), after);
            assertEquals(0, Metrics.value(Routers.metrics(checking), "kvidx_router_upstream_failures_total"));
        } finally {
            Routers.deleteTree(work);
        }
    }
}
