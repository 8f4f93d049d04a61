package io.kvidx.daemon.serve;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The daemon's API as a shell script drives it: the real {@code curl} binary, one process per request, against a real
 * daemon on loopback with a bearer token, an admin token, a registration bound and a host allow-list, for each
 * endpoint shape of issue 35: Mooncake's register, query and unregister under {@code /mooncake} (with a real ZeroMQ
 * publisher's blocks), {@code /query_by_hash} with kvidx {@code router_keys} and its refusal of the peers' hashes on a
 * default cell, {@code /dump?format=dynamo} and the peer list (501), the token (401 without, {@code /health} open),
 * the admin token of {@code /dump} and {@code /metrics}, 415 without the JSON content type, 409 for the same
 * registration again, 429 {@code too_many_engines} and 403 {@code endpoint_not_allowed}.
 */
@Timeout(60)
class CurlClientTest {
    private static final Path CURL = Path.of("/usr/bin/curl");
    private static final String TOKEN = "kvidx-curl-token-4c1d7e9a";
    private static final String ADMIN = "kvidx-curl-admin-b8e2f05c";
    private static final String JSON = "Content-Type: application/json";

    @TempDir
    Path dir;

    /** A response as curl saw it. */
    private record Reply(int status, String body) {
        boolean has(final String text) {
            return body.contains(text);
        }
    }

    @Test
    void shouldAnswerEveryNewEndpointShapeToCurl() throws Exception {
        assertTrue(Files.isExecutable(CURL), "curl is installed at " + CURL);
        final Capture base = Capture.load("kv_event_base.json");
        final String model = base.model();
        final byte[] store = new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
            .stored(base.blockHashes(), null, base.tokenIds(), 16, null, "GPU").batch(0);
        final Path token = dir.resolve("token");
        Files.writeString(token, TOKEN + "\n");
        final Path admin = dir.resolve("admin");
        Files.writeString(admin, ADMIN);
        final DaemonContext ctx = HttpApiClient.daemonContext(dir.resolve("cell"));
        ctx.serving().httpTokenFile(token.toString()).httpAdminTokenFile(admin.toString()).httpMaxRegistrations(2)
            .addHttpRegisterHost("127.0.0.0/8");
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx); ZContext zmq = new ZContext(1);
            ZMQ.Socket pub = zmq.createSocket(SocketType.PUB)) {
            pub.setLinger(0);
            pub.bind("tcp://127.0.0.1:*");
            final String endpoint = pub.getLastEndpoint();
            final String base0 = "http://127.0.0.1:" + daemon.httpPort();

            // The token: /health is open to probes, everything else needs it.
            final Reply health = curl(base0 + "/health");
            assertEquals(200, health.status, health.body);
            assertTrue(health.has("\"status\":\"ok\""), health.body);
            final Reply none = curl(base0 + "/workers");
            assertEquals(401, none.status, none.body);
            assertTrue(none.has("\"code\":\"unauthorized\""), none.body);
            assertEquals(401, curl(base0 + "/workers", "-H", "Authorization: Bearer " + TOKEN + "x").status);
            final Reply workers = curl(base0 + "/workers", auth(TOKEN));
            assertEquals(200, workers.status, workers.body);
            assertEquals("[]", workers.body);

            // The admin token opens /dump and /metrics; the query token does not.
            assertEquals(401, curl(base0 + "/dump", auth(TOKEN)).status);
            assertEquals(401, curl(base0 + "/metrics", auth(TOKEN)).status);
            final Path snapshot = dir.resolve("cell.snapshot");
            final Reply dump = curl(base0 + "/dump", "-o", snapshot.toString(), auth(ADMIN));
            assertEquals(200, dump.status);
            assertTrue(Files.size(snapshot) > 0, "a snapshot was written");
            final Reply metrics = curl(base0 + "/metrics", auth(ADMIN));
            assertEquals(200, metrics.status);
            assertTrue(metrics.has("kvidx_http_unauthorized_total 4.0"), metrics.body);
            final Reply dynamo = curl(base0 + "/dump?format=dynamo", auth(ADMIN));
            assertEquals(501, dynamo.status, dynamo.body);
            assertTrue(dynamo.has("\"code\":\"not_implemented\"") && dynamo.has("tokens_hash"), dynamo.body);

            // The peer list is refused; a POST without the JSON content type is 415 (curl -d sends a form's).
            final Reply peers = curl(base0 + "/peers", auth(TOKEN));
            assertEquals(501, peers.status, peers.body);
            assertTrue(peers.has("\"code\":\"not_implemented\"") && peers.has("--peer"), peers.body);
            assertEquals(501, curl(base0 + "/register_peer", auth(TOKEN), "-H", JSON, "-d", "{}").status);
            final Reply form = curl(base0 + "/query", auth(TOKEN), "-d", "{\"token_ids\":[1,2,3]}");
            assertEquals(415, form.status, form.body);
            assertTrue(form.has("\"code\":\"unsupported_media_type\""), form.body);

            // Registrations: only the allowed hosts (403 first: nothing counted), at most two engines (429).
            final Reply far = post(base0 + "/register", "{\"instance_id\":9,\"endpoint\":\"tcp://10.9.9.9:5557\","
                + "\"model_name\":\"" + model + "\"}");
            assertEquals(403, far.status, far.body);
            assertTrue(far.has("\"code\":\"endpoint_not_allowed\""), far.body);
            final String mooncake = "{\"instance_id\":\"engine-1\",\"endpoint\":\"" + endpoint + "\",\"modelname\":\""
                + model + "\",\"type\":\"vLLM\",\"tenant_id\":\"tenant-a\"}";
            final Reply registered = post(base0 + "/mooncake/register", mooncake);
            assertEquals(200, registered.status, registered.body);
            assertTrue(registered.has("\"status\":\"registered successfully\"")
                && registered.has("\"instance_id\":\"engine-1\""), registered.body);
            final Reply again = post(base0 + "/register", mooncake);
            assertEquals(409, again.status, again.body);
            assertTrue(again.has("\"code\":\"already_registered\""), again.body);
            assertEquals(200, post(base0 + "/mooncake/register", mooncake).status, "Mooncake's is idempotent");
            assertEquals(201, post(base0 + "/register", "{\"instance_id\":2,\"endpoint\":\"tcp://127.0.0.2:45557\","
                + "\"model_name\":\"" + model + "\"}").status);
            final Reply third = post(base0 + "/register", "{\"instance_id\":3,\"endpoint\":\"tcp://127.0.0.3:45557\","
                + "\"model_name\":\"" + model + "\"}");
            assertEquals(429, third.status, third.body);
            assertTrue(third.has("\"code\":\"too_many_engines\""), third.body);

            // Mooncake's query: {tenant: {instance: {longest_matched, GPU, DP, CPU, DISK}}}, once the blocks are in.
            final String query = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), 400) + ",\"model\":\""
                + model + "\",\"tenant_id\":\"tenant-a\"}";
            final long[] seq = {0};
            Reply answer = null;
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (System.nanoTime() < deadline) {
                pub.sendMore(new byte[0]);
                pub.sendMore(ByteBuffer.allocate(8).putLong(seq[0]++).array());
                pub.send(store);
                answer = post(base0 + "/mooncake/query", query);
                if (answer.status != 200 || answer.has("\"engine-1\"")) {
                    break;
                }
                Thread.sleep(100);
            }
            assertEquals(200, answer.status, answer.body);
            assertTrue(answer.body.startsWith("{\"tenant-a\":{\"engine-1\":{") && answer.has("\"longest_matched\":400")
                && answer.has("\"GPU\":400") && answer.has("\"CPU\":400") && answer.has("\"DISK\":400")
                && answer.has("\"DP\":{\"0\":400}"), answer.body);

            // /query_by_hash with kvidx router keys answers as /query; the peers' hashes are refused on this cell.
            final RouterKeyHasher hasher = new RouterKeyHasher(16);
            final long[] keys = new long[25];
            final int n = hasher.keys(RouterKeyHasher.chainSeed(model, null, null), base.tokenIds(), 400, keys);
            final StringBuilder routerKeys = new StringBuilder();
            for (int i = 0; i < n; i++) {
                routerKeys.append(i == 0 ? "" : ",").append(Long.toUnsignedString(keys[i]));
            }
            final Reply byHash = post(base0 + "/query_by_hash", "{\"router_keys\":[" + routerKeys
                + "],\"model_name\":\"" + model + "\",\"routing_group\":\"tenant-a\"}");
            assertEquals(200, byHash.status, byHash.body);
            assertTrue(byHash.body.startsWith("{\"scores\":{\"engine-1\":{\"0\":400}}"), byHash.body);
            final Reply peerHashes = post(base0 + "/query_by_hash", "{\"block_hashes\":[1,2,3],\"model_name\":\""
                + model + "\"}");
            assertEquals(400, peerHashes.status, peerHashes.body);
            assertTrue(peerHashes.has("\"code\":\"wrong_key_scheme\"") && peerHashes.has("--key-scheme"),
                peerHashes.body);

            // Mooncake's unregister names what it removed; a second one finds nothing.
            final String unregister = "{\"instance_id\":\"engine-1\",\"tenant_id\":\"tenant-a\"}";
            final Reply removed = post(base0 + "/mooncake/unregister", unregister);
            assertEquals(200, removed.status, removed.body);
            assertTrue(removed.has("\"removed_instances\":[\"engine-1|tenant-a|0\"]")
                && removed.has("\"status\":\"unregistered successfully\""), removed.body);
            final Reply gone = post(base0 + "/mooncake/unregister", unregister);
            assertEquals(404, gone.status, gone.body);
            assertTrue(gone.has("service not found: engine-1|tenant-a|0"), gone.body);
            assertEquals("{}", post(base0 + "/mooncake/query", query).body,
                "no pod serves the tenant any more: Mooncake's empty answer");
        }
    }

    private static String[] auth(final String token) {
        return new String[] {"-H", "Authorization: Bearer " + token};
    }

    private static Reply post(final String url, final String json) throws Exception {
        return curl(url, auth(TOKEN), "-H", JSON, "--data-binary", json);
    }

    private static Reply curl(final String url, final Object... args) throws Exception {
        final List<String> command = new ArrayList<>(List.of(CURL.toString(), "-sS", "--max-time", "10",
            "--noproxy", "*", "-w", "\n%{http_code}"));
        for (final Object a : args) {
            if (a instanceof String[] several) {
                command.addAll(List.of(several));
            } else {
                command.add((String) a);
            }
        }
        command.add(url);
        final Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(15, TimeUnit.SECONDS), "curl ends");
        assertEquals(0, p.exitValue(), "curl " + command + ": " + out);
        final int nl = out.lastIndexOf('\n');
        return new Reply(Integer.parseInt(out.substring(nl + 1).trim()), out.substring(0, nl));
    }
}
