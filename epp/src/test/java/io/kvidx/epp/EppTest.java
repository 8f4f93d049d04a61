package io.kvidx.epp;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.router.RouterConfig;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.yaml.YamlRouting;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code kvidx epp} over real sockets, driven as Envoy drives an endpoint picker: picks in the three body modes, with
 * and without a subset, equal to the router's decision layer's for the same requests and index (written by the
 * daemon's {@link IndexWriter}); bad inputs answered with the right immediate response; gRPC health; TLS; metrics.
 */
class EppTest {
    private static final int BLOCK = 16;
    private static final int PODS = 4;
    private static final String MODEL = "m";

    private static Path dir;
    private static IndexWriter writer;
    private static final int[] SLOTS = new int[PODS];
    private static final int[][] PROMPTS = new int[6][];
    /** The endpoints holding each prompt's blocks. */
    private static final List<Set<String>> HOLDERS = List.of(Set.of("10.0.0.1:8000"), Set.of("10.0.0.2:8000"),
        Set.of("10.0.0.3:8000"), Set.of("10.0.0.4:8000"), Set.of("10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.4:8000"));
    private static EppServer epp;
    private static ManagedChannel channel;
    private static IndexReaderPodIndex refIndex;
    private static PodRegistry refRegistry;
    private static Router reference;
    private static java.util.concurrent.ScheduledExecutorService beats;

    @BeforeAll
    static void start() throws Exception {
        final Path shm = Path.of("/dev/shm");
        dir = Files.createTempDirectory(Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")),
            "kvidx-epp-");
        writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("epp").shardCount(16)
            .capacityBlocks(1 << 14).blockSize(BLOCK).maxPods(64).deleteOnClose(true));
        for (int p = 0; p < PODS; p++) {
            SLOTS[p] = writer.registerPod("pod-" + p, MODEL);
        }
        // The daemon's heartbeat: readers take an index whose heartbeat stopped for unavailable.
        beats = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        beats.scheduleAtFixedRate(() -> writer.heartbeat(System.currentTimeMillis()), 0, 100, TimeUnit.MILLISECONDS);
        final SplittableRandom random = new SplittableRandom(11);
        final RouterKeyHasher hasher = new RouterKeyHasher(BLOCK);
        final long seed = RouterKeyHasher.chainSeed(MODEL, null, null);
        for (int i = 0; i < PROMPTS.length; i++) {
            PROMPTS[i] = new int[8 * BLOCK + 3];
            for (int t = 0; t < PROMPTS[i].length; t++) {
                PROMPTS[i][t] = random.nextInt(150_000);
            }
        }
        final long[] keys = new long[16];
        for (int i = 0; i < PODS; i++) { // prompt i is cached whole on pod i
            final int n = hasher.keys(seed, PROMPTS[i], PROMPTS[i].length, keys);
            writer.store(SLOTS[i], keys, 0, n);
        }
        final int n = hasher.keys(seed, PROMPTS[4], PROMPTS[4].length, keys);
        writer.store(SLOTS[1], keys, 0, 3); // prompt 4: 3 blocks on pod 1, all 8 on pod 3, 1 on pod 0
        writer.store(SLOTS[3], keys, 0, n);
        writer.store(SLOTS[0], keys, 0, 1);
        final EppConfig c = config(dir.toString());
        for (int p = 0; p < PODS; p++) {
            c.podSpec("pod-" + p + "=http://10.0.0." + (p + 1) + ":8000");
        }
        epp = EppServer.start(c);
        channel = NettyChannelBuilder.forAddress("127.0.0.1", epp.port()).usePlaintext().build();
        // The router's decision layer over the same index, with the document kvidx router makes by default.
        refIndex = new IndexReaderPodIndex(new IndexReaderContext().dir(dir).cell("epp"), 1_000);
        refRegistry = new PodRegistry();
        refRegistry.registerFromIndex(refIndex);
        reference = YamlRouting.parse(new RouterConfig().validate().routingDocument(),
            new YamlRouting.Environment().index(refIndex).registry(refRegistry).blockSize(BLOCK), null).router();
    }

    static EppConfig config(final String indexDir) {
        final EppConfig c = new EppConfig();
        c.dir = indexDir;
        c.cell = "epp";
        c.listen = "127.0.0.1:0";
        c.metrics = "127.0.0.1:0";
        return c;
    }

    @AfterAll
    static void stop() throws Exception {
        channel.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
        epp.close();
        refIndex.close();
        beats.shutdownNow();
        beats.awaitTermination(2, TimeUnit.SECONDS);
        writer.close();
        org.agrona.IoUtil.delete(dir.toFile(), true); // the cell's lock file stays after the writer's close
    }

    static String completion(final int[] prompt) {
        return "{\"model\":\"" + MODEL + "\",\"prompt\":" + Arrays.toString(prompt).replace(" ", "")
            + ",\"max_tokens\":8,\"stream\":true}";
    }

    /** kvidx router's decision: its default routing document and the router's plan, over the allowed pods. */
    static String routerPick(final int[] prompt, final Set<String> subset) {
        final RoutingContext rc = reference.newContext().reset();
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            final String ep = endpointOf(refRegistry.podId(slot));
            if (!refRegistry.isRegistered(slot) || ep == null || subset != null && !subset.contains(ep)) {
                rc.exclude(slot);
            }
        }
        rc.request().model(MODEL).promptTokens(prompt.length);
        rc.tokens(prompt, 0, prompt.length);
        final RoutingPlan plan = reference.plan(rc);
        assertFalse(plan.isFallback(), "the reference decided with the index: " + plan);
        return endpointOf(refRegistry.podId(plan.decodeSlot()));
    }

    static String endpointOf(final String podId) {
        return podId == null ? null : "10.0.0." + (Integer.parseInt(podId.substring(4)) + 1) + ":8000";
    }

    static String destination(final HeaderValueOption... hs) {
        for (final HeaderValueOption h : hs) {
            if (h.getHeader().getKey().equals(Answers.DESTINATION)) {
                return h.getHeader().getRawValue().toStringUtf8();
            }
        }
        return null;
    }

    /** Checks the pick's message: the header and the envoy.lb metadata with the same value. */
    static String pickOf(final ProcessingResponse r, final boolean onHeaders) {
        final var common = onHeaders ? r.getRequestHeaders().getResponse() : r.getRequestBody().getResponse();
        assertTrue(onHeaders ? r.hasRequestHeaders() : r.hasRequestBody(), r.toString());
        final String header = destination(common.getHeaderMutation().getSetHeadersList()
            .toArray(new HeaderValueOption[0]));
        final String meta = r.getDynamicMetadata().getFieldsOrThrow(Answers.LB_NAMESPACE).getStructValue()
            .getFieldsOrThrow(Answers.DESTINATION).getStringValue();
        assertEquals(header, meta, "header and metadata agree");
        return header;
    }

    @ParameterizedTest
    @EnumSource(value = BodySendMode.class, names = {"BUFFERED", "STREAMED", "FULL_DUPLEX_STREAMED"})
    void picksAsTheRouterInEachBodyMode(final BodySendMode mode) throws Exception {
        final List<Set<String>> subsets = new ArrayList<>();
        subsets.add(null);
        subsets.add(Set.of("10.0.0.1:8000", "10.0.0.2:8000"));
        subsets.add(Set.of("10.0.0.2:8000", "10.0.0.4:8000"));
        for (final Set<String> subset : subsets) {
            for (int i = 0; i < 5; i++) {
                final String expected = routerPick(PROMPTS[i], subset);
                final boolean held = subset == null || HOLDERS.get(i).stream().anyMatch(subset::contains);
                final String body = completion(PROMPTS[i]);
                final Envoy.Stream s = new Envoy.Stream(channel);
                s.send(Envoy.post("/v1/completions", mode, subset == null ? null : new ArrayList<>(subset)));
                final String got;
                if (mode == BodySendMode.BUFFERED) {
                    s.send(Envoy.body(body, true));
                    final List<ProcessingResponse> rs = s.take(2);
                    assertTrue(rs.get(0).hasRequestHeaders(), "headers answered at once");
                    assertFalse(rs.get(0).getRequestHeaders().getResponse().hasHeaderMutation());
                    got = pickOf(rs.get(1), false);
                } else {
                    final List<ProcessingRequest> chunks = Envoy.chunks(body, 100, true);
                    chunks.forEach(s::send);
                    final ProcessingResponse first = s.next();
                    got = pickOf(first, true);
                    if (mode == BodySendMode.STREAMED) {
                        for (final ProcessingResponse r : s.take(chunks.size())) {
                            assertTrue(r.hasRequestBody() && !r.getRequestBody().getResponse().hasBodyMutation());
                        }
                    } else {
                        final ProcessingResponse back = s.next();
                        final var streamed = back.getRequestBody().getResponse().getBodyMutation()
                            .getStreamedResponse();
                        assertEquals(body, streamed.getBody().toStringUtf8(), "the body goes back whole");
                        assertTrue(streamed.getEndOfStream());
                    }
                }
                // A prompt no pod of the subset holds ties; ties go by the prompt, so even then the picks are equal.
                assertEquals(expected, got, "prompt " + i + " subset " + subset + " in " + mode + (held ? ""
                    : " (a tie)"));
                responsePhase(s, mode);
                s.finish();
            }
        }
        assertEquals("10.0.0.4:8000", routerPick(PROMPTS[4], null), "the deepest holder");
        assertEquals("10.0.0.2:8000", routerPick(PROMPTS[4], Set.of("10.0.0.1:8000", "10.0.0.2:8000")));
    }

    /** Response headers, body and trailers: passed through (the body echoed in FULL_DUPLEX_STREAMED). */
    static void responsePhase(final Envoy.Stream s, final BodySendMode mode) throws InterruptedException {
        s.send(ProcessingRequest.newBuilder().setResponseHeaders(HttpHeaders.newBuilder().setHeaders(
            io.envoyproxy.envoy.config.core.v3.HeaderMap.newBuilder().addHeaders(Envoy.header(":status", "200"))))
            .build());
        assertTrue(s.next().hasResponseHeaders());
        s.send(ProcessingRequest.newBuilder().setResponseBody(HttpBody.newBuilder()
            .setBody(ByteString.copyFromUtf8("data: {}\n\n")).setEndOfStream(false)).build());
        final ProcessingResponse b = s.next();
        assertTrue(b.hasResponseBody());
        if (mode == BodySendMode.FULL_DUPLEX_STREAMED) {
            assertEquals("data: {}\n\n", b.getResponseBody().getResponse().getBodyMutation().getStreamedResponse()
                .getBody().toStringUtf8());
        }
        s.send(ProcessingRequest.newBuilder().setResponseTrailers(HttpTrailers.getDefaultInstance()).build());
        assertTrue(s.next().hasResponseTrailers());
    }

    @ParameterizedTest
    @EnumSource(value = BodySendMode.class, names = {"STREAMED", "FULL_DUPLEX_STREAMED"})
    void trailersEndTheBody(final BodySendMode mode) throws Exception {
        final String body = completion(PROMPTS[2]);
        final Envoy.Stream s = new Envoy.Stream(channel);
        s.send(Envoy.post("/v1/completions", mode, null));
        final List<ProcessingRequest> chunks = Envoy.chunks(body, 200, false);
        chunks.forEach(s::send);
        s.send(Envoy.trailers());
        assertEquals(routerPick(PROMPTS[2], null), pickOf(s.next(), true));
        final int bodies = mode == BodySendMode.STREAMED ? chunks.size() : 1;
        for (final ProcessingResponse r : s.take(bodies)) {
            assertTrue(r.hasRequestBody());
            if (mode == BodySendMode.FULL_DUPLEX_STREAMED) {
                assertFalse(r.getRequestBody().getResponse().getBodyMutation().getStreamedResponse().getEndOfStream(),
                    "the trailers end the stream, not the body");
            }
        }
        assertTrue(s.next().hasRequestTrailers());
        s.finish();
    }

    @Test
    void aLargeBodyGoesBackInChunksInFullDuplex() throws Exception {
        final StringBuilder b = new StringBuilder("{\"model\":\"m\",\"prompt\":" + Arrays.toString(PROMPTS[0])
            .replace(" ", "") + ",\"user\":\"");
        b.append("x".repeat(150_000)).append("\"}");
        final String body = b.toString();
        final Envoy.Stream s = new Envoy.Stream(channel);
        s.send(Envoy.post("/v1/completions", BodySendMode.FULL_DUPLEX_STREAMED, null));
        Envoy.chunks(body, 16_384, true).forEach(s::send);
        assertEquals("10.0.0.1:8000", pickOf(s.next(), true));
        final StringBuilder back = new StringBuilder();
        boolean end = false;
        int n = 0;
        while (!end) {
            final var sr = s.next().getRequestBody().getResponse().getBodyMutation().getStreamedResponse();
            back.append(sr.getBody().toStringUtf8());
            end = sr.getEndOfStream();
            n++;
        }
        assertEquals(body, back.toString());
        assertEquals((body.length() + EppLimits.STREAMED_CHUNK_BYTES - 1) / EppLimits.STREAMED_CHUNK_BYTES, n);
        s.finish();
    }

    @Test
    void theChatPathAndAMissPickAnEndpoint() throws Exception {
        final Envoy.Stream s = new Envoy.Stream(channel);
        s.send(Envoy.post("/v1/chat/completions", BodySendMode.BUFFERED, null),
            Envoy.body("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", true));
        final List<ProcessingResponse> rs = s.take(2);
        final String ep = pickOf(rs.get(1), false);
        assertTrue(ep.matches("10\\.0\\.0\\.[1-4]:8000"), ep);
        s.finish();
    }

    @Test
    void aRequestWithoutABodyIsPickedOnItsHeaders() throws Exception {
        final Envoy.Stream s = new Envoy.Stream(channel);
        s.send(Envoy.headers("GET", "/v1/models", BodySendMode.FULL_DUPLEX_STREAMED, List.of("10.0.0.3:8000"), true));
        assertEquals("10.0.0.3:8000", pickOf(s.next(), true));
        responsePhase(s, BodySendMode.FULL_DUPLEX_STREAMED);
        s.finish();
    }

    /** A bad input, what Envoy sends, and the immediate response's status. */
    record Bad(String name, int status, List<ProcessingRequest> messages) {
    }

    static List<Bad> badInputs() {
        final String ok = completion(PROMPTS[0]);
        final BodySendMode fd = BodySendMode.FULL_DUPLEX_STREAMED;
        final List<Bad> all = new ArrayList<>();
        final Map<String, String> bodies = new LinkedHashMap<>();
        bodies.put("malformed JSON", "{\"model\":\"m\",\"prompt\":[1,2,");
        bodies.put("not JSON at all", "hello");
        bodies.put("a JSON array", "[1,2,3]");
        bodies.put("prompt is a number", "{\"prompt\":42}");
        bodies.put("prompt is an object", "{\"prompt\":{\"a\":1}}");
        bodies.put("model is a number", "{\"model\":7,\"prompt\":[1,2]}");
        bodies.put("stream is a string", "{\"prompt\":[1,2],\"stream\":\"yes\"}");
        bodies.put("negative token id", "{\"prompt\":[1,-2]}");
        bodies.put("token id too large", "{\"prompt\":[1,4294967296]}");
        bodies.put("fractional token id", "{\"prompt\":[1,2.5]}");
        bodies.put("empty prompt", "{\"prompt\":[]}");
        bodies.put("no prompt", "{\"model\":\"m\"}");
        bodies.put("nesting too deep", "{\"prompt\":[1],\"x\":" + "[".repeat(100) + "]".repeat(100) + "}");
        bodies.put("trailing garbage", ok + "}");
        for (final Map.Entry<String, String> e : bodies.entrySet()) {
            all.add(new Bad(e.getKey(), 400, List.of(Envoy.post("/v1/completions", fd, null),
                Envoy.body(e.getValue(), true))));
        }
        all.add(new Bad("chat without messages", 400, List.of(Envoy.post("/v1/chat/completions", fd, null),
            Envoy.body("{\"model\":\"m\",\"prompt\":[1]}", true))));
        all.add(new Bad("messages not an array", 400, List.of(Envoy.post("/v1/chat/completions", fd, null),
            Envoy.body("{\"messages\":\"hi\"}", true))));
        all.add(new Bad("empty body", 400, List.of(Envoy.post("/v1/completions", fd, null), Envoy.body("", true))));
        final byte[] big = new byte[EppLimits.MAX_BODY_BYTES_DEFAULT + 1];
        all.add(new Bad("oversized body, one message", 413, List.of(Envoy.post("/v1/completions", fd, null),
            Envoy.body(big, 0, big.length, true))));
        final List<ProcessingRequest> many = new ArrayList<>();
        many.add(Envoy.post("/v1/completions", fd, null));
        for (int at = 0; at < big.length; at += 1 << 20) {
            many.add(Envoy.body(big, at, Math.min(big.length, at + (1 << 20)), at + (1 << 20) >= big.length));
        }
        all.add(new Bad("oversized body over chunks", 413, many));
        all.add(new Bad("buffered body larger than the proxy's buffer", 413, List.of(
            Envoy.post("/v1/completions", BodySendMode.BUFFERED_PARTIAL, null), Envoy.body(ok, false))));
        all.add(new Bad("no :path", 400, List.of(Envoy.headers("POST", null, fd, null, false))));
        all.add(new Bad("no :method", 400, List.of(Envoy.headers(null, "/v1/completions", fd, null, false))));
        all.add(new Bad("unknown path", 404, List.of(Envoy.headers("POST", "/v1/embeddings", fd, null, false))));
        all.add(new Bad("GET with a body", 405, List.of(Envoy.headers("GET", "/v1/completions", fd, null, false))));
        all.add(new Bad("a bodyless request outside the subset", 503, List.of(Envoy.headers("GET", "/v1/models", fd,
            List.of("192.168.9.9:8000"), true))));
        all.add(new Bad("body before headers", 400, List.of(Envoy.body(ok, true))));
        all.add(new Bad("trailers only", 400, List.of(Envoy.trailers())));
        all.add(new Bad("headers twice", 400, List.of(Envoy.post("/v1/completions", fd, null),
            Envoy.post("/v1/completions", fd, null))));
        all.add(new Bad("an empty ext_proc message", 400, List.of(ProcessingRequest.getDefaultInstance())));
        all.add(new Bad("subset of unknown endpoints", 503, List.of(Envoy.post("/v1/completions", fd,
            List.of("192.168.9.9:8000")), Envoy.body(ok, true))));
        all.add(new Bad("empty subset", 503, List.of(Envoy.post("/v1/completions", fd, List.of()),
            Envoy.body(ok, true))));
        return all;
    }

    static void assertImmediate(final String name, final int status, final ProcessingResponse r) {
        assertTrue(r.hasImmediateResponse(), name + ": " + r);
        assertEquals(status, r.getImmediateResponse().getStatus().getCodeValue(), name);
        final String json = r.getImmediateResponse().getBody().toStringUtf8();
        assertTrue(json.startsWith("{\"error\":{\"message\":") && json.endsWith("\"code\":" + status + "}}"),
            name + ": " + json);
    }

    @Test
    void badInputsGetTheirImmediateResponse() throws Exception {
        final List<Bad> bad = badInputs();
        for (final Bad b : bad) {
            final Envoy.Stream s = new Envoy.Stream(channel);
            b.messages().forEach(s::send);
            final List<ProcessingResponse> rs = s.untilEnd();
            assertFalse(rs.isEmpty(), b.name());
            assertImmediate(b.name(), b.status(), rs.get(rs.size() - 1));
            s.requests.onCompleted();
        }
        assertTrue(bad.size() >= 31, "kinds: " + bad.size());
        // Each refusal was counted, and the picker still picks.
        assertTrue(metrics().contains("kvidx_epp_requests_total{outcome=\"bad_request\"}"));
        pickOnce(channel, 3);
    }

    static void pickOnce(final ManagedChannel ch, final int prompt) throws Exception {
        final Envoy.Stream s = new Envoy.Stream(ch);
        s.send(Envoy.post("/v1/completions", BodySendMode.BUFFERED, null), Envoy.body(completion(PROMPTS[prompt]),
            true));
        final List<ProcessingResponse> rs = s.take(2);
        assertEquals(endpointOf("pod-" + prompt), pickOf(rs.get(1), false));
        s.finish();
    }

    @Test
    void aBodyAfterTheEndAndACancelledStreamAreHarmless() throws Exception {
        final Envoy.Stream s = new Envoy.Stream(channel);
        s.send(Envoy.post("/v1/completions", BodySendMode.BUFFERED, null), Envoy.body(completion(PROMPTS[1]), true),
            Envoy.body("{\"more\":1}", true));
        final List<ProcessingResponse> rs = s.take(2);
        assertEquals("10.0.0.2:8000", pickOf(rs.get(1), false));
        s.finish(); // nothing answered the stray body
        final String before = gauge(metrics(), "kvidx_epp_streams_open");
        final Envoy.Stream c = new Envoy.Stream(channel);
        c.send(Envoy.post("/v1/completions", BodySendMode.FULL_DUPLEX_STREAMED, null), Envoy.body("{\"prom", false));
        c.requests.onError(new RuntimeException("client cancelled"));
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!before.equals(gauge(metrics(), "kvidx_epp_streams_open")) && System.nanoTime() < until) {
            Thread.sleep(20);
        }
        assertEquals(before, gauge(metrics(), "kvidx_epp_streams_open"), "the cancelled stream was let go");
        pickOnce(channel, 1);
    }

    @Test
    void noReadyPodDeadlineAndTooManyStreams() throws Exception {
        final Path empty = Files.createTempDirectory("kvidx-epp-empty-");
        final EppConfig c = config(empty.toString());
        c.streamDeadlineMs = 1500;
        c.maxStreams = 2;
        try (EppServer small = EppServer.start(c)) {
            final ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", small.port()).usePlaintext()
                .build();
            try {
                final Envoy.Stream none = new Envoy.Stream(ch);
                none.send(Envoy.post("/v1/completions", BodySendMode.BUFFERED, null),
                    Envoy.body(completion(PROMPTS[0]), true));
                assertTrue(none.next().hasRequestHeaders());
                assertImmediate("no ready pod", 503, none.next());
                assertEquals(null, none.next());
                final Envoy.Stream a = new Envoy.Stream(ch).send(Envoy.post("/v1/completions",
                    BodySendMode.FULL_DUPLEX_STREAMED, null));
                final Envoy.Stream b = new Envoy.Stream(ch).send(Envoy.post("/v1/completions",
                    BodySendMode.FULL_DUPLEX_STREAMED, null));
                final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (!"2.0".equals(gauge(HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
                    "http://127.0.0.1:" + small.metricsPort() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body(), "kvidx_epp_streams_open"))
                    && System.nanoTime() < until) {
                    Thread.sleep(10);
                }
                final Envoy.Stream third = new Envoy.Stream(ch).send(Envoy.post("/v1/completions",
                    BodySendMode.FULL_DUPLEX_STREAMED, null));
                final ProcessingResponse refused = third.next();
                assertImmediate("max streams", 503, refused);
                assertImmediate("deadline exceeded", 408, a.next());
                assertImmediate("deadline exceeded", 408, b.next());
                final var health = HealthGrpc.newBlockingStub(ch);
                assertEquals(ServingStatus.SERVING, health.check(HealthCheckRequest.newBuilder()
                    .setService("liveness").build()).getStatus());
                for (final String service : List.of("readiness", "envoy.service.ext_proc.v3.ExternalProcessor")) {
                    assertEquals(ServingStatus.NOT_SERVING, health.check(HealthCheckRequest.newBuilder()
                        .setService(service).build()).getStatus(), "no index attached: " + service);
                }
                final HttpResponse<String> h = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
                    "http://127.0.0.1:" + small.metricsPort() + "/health")).build(),
                    HttpResponse.BodyHandlers.ofString());
                assertEquals(503, h.statusCode(), h.body());
            } finally {
                ch.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void healthAndMetrics() throws Exception {
        final var health = HealthGrpc.newBlockingStub(channel);
        for (final String service : List.of("", "liveness", "readiness",
            "envoy.service.ext_proc.v3.ExternalProcessor")) {
            assertEquals(ServingStatus.SERVING, health.check(HealthCheckRequest.newBuilder().setService(service)
                .build()).getStatus(), service);
        }
        pickOnce(channel, 2);
        final String m = metrics();
        assertTrue(m.contains("kvidx_epp_requests_total{outcome=\"picked\"}"), m);
        // Prompt 2 (131 tokens) is held whole by pod 2: 8 blocks, all but the one holding the last token count.
        assertTrue(m.contains("kvidx_epp_predicted_cached_tokens_sum"), m);
        assertTrue(m.contains("kvidx_epp_pods_ready 4.0"), m);
        final HttpResponse<String> h = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
            "http://127.0.0.1:" + epp.metricsPort() + "/health")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, h.statusCode(), h.body());
        assertTrue(h.body().contains("\"index_available\":true"), h.body());
    }

    static String gauge(final String page, final String name) {
        for (final String line : page.split("\n")) {
            if (line.startsWith(name + " ")) {
                return line.substring(name.length() + 1);
            }
        }
        return null;
    }

    static String metrics() throws IOException, InterruptedException {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
            + epp.metricsPort() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    @Test
    void servesTlsWithTheGivenCertificate() throws Exception {
        final Path tmp = Files.createTempDirectory("kvidx-epp-tls-");
        final Path cert = tmp.resolve("tls.crt");
        final Path key = tmp.resolve("tls.key");
        final Process p = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
            key.toString(), "-out", cert.toString(), "-days", "1", "-subj", "/CN=localhost", "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1").redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        final EppConfig c = config(dir.toString());
        c.podSpec("pod-3=http://10.0.0.4:8000");
        c.tlsCert = cert;
        c.tlsKey = key;
        try (EppServer tls = EppServer.start(c)) {
            final ManagedChannel ch = NettyChannelBuilder.forAddress("localhost", tls.port())
                .sslContext(GrpcSslContexts.forClient().trustManager(cert.toFile()).build()).build();
            try {
                pickOnce(ch, 3);
                assertEquals(ServingStatus.SERVING, HealthGrpc.newBlockingStub(ch).check(HealthCheckRequest
                    .newBuilder().setService("readiness").build()).getStatus());
            } finally {
                ch.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
            }
            final ManagedChannel plain = NettyChannelBuilder.forAddress("localhost", tls.port()).usePlaintext()
                .build();
            try {
                final var r = HealthGrpc.newBlockingStub(plain).withDeadlineAfter(2, TimeUnit.SECONDS);
                boolean refused = false;
                try {
                    r.check(HealthCheckRequest.getDefaultInstance());
                } catch (final io.grpc.StatusRuntimeException ex) {
                    refused = true;
                }
                assertTrue(refused, "plaintext is refused on the TLS port");
            } finally {
                plain.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void servesMutualTlsOnlyToAClientWithACertificateTheCaSigned() throws Exception {
        final io.kvidx.daemon.serve.TestCertificates certs = io.kvidx.daemon.serve.TestCertificates.make(
            Files.createTempDirectory("kvidx-epp-mtls-"));
        final EppConfig c = config(dir.toString());
        c.podSpec("pod-3=http://10.0.0.4:8000");
        c.tlsCert = certs.serverCert();
        c.tlsKey = certs.serverKey();
        c.tlsClientCa = certs.ca();
        try (EppServer tls = EppServer.start(c)) {
            final ManagedChannel ch = NettyChannelBuilder.forAddress("localhost", tls.port())
                .sslContext(GrpcSslContexts.forClient().trustManager(certs.ca().toFile())
                    .keyManager(certs.clientCert().toFile(), certs.clientKey().toFile()).build())
                .build();
            try {
                pickOnce(ch, 3);
            } finally {
                ch.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
            }
            final ManagedChannel anonymous = NettyChannelBuilder.forAddress("localhost", tls.port())
                .sslContext(GrpcSslContexts.forClient().trustManager(certs.ca().toFile()).build()).build();
            try {
                final var r = HealthGrpc.newBlockingStub(anonymous).withDeadlineAfter(3, TimeUnit.SECONDS);
                assertThrows(io.grpc.StatusRuntimeException.class, () -> r.check(HealthCheckRequest
                    .getDefaultInstance()), "a client without a certificate is refused");
            } finally {
                anonymous.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
            }
        }
        final EppConfig noCert = config(dir.toString());
        noCert.tlsClientCa = certs.ca();
        assertTrue(assertThrows(IllegalArgumentException.class, noCert::validate).getMessage()
            .contains("tls-client-ca"));
    }

    @Test
    void configFromYamlAndFlags() throws Exception {
        final EppConfig c = EppConfig.fromYaml("index: {dir: /tmp/x, cell: c1}\n"
            + "pods:\n  - {id: a, url: 'http://10.1.0.1:8000', model: m}\n"
            + "pod-url-template: 'http://{pod}.pods:8000'\n"
            + "epp: {listen: '127.0.0.1:9102', metrics: 'off', stream-deadline-ms: 500, max-streams: 7,"
            + " body-mode: buffered}\n"
            + "attempts: 2\n", null).validate();
        assertEquals("/tmp/x", c.dir);
        assertEquals(URI.create("http://10.1.0.1:8000"), c.pods.get("a"));
        assertEquals(new EppLimits(EppLimits.MAX_BODY_BYTES_DEFAULT, 500, 7, EppLimits.BodyMode.BUFFERED),
            c.limits());
        assertEquals(null, c.metricsAddress());
        assertTrue(c.routingDocument().contains("cache-aware"));
        for (final String bad : List.of("epp: {tls-cert: a.crt}\n", "epp: {nope: 1}\n", "policy: nope\n",
            "bogus: 1\n")) {
            boolean refused = false;
            try {
                EppConfig.fromYaml(bad, null).validate();
            } catch (final IllegalArgumentException ex) {
                refused = true;
            }
            assertTrue(refused, bad);
        }
        final Set<String> got = new HashSet<>();
        got.add(new EppConfig().validate().listenAddress().getPort() + "");
        assertEquals(Set.of("9002"), got.stream().collect(Collectors.toSet()));
        assertNotNull(EppLimits.DEFAULTS);
    }

    @Test
    void refusesAddressesOtherHostsReachUnlessAllowed() throws Exception {
        final EppConfig defaults = new EppConfig().validate();
        assertTrue(defaults.listenAddress().getAddress().isLoopbackAddress(), "loopback by default");
        assertTrue(defaults.metricsAddress().getAddress().isLoopbackAddress(), "loopback by default");
        for (final String yaml : List.of("epp: {listen: '0.0.0.0:9002'}\n", "epp: {listen: '10.0.0.7:9002'}\n",
            "epp: {metrics: '0.0.0.0:9090'}\n", "epp: {listen: 'epp.example:9002'}\n")) {
            final IllegalArgumentException ex = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalArgumentException.class, () -> EppConfig.fromYaml(yaml, null).validate(), yaml);
            assertTrue(ex.getMessage().contains("--allow-remote"), ex.getMessage());
        }
        final EppConfig allowed = EppConfig.fromYaml("epp: {listen: '0.0.0.0:9002', metrics: '0.0.0.0:9090',"
            + " allow-remote: true}\n", null).validate();
        assertEquals(9002, allowed.listenAddress().getPort());
        assertEquals(9090, allowed.metricsAddress().getPort());
        final EppCommand cli = new EppCommand();
        new picocli.CommandLine(cli).parseArgs("--listen", "0.0.0.0:9002", "--allow-remote");
        assertEquals(9002, cli.build().listenAddress().getPort());
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> {
            final EppCommand refused = new EppCommand();
            new picocli.CommandLine(refused).parseArgs("--listen", "0.0.0.0:9002");
            refused.build();
        });
    }
}
