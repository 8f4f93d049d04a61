package io.kvidx.router;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The router's warm-up ({@link WarmUp}): {@code /health} answers 503 ("warming up") while the synthetic decisions
 * run, then 200; the warm-up stops at its decision count or its time bound, whichever comes first; its decisions are
 * made by a twin of the routing document, so the router's own decision counters do not see them.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RouterWarmUpTest {
    private static Path work;
    private static FakePod pod;

    @BeforeAll
    static void start() throws Exception {
        work = Routers.workDir("router-warm-up");
        pod = new FakePod(r -> FakePod.response(200, "application/json", "{}"));
    }

    @AfterAll
    static void stop() throws Exception {
        pod.close();
        Routers.deleteTree(work);
    }

    /**
     * A warm-up longer than its time bound: 503 with status "warming up" at first, 200 once the bound passed. Fails
     * if the health check stops looking at the warm-up, or the time bound is not kept.
     */
    @Test
    void shouldAnswer503WhileWarmingUpThen200() throws Exception {
        final RouterConfig c = Routers.config(work);
        c.pod("up", pod.url(), "m", null);
        c.warmUpDecisions = 10_000_000;
        c.warmUpMs = 4_000;
        final long started = System.nanoTime();
        try (RouterServer router = RouterServer.start(c)) {
            final HttpResponse<String> during = Routers.get(router.port(), "/health");
            assertEquals(503, during.statusCode(), during.body());
            assertTrue(during.body().contains("\"status\":\"warming up\""), during.body());
            Routers.await("the warm-up over", 20_000, () -> Routers.get(router.port(), "/health").statusCode() == 200);
            final long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertTrue(ms >= 3_000, "ready after " + ms + " ms, before the warm-up's bound");
            assertTrue(router.warmUp.decisionsMade() > 0 && router.warmUp.decisionsMade() < c.warmUpDecisions,
                "decisions: " + router.warmUp.decisionsMade());
        }
    }

    /**
     * A short warm-up makes exactly its decisions, and the router's decision counters stay at 0 (the twin's are
     * its own). Fails if the warm-up decides through the router itself.
     */
    @Test
    void shouldMakeItsDecisionsOnATwin() throws Exception {
        final RouterConfig c = Routers.config(work);
        c.pod("up", pod.url(), "m", null);
        c.warmUpDecisions = 300;
        try (RouterServer router = RouterServer.start(c)) {
            Routers.await("ready", 20_000, () -> Routers.get(router.port(), "/health").statusCode() == 200);
            assertEquals(300, router.warmUp.decisionsMade());
            final String page = Routers.metrics(router);
            assertEquals(0, Metrics.value(page, "kvidx_router_decisions_total"), page);
        }
    }
}
