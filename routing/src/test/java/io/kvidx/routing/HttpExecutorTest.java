package io.kvidx.routing;

import io.kvidx.routing.profiles.RoutingProfiles;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvidx.routing.exec.ExecutionException;
import io.kvidx.routing.exec.Executor;
import io.kvidx.routing.exec.HttpExecutor;
import io.kvidx.routing.exec.ProxyRequest;
import io.kvidx.client.json.MiniJson;
import io.kvidx.routing.plugins.CacheAffinityScorer;
import io.kvidx.routing.plugins.LeastLoadScorer;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.PrefixQueryPreparer;
import io.kvidx.routing.plugins.RoleFilter;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The HTTP executor against real loopback HTTP servers playing inference pods.
 */
@Timeout(60)
class HttpExecutorTest {
    private static final String SSE = "data: {\"choices\":[{\"text\":\"Hel\"}]}\n\n"
        + "data: {\"choices\":[{\"text\":\"lo\"}]}\n\n" + "data: [DONE]\n\n";
    private static final String PREFILL_ANSWER = "{\"id\":\"p\",\"choices\":[{\"text\":\"x\"}],"
        + "\"kv_transfer_params\":{\"do_remote_prefill\":true,\"do_remote_decode\":false,"
        + "\"remote_engine_id\":\"engine-7\",\"remote_block_ids\":[3,4,5],\"remote_host\":\"127.0.0.1\","
        + "\"remote_port\":5600}}";

    /** A pod: answers with SSE in three flushed chunks, with a prefill answer, or with 503. */
    private static final class Pod {
        final HttpServer server;
        final List<String> bodies = new CopyOnWriteArrayList<>();
        volatile String mode;

        Pod(final String mode) throws IOException {
            this.mode = mode;
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            server.createContext("/v1/completions", this::handle);
            server.start();
        }

        private void handle(final HttpExchange ex) throws IOException {
            bodies.add(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            switch (mode) {
                case "stream" -> {
                    ex.getResponseHeaders().add("Content-Type", "text/event-stream");
                    ex.sendResponseHeaders(200, 0);
                    try (OutputStream out = ex.getResponseBody()) {
                        for (final String chunk : SSE.split("(?<=\n\n)")) {
                            out.write(chunk.getBytes(StandardCharsets.UTF_8));
                            out.flush();
                        }
                    }
                }
                case "prefill" -> respond(ex, 200, PREFILL_ANSWER);
                default -> respond(ex, 503, "{\"error\":\"overloaded\"}");
            }
        }

        private static void respond(final HttpExchange ex, final int status, final String body) throws IOException {
            final byte[] b = body.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().add("Content-Type", "application/json");
            ex.sendResponseHeaders(status, b.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(b);
            }
        }

        URI uri() {
            return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
        }
    }

    private final List<Pod> pods = new ArrayList<>();
    private final PodRegistry registry = new PodRegistry();
    private final MapPodIndex index = new MapPodIndex();
    private URI deadUri;
    private final long[] chain = TestKeys.keys(11, 8);

    @BeforeEach
    void start() throws IOException {
        final Pod dead = new Pod("stream");
        deadUri = dead.uri();
        dead.server.stop(0);
        pods.add(new Pod("prefill"));
        pods.add(new Pod("stream"));
        pods.add(new Pod("stream"));
        pods.add(new Pod("fail"));
        registry.register(0, "prefill-dead", "m", PodRole.PREFILL, deadUri)
            .register(1, "prefill-ok", "m", PodRole.PREFILL, pods.get(0).uri())
            .register(2, "decode", "m", PodRole.DECODE, pods.get(1).uri())
            .register(3, "single", "m", PodRole.BOTH, pods.get(2).uri())
            .register(4, "broken", "m", PodRole.DECODE, pods.get(3).uri());
        for (int s = 0; s < 5; s++) {
            index.pod(s, registry.podId(s), "m");
        }
    }

    @AfterEach
    void stop() {
        pods.forEach(p -> p.server.stop(0));
    }

    private Router prefillDecodeRouter() {
        final Profile prefill = Profile.builder("prefill").input(Slots.BLOCK_KEYS)
            .prepare(new PrefixQueryPreparer("query", PrefixQueryPreparer.Mode.INDEX, null))
            .filter(new RoleFilter("role", registry, PodRole.PREFILL))
            .score(new CacheAffinityScorer("cache"), 1)
            .pick(new MaxScorePicker("max")).build(registry);
        final Profile decodeWithDepths = Profile.builder("decode").input(Slots.PREFILL_PICK, Slots.BLOCK_KEYS)
            .prepare(new PrefixQueryPreparer("query", PrefixQueryPreparer.Mode.INDEX, null))
            .filter(new RoleFilter("role", registry, PodRole.DECODE))
            .score(new CacheAffinityScorer("cache"), 1)
            .pick(new MaxScorePicker("max")).build(registry);
        return new Router(new PrefillDecodeWorkflow(new Selector(prefill, registry, index),
            new Selector(decodeWithDepths, registry, index)), registry, index);
    }

    private static ProxyRequest completion(final boolean stream) {
        return new ProxyRequest("/v1/completions", ("{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":32,"
            + "\"stream\":" + stream + "}").getBytes(StandardCharsets.UTF_8), Map.of("Authorization", "Bearer t"));
    }

    @Test
    void shouldProxyASingleRequestAndStreamTheAnswer() throws Exception {
        final Profile p = Profile.builder("single").filter(new RoleFilter("role", registry, PodRole.BOTH))
            .score(new LeastLoadScorer("load", registry, LoadMetric.REQUESTS), 1)
            .pick(new MaxScorePicker("max")).build(registry);
        registry.unregister(0).unregister(1).unregister(2).unregister(4);
        final Router router = RoutingProfiles.single(p, registry, null);
        final RoutingContext ctx = router.newContext();
        ctx.reset().tokens(new int[] {1, 2, 3}, 0, 3);
        router.plan(ctx);
        final ByteArrayOutputStream sink = new ByteArrayOutputStream();
        final Executor.Outcome outcome = new HttpExecutor(router, null, 2, Duration.ofSeconds(2),
            Duration.ofSeconds(10)).execute(ctx, completion(true), sink);
        assertEquals(200, outcome.status());
        assertEquals(3, outcome.slot());
        assertEquals(SSE, sink.toString(StandardCharsets.UTF_8));
        assertEquals(SSE.length(), outcome.bytes());
        assertEquals(0, registry.running(3), "running counter restored");
        assertTrue(pods.get(2).bodies.get(0).contains("\"stream\":true"));
    }

    @Test
    void shouldPrefillThenDecodeWithTheTransferParameters() throws Exception {
        index.store(1, chain, 8).store(2, chain, 8);
        registry.unregister(0);
        final Router router = prefillDecodeRouter();
        final RoutingContext ctx = router.newContext();
        ctx.reset().keys(chain, 0, chain.length);
        assertEquals(RoutingPlan.Kind.PREFILL_DECODE, router.plan(ctx).kind());
        final ByteArrayOutputStream sink = new ByteArrayOutputStream();
        final Executor.Outcome outcome = new HttpExecutor(router, null, 2, Duration.ofSeconds(2),
            Duration.ofSeconds(10)).execute(ctx, completion(true), sink);
        assertEquals(1, outcome.prefillSlot());
        assertEquals(2, outcome.slot());
        assertEquals(SSE, sink.toString(StandardCharsets.UTF_8));
        final Map<?, ?> prefillBody = (Map<?, ?>) MiniJson.parse(pods.get(0).bodies.get(0));
        assertEquals(1L, prefillBody.get("max_tokens"));
        assertEquals(false, prefillBody.get("stream"));
        assertEquals(true, ((Map<?, ?>) prefillBody.get("kv_transfer_params")).get("do_remote_decode"));
        final Map<?, ?> decodeBody = (Map<?, ?>) MiniJson.parse(pods.get(1).bodies.get(0));
        assertEquals(32L, decodeBody.get("max_tokens"));
        assertEquals(true, decodeBody.get("stream"));
        final Map<?, ?> kv = (Map<?, ?>) decodeBody.get("kv_transfer_params");
        assertEquals("engine-7", kv.get("remote_engine_id"));
        assertEquals(List.of(3L, 4L, 5L), kv.get("remote_block_ids"));
    }

    @Test
    void shouldRetryAFailingPrefillPodOnAnother() throws Exception {
        index.store(0, chain, 8).store(1, chain, 2);
        registry.unregister(4);
        final Router router = prefillDecodeRouter();
        final RoutingContext ctx = router.newContext();
        ctx.reset().keys(chain, 0, chain.length);
        assertEquals(0, router.plan(ctx).prefillSlot(), "the dead pod holds the deepest prefix");
        final ByteArrayOutputStream sink = new ByteArrayOutputStream();
        final Executor.Outcome outcome = new HttpExecutor(router, null, 2, Duration.ofSeconds(2),
            Duration.ofSeconds(10)).execute(ctx, completion(true), sink);
        assertEquals(1, outcome.prefillSlot(), "retried on the other prefill pod");
        assertEquals(3, outcome.attempts());
        assertEquals(SSE, sink.toString(StandardCharsets.UTF_8));
        assertEquals(0, registry.running(0));
    }

    @Test
    void shouldFailClearlyWhenNoAttemptIsLeft() {
        index.store(0, chain, 8);
        final Router router = prefillDecodeRouter();
        final RoutingContext ctx = router.newContext();
        ctx.reset().keys(chain, 0, chain.length);
        router.plan(ctx);
        final ExecutionException ex = assertThrows(ExecutionException.class, () -> new HttpExecutor(router, null, 1,
            Duration.ofSeconds(2), Duration.ofSeconds(10)).execute(ctx, completion(false),
            new ByteArrayOutputStream()));
        assertEquals(1, ex.attempts().size());
        assertEquals("prefill", ex.attempts().get(0).stage());
        assertEquals(0, ex.attempts().get(0).slot());
        assertTrue(ex.getMessage().contains("prefill failed"), ex.getMessage());
    }

    @Test
    void shouldMoveADecodeOffAPodAnswering503() throws Exception {
        index.store(1, chain, 8).store(4, chain, 8);
        registry.unregister(0);
        final Router router = prefillDecodeRouter();
        final RoutingContext ctx = router.newContext();
        ctx.reset().keys(chain, 0, chain.length);
        assertEquals(4, router.plan(ctx).decodeSlot(), "the broken decode pod holds the prefix");
        final ByteArrayOutputStream sink = new ByteArrayOutputStream();
        final Executor.Outcome outcome = new HttpExecutor(router, null, 2, Duration.ofSeconds(2),
            Duration.ofSeconds(10)).execute(ctx, completion(true), sink);
        assertTrue(outcome.slot() == 2 || outcome.slot() == 3, "moved to another decode-capable pod");
        assertEquals(3, outcome.attempts());
        assertEquals(1, outcome.prefillSlot(), "the prefill pod is kept");
        assertEquals(1, pods.get(0).bodies.size(), "prefill ran once");
        assertEquals(SSE, sink.toString(StandardCharsets.UTF_8));
    }

    @Test
    void shouldNotRetryAStreamThatBrokeOff() throws Exception {
        try (java.net.ServerSocket raw = new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            final Thread pod = Thread.ofVirtual().start(() -> {
                try (java.net.Socket s = raw.accept()) {
                    final java.io.InputStream in = s.getInputStream();
                    final byte[] buf = new byte[8192];
                    final StringBuilder head = new StringBuilder();
                    while (!head.toString().contains("\r\n\r\n")) {
                        final int n = in.read(buf);
                        if (n < 0) {
                            return;
                        }
                        head.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
                    }
                    final OutputStream out = s.getOutputStream();
                    out.write(("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                        + "\r\n10\r\ndata: partial...\r\n").getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    Thread.sleep(100);
                    out.write("20\r\ndata: cut".getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    s.shutdownOutput();
                    Thread.sleep(100);
                } catch (final IOException | InterruptedException ignored) {
                    // the test checks the client side
                }
            });
            registry.register(5, "breaks", "m", PodRole.BOTH, URI.create("http://127.0.0.1:" + raw.getLocalPort()));
            registry.unregister(0).unregister(1).unregister(2).unregister(4);
            final Profile p = Profile.builder("single").score(new LeastLoadScorer("load", registry,
                LoadMetric.REQUESTS), 1).pick(new MaxScorePicker("max")).build(registry);
            registry.load(3, 0, 9, 0);
            final Router router = RoutingProfiles.single(p, registry, null);
            final RoutingContext ctx = router.newContext();
            ctx.reset();
            assertEquals(5, router.plan(ctx).slot());
            final ByteArrayOutputStream sink = new ByteArrayOutputStream();
            final ExecutionException ex = assertThrows(ExecutionException.class, () -> new HttpExecutor(router, null,
                3, Duration.ofSeconds(2), Duration.ofSeconds(10)).execute(ctx, completion(true), sink));
            assertTrue(ex.getMessage().contains("not retried"), ex.getMessage());
            assertTrue(sink.toString(StandardCharsets.UTF_8).startsWith("data: partial..."),
                "what arrived was passed on");
            assertTrue(pods.get(2).bodies.isEmpty(), "no second pod was tried");
            pod.join(5_000);
        }
    }
}
