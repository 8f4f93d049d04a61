package io.kvidx.router;

import io.kvidx.client.json.MiniJson;
import io.kvidx.routing.PodIndex;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The router over a real index: a {@code kvidx daemon} process ingesting the KV events of mock engine processes
 * (vLLM's ZeroMQ events and replay), and the router reading its index read-only, in this JVM.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RouterIndexTest {
    private static final String MODEL = "m";

    /** The daemon's arguments for engines it subscribes to from the start. */
    private static String[] zmq(final int maxPods, final int httpPort, final MockEngine... engines) {
        final List<String> args = new ArrayList<>(List.of("--max-pods", Integer.toString(maxPods), "--http",
            "127.0.0.1:" + httpPort));
        for (final MockEngine e : engines) {
            args.addAll(List.of("--zmq", e.podId + "@" + MODEL + "=" + e.zmqPub(), "--replay", e.podId + "="
                + e.zmqReplay()));
        }
        return args.toArray(new String[0]);
    }

    private static RouterConfig config(final Path work, final Path dir, final MockEngine... engines) {
        final RouterConfig c = Routers.config(work);
        c.dir = dir.toString();
        c.cell = "c";
        for (final MockEngine e : engines) {
            c.pod(e.podId, e.url(), MODEL, null);
        }
        return c;
    }

    /** @return the leading tokens the daemon's HTTP API says the pod holds of the prompt. */
    @SuppressWarnings("unchecked")
    private static long held(final int httpPort, final String pod, final String ids) throws Exception {
        final HttpResponse<String> r = Routers.post(httpPort, "/query", "{\"token_ids\": " + ids + ", \"model\": \""
            + MODEL + "\"}");
        final Map<String, Object> scores = (Map<String, Object>) ((Map<String, Object>) MiniJson.parse(r.body()))
            .get("scores");
        final Object ranks = scores == null ? null : scores.get(pod);
        return ranks == null ? 0 : ((Number) ((Map<String, Object>) ranks).get("0")).longValue();
    }

    private static void awaitIndexed(final RouterServer router, final int pods, final DaemonProcess daemon)
        throws Exception {
        try {
            Routers.await(pods + " pods from the index", 10_000, () -> router.index.isAvailable()
                && router.pods.routable() == pods);
        } catch (final AssertionError ex) {
            throw new AssertionError(ex.getMessage() + "; the daemon's log:\n" + daemon.tail(), ex);
        }
    }

    /** @return ids {@code [first .. first + n)} followed by the suffix. */
    private static String prompt(final int first, final int n, final int suffixFirst, final int suffixLength) {
        final String head = Routers.ids(n, first);
        return suffixLength == 0 ? head : head.substring(0, head.length() - 1) + ","
            + Routers.ids(suffixLength, suffixFirst).substring(1);
    }

    /**
     * Requests that share a long prefix go to the pod holding it, and the router's prediction is what the engine
     * then finds in its cache: x-kvidx-predicted-tokens = the engine's cached_tokens &gt; 0. Each engine is given a
     * different prefix first (directly, not through the router); the daemon indexes its events. Fails if the
     * cache-aware profile stops scoring the index's depths (the router's default profile,
     * RouterConfig.routingDocument), or PodBook stops learning the index's pods with the listed URLs.
     */
    @Test
    @SuppressWarnings("unchecked")
    void shouldSendSharedPrefixesToThePodHoldingThem() throws Exception {
        MockEngine.require();
        final Path work = Routers.shmDir("router-index");
        final Path dir = work.resolve("index");
        final int http = DaemonProcess.freePort();
        try (MockEngine a = MockEngine.start(work, "pod-a", MODEL);
            MockEngine b = MockEngine.start(work, "pod-b", MODEL);
            DaemonProcess daemon = DaemonProcess.start(dir, "c", work.resolve("daemon.log"), zmq(8, http, a, b));
            RouterServer router = RouterServer.start(config(work, dir, a, b))) {
            final String prefixA = prompt(1_000, 256, 0, 0);
            final String prefixB = prompt(5_000, 256, 0, 0);
            assertEquals(200, a.post("/v1/completions", "{\"prompt\": " + prefixA + ", \"max_tokens\": 1}")
                .statusCode());
            assertEquals(200, b.post("/v1/completions", "{\"prompt\": " + prefixB + ", \"max_tokens\": 1}")
                .statusCode());
            Routers.await("the daemon indexed both prefixes", 10_000, () -> held(http, "pod-a", prefixA) == 256
                && held(http, "pod-b", prefixB) == 256);
            awaitIndexed(router, 2, daemon);

            for (int i = 0; i < 12; i++) {
                final boolean onA = i % 2 == 0;
                // 15 shared blocks, then a block and a half of the request's own.
                final String ids = prompt(onA ? 1_000 : 5_000, 240, 100_000 + 100 * i, 20);
                final HttpResponse<String> r = Routers.post(router.port(), "/v1/completions", "{\"model\": \""
                    + MODEL + "\", \"prompt\": " + ids + ", \"max_tokens\": 2}");
                assertEquals(200, r.statusCode(), r::body);
                final String pod = onA ? "pod-a" : "pod-b";
                assertEquals(pod, r.headers().firstValue("x-kvidx-mock-pod").orElseThrow(), "request " + i);
                assertEquals(pod, r.headers().firstValue("x-kvidx-pod").orElseThrow());
                assertEquals("false", r.headers().firstValue("x-kvidx-fallback").orElseThrow());
                final long predicted = Long.parseLong(r.headers().firstValue("x-kvidx-predicted-tokens")
                    .orElseThrow());
                final Map<String, Object> usage = (Map<String, Object>) ((Map<String, Object>) MiniJson.parse(
                    r.body())).get("usage");
                final long cached = ((Number) ((Map<String, Object>) usage.get("prompt_tokens_details"))
                    .get("cached_tokens")).longValue();
                assertEquals(240, predicted, "request " + i);
                assertEquals(predicted, cached, "the engine found what the router predicted");
            }
            final String page = Routers.metrics(router);
            assertEquals(0, Metrics.value(page, "kvidx_router_decisions_total", "outcome", "fallback"), page);
        } finally {
            Routers.deleteTree(work);
        }
    }

    /**
     * A slot that changes hands mid-run: pods A and C hold the cell's two slots; A is unregistered through the
     * daemon's HTTP API while requests flow, its slot freed, and B registered, which can only get A's old slot. A's
     * engine keeps running, so a request sent to A's URL under B's name would be answered (by A). Every answer must
     * come from the pod the router names (x-kvidx-pod = x-kvidx-mock-pod), and B must end up in A's slot at its own
     * URL. Fails if PodBook.followIndex keeps a listed pod's URL on a slot the index gave to another pod, or the
     * registry keeps routing to a slot whose pod changed (PodRegistry.syncWithIndex).
     */
    @Test
    void shouldNeverSendAReusedSlotsRequestsToItsFormerPod() throws Exception {
        MockEngine.require();
        final Path work = Routers.shmDir("router-slot");
        final Path dir = work.resolve("index");
        final int http = DaemonProcess.freePort();
        final AtomicBoolean stop = new AtomicBoolean();
        final ConcurrentLinkedQueue<String> mismatches = new ConcurrentLinkedQueue<>();
        final AtomicInteger answers = new AtomicInteger();
        final AtomicInteger namedB = new AtomicInteger();
        final List<Thread> clients = new ArrayList<>();
        try (MockEngine a = MockEngine.start(work, "pod-a", MODEL);
            MockEngine b = MockEngine.start(work, "pod-b", MODEL);
            MockEngine c = MockEngine.start(work, "pod-c", MODEL);
            DaemonProcess daemon = DaemonProcess.start(dir, "c", work.resolve("daemon.log"), zmq(2, http, a, c));
            RouterServer router = RouterServer.start(config(work, dir, a, b, c))) {
            awaitIndexed(router, 2, daemon);
            final int slotA = router.registry.slotOf("pod-a");
            assertTrue(slotA >= 0 && router.registry.slotOf("pod-c") >= 0);
            for (int t = 0; t < 2; t++) {
                final int seed = t;
                clients.add(Thread.ofPlatform().name("slot-client-" + t).start(() -> {
                    int i = 0;
                    while (!stop.get()) {
                        try {
                            final HttpResponse<String> r = Routers.post(router.port(), "/v1/completions",
                                "{\"prompt\": [" + (seed * 1_000_000 + i++) + ", 1, 2], \"max_tokens\": 1}");
                            final String named = r.headers().firstValue("x-kvidx-pod").orElse(null);
                            final String served = r.headers().firstValue("x-kvidx-mock-pod").orElse(null);
                            if (r.statusCode() != 200 || named == null || !named.equals(served)) {
                                mismatches.add(r.statusCode() + " named " + named + " served by " + served
                                    + (r.statusCode() == 200 ? "" : ": " + r.body()));
                            }
                            answers.incrementAndGet();
                            if ("pod-b".equals(named)) {
                                namedB.incrementAndGet();
                            }
                        } catch (final Exception ex) {
                            mismatches.add(ex.toString());
                        }
                    }
                }));
            }
            Routers.await("traffic", 5_000, () -> answers.get() > 50);
            assertEquals(200, Routers.post(http, "/unregister", "{\"instance_id\": \"pod-a\"}").statusCode());
            Routers.await("A's slot freed", 10_000, () -> router.index.describe(slotA) == null);
            final HttpResponse<String> registered = Routers.post(http, "/register", "{\"instance_id\": \"pod-b\", "
                + "\"endpoint\": \"" + b.zmqPub() + "\", \"replay_endpoint\": \"" + b.zmqReplay() + "\", "
                + "\"model_name\": \"" + MODEL + "\"}");
            assertEquals(201, registered.statusCode(), registered::body);
            Routers.await("B in A's old slot", 10_000, () -> {
                final PodIndex.PodDescription d = router.index.describe(slotA);
                return d != null && d.podId().equals("pod-b");
            });
            Routers.await("requests routed to B", 10_000, () -> namedB.get() > 20);
            final int before = answers.get();
            Routers.await("more traffic", 5_000, () -> answers.get() > before + 100);
            stop.set(true);
            for (final Thread t : clients) {
                t.join(10_000);
            }
            assertTrue(mismatches.isEmpty(), () -> mismatches.size() + " of " + answers.get() + " answers wrong: "
                + mismatches.stream().limit(5).toList());
            assertEquals(slotA, router.registry.slotOf("pod-b"), "B took A's slot");
            assertEquals(b.url(), router.pods.endpoint(slotA).toString());
            assertEquals(-1, router.registry.slotOf("pod-a"));
        } finally {
            stop.set(true);
            for (final Thread t : clients) {
                t.join(10_000);
            }
            Routers.deleteTree(work);
        }
    }

    /**
     * The index daemon killed (SIGKILL) and restarted while a client sends 50 requests a second: every request is
     * answered (200); the decisions fall back while the index is gone (its writer's heartbeat stale) and use the
     * index again once the new daemon runs. Fails if a decision without the index fails the request (Selector's
     * fallback picker, or PodBook dropping the pods it learnt from the index while the index is away), or if the
     * router stops re-attaching to the re-created index (IndexReaderPodIndex).
     */
    @Test
    void shouldAnswerEveryRequestWhileTheDaemonRestarts() throws Exception {
        MockEngine.require();
        final Path work = Routers.shmDir("router-restart");
        final Path dir = work.resolve("index");
        final int http = DaemonProcess.freePort();
        final ScheduledExecutorService pace = Executors.newSingleThreadScheduledExecutor();
        final List<CompletableFuture<Integer>> sent = new ArrayList<>();
        try (MockEngine a = MockEngine.start(work, "pod-a", MODEL);
            MockEngine b = MockEngine.start(work, "pod-b", MODEL);
            DaemonProcess daemon = DaemonProcess.start(dir, "c", work.resolve("daemon.log"), zmq(8, http, a, b));
            RouterServer router = RouterServer.start(config(work, dir, a, b))) {
            awaitIndexed(router, 2, daemon);
            final AtomicInteger n = new AtomicInteger();
            pace.scheduleAtFixedRate(() -> {
                final int i = n.getAndIncrement();
                final HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port()
                        + "/v1/completions")).timeout(Duration.ofSeconds(10))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"" + MODEL + "\", \"prompt\": "
                        + prompt(7_000, 64, 200_000 + 8 * i, 8) + ", \"max_tokens\": 1}")).build();
                synchronized (sent) {
                    sent.add(MockEngine.HTTP.sendAsync(req, HttpResponse.BodyHandlers.discarding())
                        .thenApply(HttpResponse::statusCode).exceptionally(ex -> -1));
                }
            }, 0, 20, TimeUnit.MILLISECONDS);
            Routers.await("indexed decisions", 5_000, () -> decisions(router, "indexed") > 20);
            final double fallbacksBefore = decisions(router, "fallback");

            daemon.kill();
            Routers.await("decisions falling back", 10_000, () -> decisions(router, "fallback") > fallbacksBefore
                + 10);
            assertTrue(!router.index.isAvailable());
            daemon.restart();
            Routers.await("the index back", 10_000, () -> router.index.isAvailable());
            final double indexedAfterRestart = decisions(router, "indexed");
            Routers.await("indexed decisions again", 10_000, () -> decisions(router, "indexed")
                > indexedAfterRestart + 20);
            pace.shutdown();
            assertTrue(pace.awaitTermination(5, TimeUnit.SECONDS));
            final List<Integer> statuses = new ArrayList<>();
            synchronized (sent) {
                for (final CompletableFuture<Integer> f : sent) {
                    statuses.add(f.get(15, TimeUnit.SECONDS));
                }
            }
            assertTrue(statuses.size() > 150, "requests sent: " + statuses.size());
            final long failed = statuses.stream().filter(s -> s != 200).count();
            assertEquals(0, failed, () -> "statuses: " + statuses.stream().filter(s -> s != 200).toList());
            assertNotEquals(0, decisions(router, "fallback") - fallbacksBefore);
        } finally {
            pace.shutdownNow();
            Routers.deleteTree(work);
        }
    }

    private static double decisions(final RouterServer router, final String outcome) throws Exception {
        return Metrics.value(Routers.metrics(router), "kvidx_router_decisions_total", "outcome", outcome);
    }
}
