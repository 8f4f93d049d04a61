package io.kvidx.routing;

import com.sun.net.httpserver.HttpServer;
import io.kvidx.routing.lmcache.LmCacheWorkerPoller;
import io.kvidx.client.json.MiniJson;
import io.kvidx.routing.plugins.LmCacheScorer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The LMCache-aware scorer against a real local HTTP server answering like LMCache's controller.
 */
@Timeout(30)
class LmCacheScorerTest {
    private static final String WORKERS = """
        {"workers": [
          {"instance_id": "pod-1", "worker_id": 0, "ip": "127.0.0.1", "port": 8001, "peer_init_url": null,
           "registration_time": 1.7e9, "last_heartbeat_time": 1.7e9, "key_count": 300},
          {"instance_id": "pod-1", "worker_id": 1, "ip": "127.0.0.1", "port": 8002, "peer_init_url": null,
           "registration_time": 1.7e9, "last_heartbeat_time": 1.7e9, "key_count": 100},
          {"instance_id": "pod-2", "worker_id": 0, "ip": "127.0.0.1", "port": 8003, "peer_init_url": "x",
           "registration_time": 1.7e9, "last_heartbeat_time": 1.7e9, "key_count": 200},
          {"instance_id": "unknown", "worker_id": 0, "ip": "10.0.0.9", "port": 8004, "peer_init_url": null,
           "registration_time": 1.7e9, "last_heartbeat_time": 1.7e9, "key_count": 999}
        ], "total_count": 4}
        """;

    private HttpServer server;
    private final AtomicReference<String> body = new AtomicReference<>(WORKERS);
    private final AtomicInteger status = new AtomicInteger(200);
    private final AtomicInteger requests = new AtomicInteger();

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext(LmCacheWorkerPoller.WORKERS_PATH, exchange -> {
            requests.incrementAndGet();
            final byte[] bytes = body.get().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(status.get(), bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private URI controller() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
    }

    @Test
    void shouldPollKeyCountsAndScoreWithTheLmCacheFormula() throws Exception {
        final PodRegistry registry = PluginTestSupport.registry(4);
        final LmCacheWorkerPoller poller = new LmCacheWorkerPoller(controller(), registry, null,
            Duration.ofSeconds(5));
        assertEquals(3, poller.pollOnce());
        assertEquals(1, requests.get());
        assertEquals(0, poller.keyCount(0));
        assertEquals(400, poller.keyCount(1), "tensor-parallel workers of one pod add up");
        assertEquals(200, poller.keyCount(2));
        registry.load(0, 0, 0, 0).load(1, 2, 6, 0).load(2, 0, 2, 0).load(3, 0, 4, 0);
        final RoutingContext ctx = PluginTestSupport.context(registry, null);
        final double[] scores = new double[256];
        new LmCacheScorer("lm", poller, registry, LoadMetric.REQUESTS, LmCacheScorer.KEY_WEIGHT_DEFAULT)
            .score(ctx, scores);
        final double w = 0.7;
        assertArrayEquals(new double[] {
            w * 0 + (1 - w) * 1.0,
            w * 1 + (1 - w) * 0.0,
            w * 0.5 + (1 - w) * (8 - 2) / 8.0,
            w * 0 + (1 - w) * (8 - 4) / 8.0}, java.util.Arrays.copyOf(scores, 4), 1e-9);
    }

    @Test
    void shouldMapWorkersByAddressAndKeepCountsOnFailure() throws Exception {
        final PodRegistry registry = PluginTestSupport.registry(4);
        final LmCacheWorkerPoller poller = new LmCacheWorkerPoller(controller(), registry,
            (instance, worker, ip, port) -> port == 8003 ? "pod-3" : null, Duration.ofSeconds(5));
        assertEquals(1, poller.pollOnce());
        assertEquals(200, poller.keyCount(3));
        status.set(500);
        body.set("{\"detail\": \"Controller manager not available\"}");
        assertThrows(IOException.class, poller::pollOnce);
        poller.run();
        assertEquals(1, poller.errors());
        assertTrue(poller.lastError().contains("500"), poller.lastError());
        assertEquals(200, poller.keyCount(3), "previous counts kept");
        status.set(200);
        body.set("{\"workers\": [ {\"instance_id\": ");
        assertThrows(IOException.class, poller::pollOnce);
    }

    @Test
    void shouldParseJson() {
        final Object v = MiniJson.parse("{\"a\": [1, -2.5e1, \"x\\u0041\\n\", true, false, null], \"b\": {}}");
        final Map<?, ?> m = (Map<?, ?>) v;
        assertEquals(List.of(1L, -25.0, "xA\n", true, false), ((List<?>) m.get("a")).subList(0, 5));
        assertEquals(Map.of(), m.get("b"));
        assertThrows(IllegalArgumentException.class, () -> MiniJson.parse("{\"a\" 1}"));
        assertThrows(IllegalArgumentException.class, () -> MiniJson.parse("[1,]"));
        assertThrows(IllegalArgumentException.class, () -> MiniJson.parse("{} x"));
    }
}
