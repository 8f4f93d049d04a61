package io.kvidx.daemon.serve;

import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Mooncake's RFC shapes under the {@code /mooncake} base path (docs/service-api.md, "Mooncake's shapes"): a Python
 * client written as a Mooncake router (src/test/python/mooncake_client.py: {@code modelname}, {@code type: vLLM},
 * string instance ids, {@code tenant_id}) registers a real vLLM-format publisher, queries it and unregisters it on
 * one keep-alive connection; the answers are Mooncake's: 200 with the instance id, {@code {tenant: {instance:
 * {longest_matched, GPU, DP, CPU, DISK}}}}, {@code {}} for an unknown tenant, {@code removed_instances}, and
 * {@code service not found: id|tenant|rank} for an instance no longer registered. The same daemon's Dynamo paths keep
 * Dynamo's shapes.
 */
@Timeout(120)
class MooncakeDialectTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    @Test
    void shouldAnswerAMooncakeRouterInMooncakesShapes() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        try (KvidxDaemon daemon = KvidxDaemon.start(HttpApiClient.daemonContext(dir));
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "")) {
            final Process client = new ProcessBuilder(PyPeer.PYTHON.toString(), "src/test/python/mooncake_client.py",
                Integer.toString(daemon.httpPort()), peer.endpoint, base.model(), "tenant-a",
                HttpApiClient.csv(base.tokenIds())).redirectErrorStream(true).start();
            // The client registers without a replay endpoint: publish until its queries see the blocks.
            final AtomicBoolean done = new AtomicBoolean();
            final CompletableFuture<Void> publishing = CompletableFuture.runAsync(() -> {
                try {
                    while (!done.get()) {
                        peer.command("store kv_event_base.json");
                        Thread.sleep(200);
                    }
                } catch (final Exception ex) {
                    throw new IllegalStateException(ex);
                }
            });
            final List<String> lines = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8)
                .lines().toList();
            assertTrue(client.waitFor(30, TimeUnit.SECONDS), "the client ends");
            done.set(true);
            publishing.get(10, TimeUnit.SECONDS);
            assertEquals(List.of(
                "register 200 {\"instance_id\": \"engine-1\", \"status\": \"registered successfully\"}",
                "query 200 {\"tenant-a\": {\"engine-1\": {\"CPU\": 400, \"DISK\": 400, \"DP\": {\"0\": 400}, "
                    + "\"GPU\": 400, \"longest_matched\": 400}}}",
                "unknown-tenant 200 {}",
                "unregister 200 {\"removed_instances\": [\"engine-1|tenant-a|0\"], "
                    + "\"status\": \"unregistered successfully\"}",
                "again 404 service not found: engine-1|tenant-a|0"), lines);

            // The Dynamo paths of the same daemon answer in Dynamo's shapes.
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            final String register = "{\"instance_id\":\"engine-1\",\"endpoint\":\"" + peer.endpoint
                + "\",\"modelname\":\"" + base.model() + "\",\"type\":\"vLLM\",\"tenant_id\":\"tenant-a\"}";
            assertEquals(201, http.post("/register", register).status());
            final HttpApiClient.Reply again = http.post("/mooncake/register", register);
            assertEquals(200, again.status(), "Mooncake's register is idempotent: " + again.body());
            assertEquals(409, http.post("/register", register).status(), "Dynamo's is not");
            final String query = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), 400) + ",\"model\":\""
                + base.model() + "\",\"tenant_id\":\"tenant-a\"}";
            IndexHttpApiTest.await("the blocks again", () -> {
                peer.command("store kv_event_base.json");
                return http.post("/query", query).body().startsWith("{\"scores\":{\"engine-1\":{\"0\":400}}");
            });
            assertEquals("{\"tenant-a\":{}}", http.post("/mooncake/query", query.replace("}",
                ",\"instance_id\":\"engine-2\"}")).body(), "instance_id filters Mooncake's answer");
            assertEquals(404, http.post("/query", query.replace("tenant-a", "nobody")).status(),
                "Dynamo's unknown group is 404");
            assertEquals(404, http.post("/mooncake/workers", "{}").status(), "only Mooncake's four endpoints");
        }
    }
}
