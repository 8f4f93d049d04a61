package io.kvidx.routing;

import io.kvidx.routing.profiles.RoutingProfiles;
import com.sun.net.httpserver.HttpServer;
import io.kvidx.routing.exec.Executor;
import io.kvidx.routing.exec.HttpExecutor;
import io.kvidx.routing.exec.ProxyRequest;
import io.kvidx.routing.plugins.LeastLoadScorer;
import io.kvidx.routing.plugins.MaxScorePicker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The HTTP executor sends a request for a data-parallel rank pod {@code <pod>#<r>} to its engine's URL with the
 * {@code X-data-parallel-rank} header vLLM's OpenAI server reads; a base pod with known ranks gets rank 0; a pod of
 * its own endpoint gets no header; a client's own rank header is never forwarded. Against real loopback HTTP servers
 * (the JDK's).
 */
@Timeout(30)
class HttpExecutorRankTest {
    /** A pod's HTTP server recording the rank header of each request ("-" when absent). */
    private static final class Engine {
        final HttpServer server;
        final List<String> ranks = new CopyOnWriteArrayList<>();

        Engine() throws IOException {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            server.createContext("/v1/completions", ex -> {
                final List<String> values = ex.getRequestHeaders().get("X-Data-Parallel-Rank");
                ranks.add(values == null ? "-" : String.join(",", values));
                ex.getRequestBody().readAllBytes();
                final byte[] b = "{\"ok\":true}".getBytes(StandardCharsets.UTF_8);
                ex.sendResponseHeaders(200, b.length);
                try (OutputStream out = ex.getResponseBody()) {
                    out.write(b);
                }
            });
            server.start();
        }

        URI uri() {
            return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
        }
    }

    private Engine dp;
    private Engine solo;

    @BeforeEach
    void start() throws IOException {
        dp = new Engine();
        solo = new Engine();
    }

    @AfterEach
    void stop() {
        dp.server.stop(0);
        solo.server.stop(0);
    }

    /** Sends one request routed to the only registered slot {@code only}; returns the outcome's slot. */
    private int send(final PodRegistry registry, final int only, final Map<String, String> headers)
        throws Exception {
        for (int s = 0; s < 5; s++) {
            if (s != only && registry.isRegistered(s)) {
                registry.unregister(s);
            }
        }
        final Profile p = Profile.builder("single").score(new LeastLoadScorer("load", registry, LoadMetric.REQUESTS),
            1).pick(new MaxScorePicker("max")).build(registry);
        final Router router = RoutingProfiles.single(p, registry, null);
        final RoutingContext ctx = router.newContext();
        ctx.reset().tokens(new int[] {1, 2, 3}, 0, 3);
        router.plan(ctx);
        final Executor.Outcome outcome = new HttpExecutor(router, null, 1, Duration.ofSeconds(2),
            Duration.ofSeconds(10)).execute(ctx, new ProxyRequest("/v1/completions",
            "{\"prompt\":\"hi\"}".getBytes(StandardCharsets.UTF_8), headers), new ByteArrayOutputStream());
        assertEquals(200, outcome.status());
        return outcome.slot();
    }

    private PodRegistry registry() {
        // The engine's ranks as the index names them: its own id with an endpoint, its rank pods without one.
        return new PodRegistry().register(0, "eng", "m", PodRole.BOTH, dp.uri())
            .register(1, "eng#1", "m", PodRole.BOTH, null)
            .register(2, "eng#2", "m", PodRole.BOTH, dp.uri())
            .register(3, "solo", "m", PodRole.BOTH, solo.uri())
            .register(4, "solo#3", "m", PodRole.BOTH, URI.create(solo.uri() + "/rank3-own-server"));
    }

    @Test
    void shouldSendARankToItsEngineWithTheRankHeader() throws Exception {
        assertEquals(1, send(registry(), 1, Map.of()));
        assertEquals(2, send(registry(), 2, Map.of("x-data-parallel-rank", "7")));
        assertEquals(0, send(registry(), 0, Map.of()));
        assertEquals(List.of("1", "2", "0"), dp.ranks, "rank 1 and 2 by header, the base pod as rank 0; the "
            + "client's own rank header dropped");
    }

    @Test
    void shouldLeaveAPodWithoutRanksOrWithItsOwnServerAlone() throws Exception {
        final PodRegistry registry = registry().unregister(4);
        registry.register(4, "other", "m", PodRole.BOTH, null);
        assertEquals(3, send(registry, 3, Map.of("X-data-parallel-rank", "5")));
        assertEquals(List.of("-"), solo.ranks, "no ranks known for 'solo': no header, and not the client's");
        final PodRegistry own = new PodRegistry().register(0, "solo", "m", PodRole.BOTH, solo.uri())
            .register(1, "solo#3", "m", PodRole.BOTH, dp.uri());
        assertEquals(1, send(own, 1, Map.of()));
        assertEquals(List.of("-"), dp.ranks, "a rank pod with a server of its own is reached without the header");
    }
}
