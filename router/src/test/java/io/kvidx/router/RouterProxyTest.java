package io.kvidx.router;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The router as a proxy, against real mock engine processes and raw sockets: what reaches the client is what the
 * engine sent (bytes, framing, headers), what reaches the engine is what the client sent, streams flow as they are
 * made and stop when the client stops reading or goes away.
 *
 * <p>Comparing answers: the mock's {@code id} is {@code cmpl-<x-request-id>} when the request carries one, so both
 * requests of a comparison send the same {@code x-request-id} and the ids match without touching the mock; only
 * {@code created} (the engine's clock, in seconds) can differ between two requests, and it is replaced by 0 on both
 * sides before the bytes are compared. Prompts are shorter than one block, so the engine's prefix cache answers
 * both requests alike (no cached tokens, same usage).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RouterProxyTest {
    private static final Pattern CREATED = Pattern.compile("\"created\": \\d+");

    private static Path work;
    /** An engine that answers at once. */
    private static MockEngine fast;
    /** An engine that takes 25 ms per generated token. */
    private static MockEngine slow;

    @BeforeAll
    static void startEngines() throws Exception {
        MockEngine.require();
        work = Routers.workDir("router-proxy");
        fast = MockEngine.start(work, "fast", "m");
        slow = MockEngine.start(work, "slow", "m", "--decode-ms-per-token", "25");
    }

    @AfterAll
    static void stopEngines() {
        if (fast != null) {
            fast.close();
        }
        if (slow != null) {
            slow.close();
        }
        Routers.deleteTree(work);
    }

    private static RouterServer routerTo(final MockEngine engine) {
        final RouterConfig c = Routers.config(work);
        c.pod(engine.podId, engine.url(), engine.model, null);
        return RouterServer.start(c);
    }

    private static String normalise(final String s) {
        return CREATED.matcher(s).replaceAll("\"created\": 0");
    }

    /** Headers the router may add, and hop-by-hop or per-connection ones that may differ. */
    private static final Set<String> ROUTER_ADDS = Set.of("x-kvidx-pod", "x-kvidx-predicted-tokens",
        "x-kvidx-fallback");
    private static final Set<String> PER_CONNECTION = Set.of("date", "connection", "keep-alive", "transfer-encoding",
        "content-length");

    /** Every end-to-end header of the engine's answer reaches the client unchanged; the router adds only its own. */
    private static void assertSameHeaders(final RawHttp.Response direct, final RawHttp.Response routed) {
        final Set<String> engineNames = new HashSet<>();
        for (final String[] h : direct.headers()) {
            final String name = h[0].toLowerCase(Locale.ROOT);
            engineNames.add(name);
            if (!PER_CONNECTION.contains(name)) {
                assertEquals(h[1], routed.header(name), "header " + name);
            }
        }
        for (final String[] h : routed.headers()) {
            final String name = h[0].toLowerCase(Locale.ROOT);
            assertTrue(engineNames.contains(name) || ROUTER_ADDS.contains(name), "the router added " + name);
        }
    }

    /**
     * A streamed completion through the router is the engine's stream: the same SSE bytes (after the {@code created}
     * normalisation), chunked, with the engine's headers. Fails if ProxyCall.onHead stops copying the pod's headers
     * (all but {@code ProxyHeaders.isHopByHop} ones) or stops setting chunked encoding for an answer without a
     * length, or if ProxyCall.onContent drops or reorders content.
     */
    @Test
    void shouldPassAStreamThroughByteForByte() throws Exception {
        try (RouterServer router = routerTo(fast)) {
            final String body = "{\"model\": \"m\", \"prompt\": " + Routers.ids(10, 7) + ", \"max_tokens\": 40,"
                + " \"stream\": true, \"stream_options\": {\"include_usage\": true}}";
            final byte[] request = RawHttp.request("POST", "/v1/completions", body, "x-request-id: pass-1");
            final RawHttp.Response direct = RawHttp.exchange(fast.port(), request);
            final RawHttp.Response routed = RawHttp.exchange(router.port(), request);
            assertEquals(200, direct.status(), direct::toString);
            assertEquals(200, routed.status(), routed::toString);
            assertTrue(direct.chunked() && routed.chunked(), "both chunked");
            assertNull(routed.header("content-length"));
            assertEquals("text/event-stream; charset=utf-8", routed.header("content-type"));
            assertEquals(normalise(direct.text()), normalise(routed.text()));
            final String[] events = routed.text().split("\n\n");
            assertEquals(42, events.length, "40 tokens, the usage chunk, [DONE]");
            assertTrue(events[0].startsWith("data: {\"id\": \"cmpl-pass-1\""), events[0]);
            assertEquals("data: [DONE]", events[41]);
            assertSameHeaders(direct, routed);
            assertEquals("pass-1", routed.header("x-request-id"), "the engine saw the client's x-request-id");
            assertEquals("fast", routed.header("x-kvidx-pod"));
        }
    }

    /**
     * Events reach the client as the engine makes them, not once the answer is complete: the first event arrives
     * long before the last. Fails if the router aggregated the pod's answer (an HttpObjectAggregator on the pod
     * connection) or stopped flushing each chunk ({@code client.writeAndFlush} in ProxyCall.onContent).
     */
    @Test
    void shouldSendEachEventAsTheEngineMakesIt() throws Exception {
        try (RouterServer router = routerTo(slow); RawHttp c = new RawHttp(router.port())) {
            c.send(RawHttp.request("POST", "/v1/completions", "{\"prompt\": " + Routers.ids(5, 1)
                + ", \"max_tokens\": 24, \"stream\": true}"));
            final RawHttp.Response head = c.readHead();
            assertEquals(200, head.status());
            assertTrue(head.chunked());
            final List<Long> arrivals = new ArrayList<>();
            final StringBuilder text = new StringBuilder();
            int size;
            while ((size = c.nextChunkSize()) > 0) {
                text.append(new String(c.in.readNBytes(size), StandardCharsets.UTF_8));
                c.chunkEnd();
                arrivals.add(System.nanoTime());
            }
            assertTrue(text.toString().endsWith("data: [DONE]\n\n"), text::toString);
            final long spreadMs = TimeUnit.NANOSECONDS.toMillis(arrivals.getLast() - arrivals.getFirst());
            // 24 tokens 25 ms apart: about 575 ms from the first to the last when streamed, 0 when buffered.
            assertTrue(spreadMs > 300, "events arrived within " + spreadMs + " ms of each other: buffered");
        }
    }

    /**
     * Non-streamed completion and chat answers are the engine's JSON, byte for byte after the normalisation, with a
     * Content-Length. Fails if ProxyCall stops passing the pod's Content-Length (then the answer goes chunked) or
     * alters the body.
     */
    @Test
    void shouldPassJsonAnswersThrough() throws Exception {
        try (RouterServer router = routerTo(fast)) {
            final String[][] calls = {
                {"/v1/completions", "{\"prompt\": " + Routers.ids(6, 100) + ", \"max_tokens\": 5}"},
                {"/v1/chat/completions", "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": "
                    + "\"hi there\"}], \"max_tokens\": 3}"},
                {"/v1/chat/completions", "{\"messages\": [], \"prompt_token_ids\": " + Routers.ids(4, 9) + "}"}};
            for (final String[] call : calls) {
                final byte[] request = RawHttp.request("POST", call[0], call[1], "x-request-id: json-1");
                final RawHttp.Response direct = RawHttp.exchange(fast.port(), request);
                final RawHttp.Response routed = RawHttp.exchange(router.port(), request);
                assertEquals(200, direct.status(), direct::toString);
                assertEquals(200, routed.status(), routed::toString);
                assertFalse(routed.chunked(), "a JSON answer keeps its length");
                assertEquals(Integer.toString(routed.body().length), routed.header("content-length"));
                assertEquals(normalise(direct.text()), normalise(routed.text()), call[0]);
                assertSameHeaders(direct, routed);
            }
        }
    }

    /**
     * What the client sends reaches the pod (a pod written in the test records it): the body byte for byte, the
     * end-to-end headers (authorization, x-request-id, custom ones), but not the hop-by-hop ones (Connection and
     * the headers it names, Keep-Alive, TE, Upgrade, Proxy-*), and the Host is the pod's. The pod's answer reaches
     * the client without its hop-by-hop headers. Fails if routing's ProxyHeaders.isHopByHop (through
     * ProxyPolicy.forwardsRequestHeader and ProxyCall.onHead) stops skipping hop-by-hop names or the names the
     * Connection header lists, or ProxyCall stops copying the others.
     */
    @Test
    void shouldForwardEndToEndHeadersOnly() throws Exception {
        try (FakePod pod = new FakePod(r -> FakePod.response(200, "application/json", "{\"ok\": true}",
            "Connection: x-pod-secret", "X-Pod-Secret: 1", "Keep-Alive: timeout=5", "Proxy-Authenticate: Basic",
            "Upgrade: foo", "X-Pod-Header: kept", "Set-Cookie: a=b"))) {
            final RouterConfig c = Routers.config(work);
            c.pod("fake", pod.url(), null, null);
            c.healthIntervalMs = 0; // the pod records only the proxied request
            try (RouterServer router = RouterServer.start(c)) {
                final String body = "{\"prompt\":[1, 2,3],  \"max_tokens\": 2, \"x\": "
                    + "\"\\u00e9 \u00e9\u20ac\ud83d\ude00\"}";
                final RawHttp.Response r = RawHttp.exchange(router.port(), RawHttp.request("POST",
                    "/v1/completions?q=1", body, "x-request-id: hdr-1", "Authorization: Bearer secret-token",
                    "X-Custom: one", "X-Custom: two", "Connection: keep-alive, x-hop-secret", "x-hop-secret: drop-me",
                    "Keep-Alive: timeout=5", "Proxy-Authorization: Basic abc", "TE: trailers", "Upgrade: foo",
                    "Proxy-Connection: keep-alive"));
                assertEquals(200, r.status(), r::toString);
                final FakePod.Request seen = pod.requests.poll(5, TimeUnit.SECONDS);
                assertNotNull(seen);
                assertEquals("POST", seen.method());
                assertEquals(body, seen.text(), "the body is forwarded unchanged");
                assertEquals("hdr-1", seen.header("x-request-id"));
                assertEquals("Bearer secret-token", seen.header("authorization"));
                final List<String> custom = new ArrayList<>();
                for (final String[] h : seen.headers()) {
                    if (h[0].equalsIgnoreCase("x-custom")) {
                        custom.add(h[1]);
                    }
                }
                assertEquals(List.of("one", "two"), custom, "repeated headers keep every value, in order");
                assertEquals("127.0.0.1:" + pod.port(), seen.header("host"));
                assertEquals(Integer.toString(body.getBytes(StandardCharsets.UTF_8).length),
                    seen.header("content-length"));
                for (final String hop : List.of("x-hop-secret", "keep-alive", "proxy-authorization", "te", "upgrade",
                    "proxy-connection")) {
                    assertNull(seen.header(hop), "hop-by-hop request header reached the pod: " + hop);
                }
                assertEquals("kept", r.header("x-pod-header"));
                assertEquals("a=b", r.header("set-cookie"));
                for (final String hop : List.of("x-pod-secret", "keep-alive", "proxy-authenticate", "upgrade")) {
                    assertNull(r.header(hop), "hop-by-hop answer header reached the client: " + hop);
                }
                assertEquals("{\"ok\": true}", r.text());

                // A chunked body, and one sent after the router's 100 Continue: each reaches the pod whole, with a
                // Content-Length, without Transfer-Encoding or Expect.
                try (RawHttp c2 = new RawHttp(router.port())) {
                    final int bytes = body.getBytes(StandardCharsets.UTF_8).length;
                    c2.send(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "5\r\n" + body.substring(0, 5) + "\r\n" + Integer.toHexString(bytes - 5) + "\r\n"
                        + body.substring(5) + "\r\n0\r\n\r\n").getBytes(StandardCharsets.UTF_8));
                    assertEquals(200, c2.read().status());
                    final String ascii = "{\"prompt\": [4, 5, 6]}";
                    c2.send(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: "
                        + ascii.length() + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    assertEquals(100, c2.readHead().status(), "the router says 100 Continue");
                    c2.send(ascii.getBytes(StandardCharsets.US_ASCII));
                    assertEquals(200, c2.read().status());
                }
                final FakePod.Request chunked = pod.requests.poll(5, TimeUnit.SECONDS);
                assertNotNull(chunked);
                assertEquals(body, chunked.text());
                assertNull(chunked.header("transfer-encoding"));
                final FakePod.Request continued = pod.requests.poll(5, TimeUnit.SECONDS);
                assertNotNull(continued);
                assertEquals("{\"prompt\": [4, 5, 6]}", continued.text());
                assertNull(continued.header("expect"), "the router answered the Expect itself");
            }
        }
    }

    /**
     * A client that stops reading a long stream: the router stops reading the pod (the engine stays mid-stream,
     * blocked on its socket, instead of finishing into the router's memory), and once the client reads, the whole
     * answer arrives intact. The stream (about 23 MB) is far larger than the socket buffers between engine and
     * client, and the engine writes it in well under a second when nothing holds it back. Fails if ProxyCall.onContent
     * stops turning the pod connection's auto-read off while the client is not writable
     * ({@code ch.config().setAutoRead(false)}): the router then reads the whole answer into memory and the engine
     * finishes while the client is still asleep.
     */
    @Test
    void shouldStopReadingThePodWhileTheClientDoesNotRead() throws Exception {
        final int tokens = 100_000;
        try (RouterServer router = routerTo(fast); RawHttp c = new RawHttp(router.port(), 16 << 10)) {
            final double finishedBefore = fast.metric("vllm:request_success_total");
            c.send(RawHttp.request("POST", "/v1/completions", "{\"prompt\": " + Routers.ids(8, 1)
                + ", \"max_tokens\": " + tokens + ", \"stream\": true}", "x-request-id: slow-client"));
            final RawHttp.Response head = c.readHead();
            assertEquals(200, head.status());
            Thread.sleep(3_000); // the client reads nothing
            assertEquals(1.0, fast.metric("vllm:num_requests_running"), "the engine must still be mid-stream");
            assertEquals(finishedBefore, fast.metric("vllm:request_success_total"));

            final String text = new String(c.readBody(head), StandardCharsets.UTF_8);
            final String[] events = text.split("\n\n");
            assertEquals(tokens + 1, events.length);
            for (int i = 0; i < tokens; i++) {
                final String e = events[i];
                final String expected = "\"text\": \" tok" + i + "\", \"logprobs\": null, \"finish_reason\": "
                    + (i == tokens - 1 ? "\"length\"" : "null");
                if (!e.startsWith("data: {\"id\": \"cmpl-slow-client\"") || !e.contains(expected)) {
                    throw new AssertionError("event " + i + " is not token " + i + ": " + e);
                }
            }
            assertEquals("data: [DONE]", events[tokens]);
            Routers.await("the engine finished", 5_000, () -> fast.metric("vllm:num_requests_running") == 0);
            assertEquals(finishedBefore + 1, fast.metric("vllm:request_success_total"));
        }
    }

    /**
     * A client that goes away mid-stream cancels the engine's request: the router closes the pod connection, the
     * engine's next write fails and its request ends, long before the 10 s the stream would have taken. Fails if
     * ProxyCall.onClientClosed stops closing the pod connection ({@code ch.close()}).
     */
    @Test
    void shouldCancelThePodRequestWhenTheClientGoesAway() throws Exception {
        try (RouterServer router = routerTo(slow)) {
            final double finished = slow.metric("vllm:request_success_total");
            final long before;
            try (RawHttp c = new RawHttp(router.port())) {
                c.send(RawHttp.request("POST", "/v1/completions", "{\"prompt\": " + Routers.ids(8, 1)
                    + ", \"max_tokens\": 400, \"stream\": true}"));
                final RawHttp.Response head = c.readHead();
                assertEquals(200, head.status());
                for (int i = 0; i < 3; i++) {
                    c.in.readNBytes(c.nextChunkSize());
                    c.chunkEnd();
                }
                assertEquals(1.0, slow.metric("vllm:num_requests_running"));
                before = System.nanoTime();
            }
            final long ms = Routers.await("the engine's request to end", 3_000,
                () -> slow.metric("vllm:num_requests_running") == 0);
            assertTrue(ms < 3_000, "took " + ms + " ms");
            assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before) < 5_000);
            Routers.await("the router counted the disconnect", 2_000, () -> Metrics.value(Routers.metrics(router),
                "kvidx_router_client_disconnects_total") == 1);
            assertEquals(0, Metrics.value(Routers.metrics(router), "kvidx_router_in_flight"));
            assertEquals(finished, slow.metric("vllm:request_success_total"), "the engine never finished it");
        }
    }

    /**
     * A client that goes away before the first byte (while the engine is still in prefill) cancels the pod request at
     * once, as one that leaves mid-stream does: the serving layer's RequestSequencer keeps reading the client's
     * connection while a call is in flight, so FrontHandler sees the close. Fails when it stops reading during a call
     * (auto-read off): the close is then seen only when the pod's first byte is written, after the engine's whole
     * prefill ran for nobody.
     */
    @Test
    void shouldCancelThePodRequestWhenTheClientGoesAwayDuringPrefill() throws Exception {
        try (MockEngine prefilling = MockEngine.start(work, "prefilling", "m", "--prefill-us-per-token", "20000");
            RouterServer router = routerTo(prefilling)) {
            try (RawHttp c = new RawHttp(router.port())) {
                // 100 uncached tokens at 20 ms each: 2 s before the first byte.
                c.send(RawHttp.request("POST", "/v1/completions", "{\"prompt\": " + Routers.ids(100, 1)
                    + ", \"max_tokens\": 5, \"stream\": true}"));
                Routers.await("the engine prefilling", 2_000, () -> prefilling.metric("vllm:num_requests_running")
                    == 1);
            }
            Routers.await("the router cancelling the call", 500, () -> Metrics.value(Routers.metrics(router),
                "kvidx_router_in_flight") == 0);
        }
    }

    /**
     * A pipelining client (three requests in one write: a stream, an unknown path, a JSON completion) gets three
     * whole answers in order on its connection. The second and third requests are decoded from the bytes already
     * read while the first call is in flight; they must wait for it. Fails without the serving layer's
     * RequestSequencer in the pipeline (FrontHandler then starts the later calls while the first streams, and their
     * bytes mix on the connection), or if the sequencer lets the next request start before the current answer's last
     * bytes are written (the 404 then goes out inside the stream).
     */
    @Test
    void shouldAnswerPipelinedRequestsInOrder() throws Exception {
        try (RouterServer router = routerTo(slow); RawHttp c = new RawHttp(router.port())) {
            final java.io.ByteArrayOutputStream three = new java.io.ByteArrayOutputStream();
            three.write(RawHttp.request("POST", "/v1/completions", "{\"prompt\": [1, 2], \"max_tokens\": 20, "
                + "\"stream\": true}", "x-request-id: first"));
            three.write(RawHttp.request("GET", "/v1/nothing", null));
            three.write(RawHttp.request("POST", "/v1/completions", "{\"prompt\": [1, 2], \"max_tokens\": 2}",
                "x-request-id: third"));
            c.send(three.toByteArray());
            final RawHttp.Response first = c.read();
            assertEquals(200, first.status());
            assertEquals("first", first.header("x-request-id"));
            assertEquals(21, first.text().split("\n\n").length, first::text);
            assertTrue(first.text().endsWith("data: [DONE]\n\n"));
            assertEquals(404, c.read().status());
            final RawHttp.Response third = c.read();
            assertEquals(200, third.status());
            assertEquals("third", third.header("x-request-id"));
            assertTrue(third.text().startsWith("{\"id\": \"cmpl-third\""), third::text);
        }
    }

    /** A malformed request, what the router must answer, and whether the connection stays usable. */
    private record Bad(String what, byte[] request, int status, boolean keepsConnection) {
        static Bad post(final String what, final String path, final String body, final int status) {
            return new Bad(what, RawHttp.request("POST", path, body), status, true);
        }
    }

    private static List<Bad> badRequests() {
        final String deep = "[".repeat(10_000) + "]".repeat(10_000);
        final String big = "{\"prompt\": " + Routers.ids(20_000, 1) + "}"; // about 110 KB
        final String c = "/v1/completions";
        return List.of(
            Bad.post("not JSON", c, "hello", 400),
            Bad.post("empty body", c, "", 400),
            Bad.post("truncated", c, "{\"prompt\": [1, 2, 3", 400),
            Bad.post("truncated object", c, "{\"prompt\": [1, 2, 3]", 400),
            Bad.post("not an object", c, "[1, 2, 3]", 400),
            Bad.post("trailing data", c, "{\"prompt\": [1]} {}", 400),
            Bad.post("stream not a boolean", c, "{\"prompt\": [1, 2], \"stream\": \"yes\"}", 400),
            Bad.post("model not a string", c, "{\"model\": 7, \"prompt\": [1]}", 400),
            Bad.post("prompt an object", c, "{\"prompt\": {\"ids\": [1]}}", 400),
            Bad.post("fractional token id", c, "{\"prompt\": [1, 2.5]}", 400),
            Bad.post("token id a string", c, "{\"prompt\": [1, \"2\"]}", 400),
            Bad.post("token id 2^31", c, "{\"prompt\": [1, 2147483648]}", 400),
            Bad.post("negative token id", c, "{\"prompt\": [-1, 2]}", 400),
            Bad.post("token id of 40 digits", c, "{\"prompt\": [1, " + "9".repeat(40) + "]}", 400),
            Bad.post("empty prompt", c, "{\"prompt\": []}", 400),
            Bad.post("no prompt", c, "{\"model\": \"m\"}", 400),
            Bad.post("chat without messages", "/v1/chat/completions", "{\"prompt\": [1]}", 400),
            Bad.post("messages not an array", "/v1/chat/completions", "{\"messages\": \"hi\"}", 400),
            Bad.post("10,000 levels in another field", c, "{\"x\": " + deep + ", \"prompt\": [1]}", 400),
            Bad.post("10,000 levels in the prompt", c, "{\"prompt\": " + deep + "}", 400),
            Bad.post("10,000 levels of objects", c, "{\"a\":".repeat(10_000) + "1" + "}".repeat(10_000), 400),
            new Bad("over max-body-bytes", RawHttp.request("POST", c, big), 413, false),
            new Bad("over max-body-bytes, chunked", chunked(c, big), 413, false),
            new Bad("unknown path", RawHttp.request("GET", "/v1/nothing", null), 404, true),
            Bad.post("unknown POST path", "/v1/embeddings", "{\"input\": \"x\"}", 404),
            new Bad("GET a completion", RawHttp.request("GET", c, null), 405, true),
            new Bad("GET a chat", RawHttp.request("GET", "/v1/chat/completions", null), 405, true),
            Bad.post("POST /health", "/health", "{}", 405),
            new Bad("DELETE /v1/models", RawHttp.request("DELETE", "/v1/models", null), 405, true),
            new Bad("PUT /metrics", RawHttp.request("PUT", "/metrics", "{}"), 405, true),
            new Bad("bad Content-Length", ("POST " + c + " HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1), 400, false));
    }

    private static byte[] chunked(final String path, final String body) {
        final StringBuilder s = new StringBuilder("POST " + path + " HTTP/1.1\r\nHost: x\r\n"
            + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (int i = 0; i < body.length(); i += 1000) {
            final String part = body.substring(i, Math.min(body.length(), i + 1000));
            s.append(Integer.toHexString(part.length())).append("\r\n").append(part).append("\r\n");
        }
        return s.append("0\r\n\r\n").toString().getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * Malformed bodies, oversized bodies, unknown paths and wrong methods each get the right 4xx with an OpenAI error
     * ({@code {"error": {"message", "type", "code"}}}) from the router itself (the engine is never called), and the
     * router then serves a valid request, on the same connection when the error keeps it and on a new one. Fails if
     * a bound of OpenAiRequest goes (MAX_DEPTH, the token id range), if FrontHandler stops answering serve's BodyLimit
     * refusal with 413, or FrontHandler's 404/405 branches change.
     */
    @Test
    void shouldAnswerBadRequestsWithOpenAiErrorsAndKeepServing() throws Exception {
        final RouterConfig config = Routers.config(work);
        config.pod(fast.podId, fast.url(), fast.model, null);
        config.maxBodyBytes = 64 << 10; // above the 10,000 levels, below the big body
        final String valid = "{\"prompt\": " + Routers.ids(4, 3) + ", \"max_tokens\": 2}";
        try (RouterServer router = RouterServer.start(config)) {
            final double engineCalls = fast.metric("vllm:request_success_total");
            for (final Bad bad : badRequests()) {
                try (RawHttp c = new RawHttp(router.port())) {
                    c.send(bad.request());
                    final RawHttp.Response r = c.read();
                    assertEquals(bad.status(), r.status(), bad.what() + ": " + r);
                    assertEquals("application/json", r.header("content-type"), bad.what());
                    @SuppressWarnings("unchecked")
                    final Map<String, Object> error = (Map<String, Object>) r.json().get("error");
                    assertNotNull(error, bad.what() + ": " + r);
                    assertTrue(error.get("message") instanceof String m && !m.isEmpty(), bad.what());
                    assertTrue(error.get("type") instanceof String t && !t.isEmpty(), bad.what());
                    assertEquals(bad.status(), ((Number) error.get("code")).intValue(), bad.what());
                    if (bad.keepsConnection()) {
                        c.send(RawHttp.request("POST", "/v1/completions", valid));
                        assertEquals(200, c.read().status(), bad.what() + ": the same connection serves again");
                    } else {
                        assertTrue(c.closedByPeer(), bad.what() + ": the router closes the connection");
                    }
                }
                final HttpResponse<String> ok = Routers.post(router.port(), "/v1/completions", valid);
                assertEquals(200, ok.statusCode(), bad.what() + ": then a new connection: " + ok.body());
            }
            final long valids = badRequests().size() + badRequests().stream().filter(Bad::keepsConnection).count();
            assertEquals(engineCalls + valids, fast.metric("vllm:request_success_total"),
                "only the valid requests reached the engine");
        }
    }

    /**
     * The engine's own 4xx answers (a model it does not serve, a bad max_tokens) reach the client as the engine sent
     * them, without a retry: the client's mistake is not the pod's failure. Fails if ProxyCall.onHead treats a 4xx
     * like a 5xx (retried, then a 502).
     */
    @Test
    void shouldPassTheEnginesClientErrorsThrough() throws Exception {
        try (RouterServer router = routerTo(fast)) {
            final HttpResponse<String> wrongModel = Routers.post(router.port(), "/v1/completions",
                "{\"model\": \"not-served\", \"prompt\": [1, 2]}");
            assertEquals(404, wrongModel.statusCode());
            assertTrue(wrongModel.body().contains("\"type\": \"NotFoundError\""), wrongModel.body());
            final HttpResponse<String> badMax = Routers.post(router.port(), "/v1/completions",
                "{\"prompt\": [1, 2], \"max_tokens\": 0}");
            assertEquals(400, badMax.statusCode());
            assertTrue(badMax.body().contains("\"type\": \"BadRequestError\""), badMax.body());
            final String page = Routers.metrics(router);
            assertEquals(0, Metrics.value(page, "kvidx_router_retries_total"));
            assertEquals(1, Metrics.value(page, "kvidx_router_requests_total", "status", "404"));
        }
    }
}
