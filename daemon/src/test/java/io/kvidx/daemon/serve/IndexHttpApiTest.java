package io.kvidx.daemon.serve;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.Callable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The indexer HTTP API end to end: a real daemon with {@code --http} on loopback, a real vLLM-format publisher in
 * Python registered at runtime through {@code POST /register} (its topic is Dynamo's {@code kv-events}, which the
 * registration overrides), real HTTP clients, the peers' response shapes, unregistration, a restart that keeps the
 * registration, and every refusal answered with a JSON error before the index is touched.
 */
@Timeout(120)
class IndexHttpApiTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    private DaemonContext context() {
        return HttpApiClient.daemonContext(dir);
    }

    @Test
    void shouldRegisterQueryAndUnregisterARealEngineAtRuntime() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String model = base.model();
        final String query = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), base.tokenIds().length)
            + ",\"model_name\":\"" + model + "\"}";
        try (PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv-events")) {
            final String register = "{\"instance_id\":7,\"endpoint\":\"" + peer.endpoint + "\",\"replay_endpoint\":\""
                + peer.replayEndpoint + "\",\"model_name\":\"" + model + "\",\"block_size\":16}";
            try (KvidxDaemon daemon = KvidxDaemon.start(context())) {
                final HttpApiClient http = new HttpApiClient(daemon.httpPort());
                assertEquals(404, http.post("/query", query).status(), "no engine serves the model yet");

                final HttpApiClient.Reply registered = http.post("/register", register);
                assertEquals(201, registered.status(), registered.body());
                assertTrue(registered.body().contains("\"status\":\"ok\""), registered.body());
                final HttpApiClient.Reply again = http.post("/register", register);
                assertEquals(409, again.status(), "the same registration again, as Dynamo answers: " + again.body());
                assertTrue(again.body().endsWith("\"code\":\"already_registered\"}"), again.body());
                final HttpApiClient.Reply conflict = http.post("/register", register.replace(peer.endpoint,
                    "tcp://127.0.0.1:1"));
                assertEquals(409, conflict.status(), conflict.body());

                peer.command("store kv_event_base.json");
                // The first batch the new subscription sees makes it replay the engine from the start.
                await("400 tokens for instance 7", () -> {
                    peer.command("ping");
                    return http.post("/query", query).body().contains("\"scores\":{\"7\":{\"0\":400}}");
                });
                final String answer = http.post("/query", query).body();
                assertTrue(answer.contains("\"instances\":{\"7\":{\"longest_matched\":400,\"gpu\":400,\"cpu\":400,"
                    + "\"disk\":400,\"dp\":{\"0\":400}}}"), answer);
                await("the pod's statistics", () -> http.post("/query", query).body()
                    .contains("\"tree_sizes\":{\"7\":{\"0\":25}}"));

                final String prefix = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), 100)
                    + ",\"model_name\":\"" + model + "\"}";
                assertTrue(http.post("/query", prefix).body().contains("\"scores\":{\"7\":{\"0\":96}}"));
                final String salted = query.replace("}", ",\"cache_salt\":\"other\"}");
                assertTrue(http.post("/query", salted).body().contains("\"scores\":{}"), "a salt keys other blocks");

                final long[] keys = new long[25];
                new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed(model, null, null), base.tokenIds(),
                    base.tokenIds().length, keys);
                final StringBuilder hashes = new StringBuilder();
                for (final long k : keys) {
                    hashes.append(hashes.isEmpty() ? "" : ",").append(k);
                }
                final HttpApiClient.Reply byHash = http.post("/query_by_hash", "{\"router_keys\":[" + hashes
                    + "],\"model_name\":\"" + model + "\"}");
                assertTrue(byHash.body().contains("\"scores\":{\"7\":{\"0\":400}}"), byHash.body());
                // The peers' XXH3 hashes would match nothing on this cell: refused, naming the option that fixes it.
                for (final String field : new String[] {"block_hashes", "seq_hashes", "block_hash"}) {
                    final HttpApiClient.Reply peers = http.post("/query_by_hash", "{\"" + field + "\":[" + hashes
                        + "],\"model_name\":\"" + model + "\"}");
                    assertEquals(400, peers.status(), peers.body());
                    assertTrue(peers.body().contains("--key-scheme xxh3-chain")
                        && peers.body().endsWith("\"code\":\"wrong_key_scheme\"}"), peers.body());
                }

                // A Python router: the standard library's http.client on a keep-alive connection.
                final String csv = HttpApiClient.csv(base.tokenIds());
                final Process python = new ProcessBuilder(PyPeer.PYTHON.toString(), "src/test/python/query_client.py",
                    Integer.toString(daemon.httpPort()), model, csv).redirectErrorStream(true).start();
                final String printed = new String(python.getInputStream().readAllBytes(),
                    java.nio.charset.StandardCharsets.UTF_8).trim();
                assertTrue(python.waitFor(20, java.util.concurrent.TimeUnit.SECONDS));
                assertEquals("7 400", printed);

                final HttpApiClient.Reply workers = http.get("/workers");
                assertTrue(workers.body().startsWith("[{\"instance_id\":7,\"source\":\"zmq\",\"status\":\"active\""),
                    workers.body());
                assertTrue(workers.body().contains("\"endpoints\":{\"0\":\"" + peer.endpoint + "\"},\"listeners\":"
                    + "{\"0\":{\"endpoint\":\"" + peer.endpoint + "\",\"status\":\"active\"}}"), workers.body());
                // Dynamo's filters: each optional, both applied; [] when nothing matches.
                assertEquals(workers.body(), http.get("/workers?model_name=" + java.net.URLEncoder.encode(model,
                    java.nio.charset.StandardCharsets.UTF_8) + "&routing_group=default").body());
                assertEquals("[]", http.get("/workers?model_name=other").body());
                assertEquals("[]", http.get("/workers?routing_group=g2").body());
                assertEquals(200, http.get("/health").status());
                final HttpApiClient.Reply metrics = http.get("/metrics");
                assertTrue(metrics.body().contains("kvidx_blocks_stored_total"), metrics.body());
            }

            // A restart keeps the registration: the new daemon subscribes again and answers without a register.
            try (KvidxDaemon daemon = KvidxDaemon.start(context())) {
                final HttpApiClient http = new HttpApiClient(daemon.httpPort());
                assertTrue(http.get("/workers").body().contains("\"instance_id\":7"));
                await("answers again after the restart", () -> {
                    peer.command("ping");
                    return http.post("/query", query).body().contains("\"scores\":{\"7\":{\"0\":400}}");
                });
                assertEquals(200, http.post("/unregister", "{\"instance_id\":7}").status());
                // Down at once, swept after: no answer names it, and once no pod serves the model it is unknown.
                await("the pod is down", () -> {
                    final HttpApiClient.Reply r = http.post("/query", query);
                    return r.status() == 404 || r.body().contains("\"scores\":{}");
                });
                assertEquals("[]", http.get("/workers").body());
                final HttpApiClient.Reply again = http.post("/unregister", "{\"instance_id\":7}");
                assertEquals(404, again.status());
                assertTrue(again.body().contains("\"code\":\"unknown_instance\""), again.body());
            }
        }
    }

    @Test
    void shouldRefuseBadRequestsWithJsonErrorsWithoutTouchingTheIndex() throws Exception {
        final DaemonContext small = context();
        small.serving().httpMaxBodyBytes(4096);
        try (KvidxDaemon daemon = KvidxDaemon.start(small)) {
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            assertError(http.post("/query", "not json"), 400, "bad_json");
            assertError(http.post("/query", "[1,2]"), 400, "bad_json");
            assertError(http.post("/query", "[".repeat(64) + "]".repeat(64)), 400, "bad_json");
            assertError(http.post("/query", "{\"token_ids\":[1,2],\"model_name\":\"m\"} trailing"), 400, "bad_json");
            assertError(http.post("/query", "{\"model_name\":\"m\"}"), 422, "missing_field");
            assertError(http.post("/query", "{\"token_ids\":[1,-2],\"model_name\":\"m\"}"), 422, "invalid_field");
            assertError(http.post("/query", "{\"token_ids\":[1,2.5],\"model_name\":\"m\"}"), 422, "invalid_field");
            assertError(http.post("/query", "{\"token_ids\":[1," + "9".repeat(40) + "]}"), 400, "bad_json");
            final HttpApiClient.Reply unknown = http.post("/query", "{\"token_ids\":[1,2],\"model_name\":\"nope\"}");
            assertError(unknown, 404, "unknown_model");
            assertTrue(unknown.body().contains("no indexer for model=nope tenant=default"), unknown.body());
            assertError(http.post("/query", "{\"token_ids\":" + HttpApiClient.tokens(new int[4096], 4096) + "}"),
                413, "body_too_large");
            assertError(http.get("/query"), 405, "method_not_allowed");
            assertError(http.get("/nowhere"), 404, "not_found");
            assertError(http.post("/register", "{\"instance_id\":1,\"endpoint\":\"tcp://127.0.0.1:9\","
                + "\"model_name\":\"m\",\"block_size\":32}"), 409, "wrong_block_size");
            assertError(http.post("/register", "{\"instance_id\":1,\"endpoint\":\"http://x\",\"model_name\":\"m\"}"),
                400, "invalid_field");
            assertError(http.post("/register", "{\"instance_id\":1,\"model_name\":\"m\"}"), 422, "missing_field");
            assertError(http.post("/register", "{\"instance_id\":1,\"endpoint\":\"tcp://127.0.0.1:9\","
                + "\"model_name\":\"m\",\"type\":\"trtllm\"}"), 422, "invalid_field");
            assertError(http.post("/unregister", "{\"instance_id\":1}"), 404, "unknown_instance");
            final HttpApiClient.Reply dynamoDump = http.get("/dump?format=dynamo");
            assertError(dynamoDump, 501, "not_implemented");
            assertTrue(dynamoDump.body().contains("tokens_hash") && dynamoDump.body().contains("--peer"),
                dynamoDump.body());
            assertError(http.get("/dump?format=xml"), 400, "invalid_field");
            assertEquals(0, daemon.counters().value(CounterType.MESSAGES_RECEIVED));
            assertEquals(0, daemon.index().entryCount());
            assertEquals("[]", http.get("/workers").body());
            assertEquals(200, http.get("/health").status(), "still serving after every refusal");
        }
    }

    private static void assertError(final HttpApiClient.Reply reply, final int status, final String code) {
        assertEquals(status, reply.status(), reply.body());
        assertTrue(reply.body().startsWith("{\"error\":\"") && reply.body().endsWith("\"code\":\"" + code + "\"}"),
            reply.body());
    }

    static void await(final String what, final Callable<Boolean> condition) throws Exception {
        final long deadline = System.nanoTime() + 30_000_000_000L;
        while (!condition.call()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            Thread.sleep(50);
        }
    }
}
