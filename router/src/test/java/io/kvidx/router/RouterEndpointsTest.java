package io.kvidx.router;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The router's own endpoints: {@code /v1/models} lists the pods' models (and LoRA adapters), {@code /health} is 200
 * while a pod can be routed to and 503 when none can, {@code /metrics} is a page {@code promtool check metrics}
 * accepts.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RouterEndpointsTest {
    private static final Path PROMTOOL = Path.of("/usr/bin/promtool");

    private static Path work;
    private static MockEngine engine;

    @BeforeAll
    static void startEngine() throws Exception {
        MockEngine.require();
        work = Routers.workDir("router-endpoints");
        engine = MockEngine.start(work, "pod-a", "model-a");
    }

    @AfterAll
    static void stopEngine() {
        if (engine != null) {
            engine.close();
        }
        Routers.deleteTree(work);
    }

    /** @return a loopback URL where nothing listens. */
    private static String deadUrl() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return "http://127.0.0.1:" + s.getLocalPort();
        }
    }

    /**
     * With {@code admin-token-file}, {@code /metrics} needs its token (401 in OpenAI's error shape without it), while
     * health, models and the proxied traffic, whose own Authorization goes to the engine, need none. Fails with the
     * router's BearerAuth off (metrics open) or guarding every path (traffic refused).
     */
    @Test
    void shouldGuardOnlyTheMetricsWithTheAdminToken() throws Exception {
        final Path token = work.resolve("admin-token");
        java.nio.file.Files.writeString(token, "metrics-secret-0123456789\n");
        final RouterConfig c = Routers.config(work);
        c.pod("pod-a", engine.url(), "model-a", null);
        c.adminTokenFile = token;
        try (RouterServer router = RouterServer.start(c)) {
            final HttpResponse<String> open = Routers.get(router.port(), "/metrics");
            assertEquals(401, open.statusCode(), open.body());
            assertTrue(open.body().contains("unauthorized"), open.body());
            final HttpResponse<String> wrong = Routers.get(router.port(), "/metrics", "Authorization",
                "Bearer not-the-token-0123456789");
            assertEquals(401, wrong.statusCode());
            final HttpResponse<String> ok = Routers.get(router.port(), "/metrics", "Authorization",
                "Bearer metrics-secret-0123456789");
            assertEquals(200, ok.statusCode());
            assertTrue(ok.body().contains("kvidx_router_pods_routable"), ok.body());
            assertEquals(200, Routers.get(router.port(), "/v1/models").statusCode());
            final HttpResponse<String> traffic = Routers.post(router.port(), "/v1/completions",
                "{\"model\": \"model-a\", \"prompt\": [1, 2, 3], \"max_tokens\": 1}", "Authorization",
                "Bearer engine-key");
            assertEquals(200, traffic.statusCode(), traffic.body());
        }
        java.nio.file.Files.writeString(token, "short");
        final RouterConfig bad = Routers.config(work);
        bad.adminTokenFile = token;
        final IllegalArgumentException ex = org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, bad::validate);
        assertTrue(ex.getMessage().contains("admin-token"), ex.getMessage());
    }

    /**
     * {@code /v1/models} lists every listed pod's model once and the LoRA adapters with their base model. Fails if
     * PodBook.models() stops adding the listed pods' models or RouterEndpoints.models() the adapters' parent.
     */
    @Test
    @SuppressWarnings("unchecked")
    void shouldListThePodsModels() throws Exception {
        final RouterConfig c = Routers.config(work);
        c.pod("pod-a", engine.url(), "model-a", null);
        c.pod("pod-b", deadUrl(), "model-b", null);
        c.pod("pod-c", deadUrl(), "model-a", null);
        c.loraAdapters.put("adapter-1", "model-a");
        try (RouterServer router = RouterServer.start(c)) {
            final HttpResponse<String> r = Routers.get(router.port(), "/v1/models");
            assertEquals(200, r.statusCode());
            final Map<String, Object> doc = (Map<String, Object>) io.kvidx.client.json.MiniJson.parse(r.body());
            assertEquals("list", doc.get("object"));
            final List<String> ids = new ArrayList<>();
            for (final Object o : (List<Object>) doc.get("data")) {
                final Map<String, Object> m = (Map<String, Object>) o;
                ids.add((String) m.get("id"));
                assertEquals("model", m.get("object"));
                if ("adapter-1".equals(m.get("id"))) {
                    assertEquals("model-a", m.get("parent"));
                }
            }
            assertEquals(List.of("adapter-1", "model-a", "model-b"), ids);
        }
    }

    /**
     * {@code /health}: 200 with the routable pod count while one pod answers its health check, 503 once its health
     * check fails (the pod's process killed), and 503 for a router with no pod at all. Fails if RouterEndpoints.health
     * stops answering 503 without a routable pod, or PodBook.checkHealth stops marking failing pods down.
     */
    @Test
    @SuppressWarnings("unchecked")
    void shouldReportHealthByRoutablePods() throws Exception {
        try (MockEngine doomed = MockEngine.start(work, "doomed", "model-a")) {
            final RouterConfig c = Routers.config(work);
            c.pod("pod-a", engine.url(), "model-a", null);
            c.pod("doomed", doomed.url(), "model-a", null);
            c.healthIntervalMs = 100;
            try (RouterServer router = RouterServer.start(c)) {
                Routers.await("both pods routable", 3_000, () -> health(router.port()).get("pods_routable")
                    instanceof Number n && n.intValue() == 2);
                assertEquals(200, Routers.get(router.port(), "/health").statusCode());
                doomed.kill();
                Routers.await("one pod routable", 3_000, () -> ((Number) health(router.port()).get("pods_routable"))
                    .intValue() == 1);
                final HttpResponse<String> ok = Routers.get(router.port(), "/health");
                assertEquals(200, ok.statusCode());
                assertTrue(ok.body().contains("\"status\":\"ok\""), ok.body());
                assertEquals(1, Metrics.value(Routers.metrics(router), "kvidx_router_pods_routable"));
            }
        }
        final RouterConfig alone = Routers.config(work);
        alone.pod("gone", deadUrl(), "model-a", null);
        alone.healthIntervalMs = 100;
        try (RouterServer router = RouterServer.start(alone)) {
            Routers.await("no pod routable: 503", 3_000, () -> Routers.get(router.port(), "/health").statusCode()
                == 503);
            final HttpResponse<String> down = Routers.get(router.port(), "/health");
            assertTrue(down.body().contains("\"pods_routable\":0"), down.body());
            assertTrue(Metrics.value(Routers.metrics(router), "kvidx_router_health_check_failures_total") > 0);
        }
        try (RouterServer router = RouterServer.start(Routers.config(work))) {
            assertEquals(503, Routers.get(router.port(), "/health").statusCode(), "no pod at all");
        }
    }

    private static Map<String, Object> health(final int port) throws Exception {
        @SuppressWarnings("unchecked")
        final Map<String, Object> m = (Map<String, Object>) io.kvidx.client.json.MiniJson.parse(
            Routers.get(port, "/health").body());
        return m;
    }

    /**
     * After traffic of several kinds (answers, a 400, 5xx answers retried on the other pod), {@code /metrics} is a
     * page {@code promtool check metrics} parses and lints clean, with each of the router's series. Fails if a metric
     * of RouterMetrics breaks the exposition format or Prometheus' naming rules (a counter without {@code _total}, a
     * name with a colon, a histogram without its unit).
     */
    @Test
    void shouldServeMetricsPromtoolAccepts() throws Exception {
        assumeTrue(Files.isExecutable(PROMTOOL) || System.getenv("CI") != null, "promtool is not installed");
        final RouterConfig c = Routers.config(work);
        c.policy = "round-robin";
        c.healthIntervalMs = 0;
        try (FakePod failing = new FakePod(r -> FakePod.response(500, "application/json", "{}"))) {
            c.pod("pod-a", engine.url(), "model-a", null);
            c.pod("pod-500", failing.url(), "model-a", null);
            try (RouterServer router = RouterServer.start(c)) {
                checkMetrics(router);
            }
        }
    }

    private static void checkMetrics(final RouterServer router) throws Exception {
        for (int i = 0; i < 6; i++) {
            assertEquals(200, Routers.post(router.port(), "/v1/completions", "{\"prompt\": [1, 2, 3]}")
                .statusCode());
        }
        assertEquals(400, Routers.post(router.port(), "/v1/completions", "{").statusCode());
        final String page = Routers.metrics(router);
        for (final String name : List.of("kvidx_router_requests_total", "kvidx_router_upstream_failures_total",
            "kvidx_router_retries_total", "kvidx_router_decisions_total", "kvidx_router_in_flight",
            "kvidx_router_time_to_first_byte_seconds_bucket", "kvidx_router_decision_seconds_count",
            "kvidx_router_pods_routable", "kvidx_router_health_check_failures_total")) {
            assertTrue(page.contains("\n" + name), name + " missing:\n" + page);
        }
        assertEquals(6, Metrics.value(page, "kvidx_router_requests_total", "status", "200"));
        assertEquals(1, Metrics.value(page, "kvidx_router_requests_total", "status", "400"));
        final double failures = Metrics.value(page, "kvidx_router_upstream_failures_total", "reason", "status");
        assertTrue(failures >= 3, page);
        assertEquals(failures, Metrics.value(page, "kvidx_router_retries_total"));
        final Process promtool = new ProcessBuilder(PROMTOOL.toString(), "check", "metrics")
            .redirectErrorStream(true).start();
        promtool.getOutputStream().write(page.getBytes(StandardCharsets.UTF_8));
        promtool.getOutputStream().close();
        final String out = new String(promtool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(promtool.waitFor(30, TimeUnit.SECONDS), "promtool hung");
        assertEquals(0, promtool.exitValue(), "promtool check metrics:\n" + out + "\n" + page);
    }
}
