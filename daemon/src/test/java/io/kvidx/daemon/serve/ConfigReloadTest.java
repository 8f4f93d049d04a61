package io.kvidx.daemon.serve;

import io.kvidx.daemon.config.DaemonConfigFile;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static io.kvidx.daemon.serve.IndexHttpApiTest.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The YAML file's subscriptions follow the file while the daemon runs: an engine added to it is subscribed, one
 * removed from it is taken down, through the same membership table as {@code POST /register}; registrations made
 * through the API are left alone.
 */
@Timeout(120)
class ConfigReloadTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    @Test
    void shouldFollowTheConfigFilesSubscriptions() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String model = base.model();
        final String query = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), base.tokenIds().length)
            + ",\"model_name\":\"" + model + "\"}";
        final Path yaml = dir.resolve("kvidx.yaml");
        try (PyPeer a = new PyPeer(PyPeer.VLLM, "--topic", "");
            PyPeer b = new PyPeer(PyPeer.VLLM, "--topic", "")) {
            Files.writeString(yaml, entry(a, "pod-a", model));
            final DaemonContext ctx = HttpApiClient.daemonContext(dir);
            DaemonConfigFile.load(yaml, ctx);
            ctx.configReload(new DaemonContext.ConfigReload(yaml,
                () -> DaemonConfigFile.load(yaml, new DaemonContext()).conclude().zmq().endpoints()));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx)) {
                final HttpApiClient http = new HttpApiClient(daemon.httpPort());
                a.command("store kv_event_base.json");
                b.command("store kv_event_base.json");
                await("pod-a answers", () -> {
                    a.command("ping");
                    return http.post("/query", query).body().contains("\"scores\":{\"pod-a\":{\"0\":400}}");
                });
                assertTrue(http.post("/register", "{\"instance_id\":\"api-1\",\"endpoint\":\"tcp://127.0.0.1:9\","
                    + "\"model_name\":\"" + model + "\"}").status() == 201);

                Files.writeString(yaml, entry(b, "pod-b", model));
                await("pod-b replaces pod-a", () -> {
                    b.command("ping");
                    return http.post("/query", query).body().contains("\"scores\":{\"pod-b\":{\"0\":400}}");
                });
                final String workers = http.get("/workers").body();
                assertTrue(workers.contains("\"instance_id\":\"api-1\"") && workers.contains("\"pod-b\"")
                    && !workers.contains("\"instance_id\":\"pod-a\",\"source\":\"zmq\""), workers);
            }
        }
    }

    private static String entry(final PyPeer peer, final String pod, final String model) {
        return "zmq:\n  - {endpoint: '" + peer.endpoint + "', pod: " + pod + ", model: '" + model + "', replay: '"
            + peer.replayEndpoint + "'}\n";
    }
}
