package io.kvidx.daemon.serve;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.daemon.membership.Membership;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static io.kvidx.daemon.serve.IndexHttpApiTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code POST /unregister} takes effect before it answers (issue 35), as Dynamo's indexer removes a worker before it
 * answers: right after the 200, a query of the keys the instance held names neither of its data-parallel ranks, and
 * {@code /workers} does not list it; unregistering one rank leaves the other answering. Two real Python publishers
 * (instance 1, ranks 0 and 1), a real daemon, a real HTTP client; several rounds, each registering again and waiting
 * for the keys to come back before removing them. And the answer's bound: a removal that does not complete gets a
 * JSON 503 after the bound, while the event loop answers other requests meanwhile.
 */
@Timeout(180)
class UnregisterTakesEffectTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    @Test
    void shouldAnswerUnregisterOnlyOnceNoQueryOrWorkersListNamesTheInstance() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String query = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), base.tokenIds().length)
            + ",\"model_name\":\"" + base.model() + "\"}";
        try (KvidxDaemon daemon = KvidxDaemon.start(HttpApiClient.daemonContext(dir));
            PyPeer rank0 = new PyPeer(PyPeer.VLLM, "--topic", "");
            PyPeer rank1 = new PyPeer(PyPeer.VLLM, "--topic", "")) {
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            rank0.command("store kv_event_base.json");
            rank1.command("store kv_event_base.json");
            for (int round = 0; round < 6; round++) {
                assertEquals(201, http.post("/register", register(rank0, 0, base)).status());
                assertEquals(201, http.post("/register", register(rank1, 1, base)).status());
                final int r = round;
                await("both ranks answer, round " + round, () -> {
                    rank0.command("ping");
                    rank1.command("ping");
                    return http.post("/query", query).body().contains("\"scores\":{\"1\":{\"0\":400,\"1\":400}}");
                });
                if (round % 2 == 1) {
                    // One rank: the other still answers right after.
                    assertEquals(200, http.post("/unregister", "{\"instance_id\":1,\"dp_rank\":1}").status());
                    final String after = http.post("/query", query).body();
                    assertTrue(after.contains("\"scores\":{\"1\":{\"0\":400}}"), "round " + r + ": " + after);
                    final String workers = http.get("/workers").body();
                    assertTrue(workers.contains("\"endpoints\":{\"0\":\"" + rank0.endpoint + "\"}")
                        && !workers.contains(rank1.endpoint), workers);
                }
                final HttpApiClient.Reply removed = http.post("/unregister", "{\"instance_id\":1}");
                assertEquals(200, removed.status(), removed.body());
                final HttpApiClient.Reply after = http.post("/query", query);
                assertFalse(after.body().contains("\"1\":"), "round " + r + ", right after the 200: " + after.body());
                assertEquals("[]", http.get("/workers").body(), "round " + r + ", right after the 200");
            }
        }
    }

    @Test
    void shouldAnswer503AfterTheBoundWhenTheRemovalDoesNotCompleteWithoutBlockingTheEventLoop() throws Exception {
        final CompletableFuture<Void> never = new CompletableFuture<>();
        final Membership membership = new Membership(null, new Membership.Subscriptions() {
            @Override
            public CompletableFuture<Void> subscribe(final ZmqEndpoint endpoint) {
                return CompletableFuture.completedFuture(null);
            }

            @Override
            public CompletableFuture<Void> unsubscribe(final ZmqEndpoint endpoint) {
                return never;
            }
        });
        membership.start(List.of());
        final IndexWriterContext writerContext = new IndexWriterContext().dir(dir).cell("test").shardCount(4)
            .capacityBlocks(1024).maxPods(16).deleteOnClose(true);
        try (IndexWriter writer = IndexWriter.create(writerContext);
            IndexHttpServer server = IndexHttpServer.start(new InetSocketAddress("127.0.0.1", 0), 1, false, 1 << 20,
                new IndexHttpServer.Guards(16, 10_000, null),
                IndexReader.attach(new IndexReaderContext().dir(dir).cell("test").attachTimeoutMs(1_000)), null, null,
                TestFleet.of(membership, 1_500))) {
            final HttpApiClient http = new HttpApiClient(server.port());
            assertEquals(201, http.post("/register", "{\"instance_id\":9,\"endpoint\":\"tcp://127.0.0.1:9\","
                + "\"model_name\":\"m\"}").status());
            final CompletableFuture<HttpApiClient.Reply> unregister = CompletableFuture.supplyAsync(() -> {
                try {
                    return new HttpApiClient(server.port()).post("/unregister", "{\"instance_id\":9}");
                } catch (final Exception ex) {
                    throw new IllegalStateException(ex);
                }
            });
            final long start = System.nanoTime();
            Thread.sleep(300);
            // The one event loop answers while the removal is pending: nothing waits on it.
            assertEquals("[]", http.get("/workers").body());
            assertTrue(System.nanoTime() - start < 1_200_000_000L, "the event loop was held");
            assertFalse(unregister.isDone());
            final HttpApiClient.Reply reply = unregister.get();
            final long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertEquals(503, reply.status(), reply.body());
            assertTrue(reply.body().startsWith("{\"error\":\"instance 9 was not taken down within 1500 ms")
                && reply.body().endsWith("\"code\":\"unavailable\"}"), reply.body());
            assertTrue(tookMs >= 1_400 && tookMs < 8_000, tookMs + " ms");
        } finally {
            membership.close();
        }
    }

    private static String register(final PyPeer peer, final int rank, final Capture c) {
        return "{\"instance_id\":1,\"dp_rank\":" + rank + ",\"endpoint\":\"" + peer.endpoint
            + "\",\"replay_endpoint\":\"" + peer.replayEndpoint + "\",\"model_name\":\"" + c.model()
            + "\",\"block_size\":16}";
    }
}
