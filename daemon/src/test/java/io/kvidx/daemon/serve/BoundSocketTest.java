package io.kvidx.daemon.serve;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.nio.file.Path;

import static io.kvidx.daemon.serve.IndexHttpApiTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Engines that connect to the daemon ({@code --zmq-bind}, llm-d's centralized mode): real Python publishers whose
 * PUB sockets connect to the daemon's one bound SUB socket, pods named by their topics (kvidx's
 * {@code kv@<pod>@<model>} and llm-d's {@code kv@<ip>:<port>@<model>}), each topic's sequence tracked on its own (a
 * lost batch of one engine is replayed through its registered replay endpoint; the other engine's stream is not
 * touched).
 */
@Timeout(120)
class BoundSocketTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    @Test
    void shouldIndexEnginesThatConnectByTheirTopics() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String model = base.model();
        final String query = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), base.tokenIds().length)
            + ",\"model_name\":\"" + model + "\"}";
        final int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        final String bind = "tcp://127.0.0.1:" + port;
        final DaemonContext ctx = HttpApiClient.daemonContext(dir);
        ctx.zmq().bind(bind);
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
            PyPeer a = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-x@" + model, "--connect", bind);
            PyPeer b = new PyPeer(PyPeer.VLLM, "--topic", "kv@10.0.0.2:8000@" + model, "--connect", bind)) {
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            // pod-x's replay socket comes from its registration (the registered endpoint itself is never published
            // on: the engine connects instead).
            assertEquals(201, http.post("/register", "{\"instance_id\":\"pod-x\",\"endpoint\":\"tcp://127.0.0.1:9\","
                + "\"replay_endpoint\":\"" + a.replayEndpoint + "\",\"model_name\":\"" + model + "\"}").status());
            await("both connected", () -> {
                a.command("ping");
                b.command("ping");
                return daemon.counters().value(CounterType.MESSAGES_RECEIVED) >= 2;
            });
            a.command("store kv_event_base.json");
            b.command("store kv_event_base.json");
            await("both pods answer", () -> {
                final String body = http.post("/query", query).body();
                return body.contains("\"pod-x\":{\"0\":400}") && body.contains("\"10.0.0.2:8000\":{\"0\":400}");
            });
            // A batch of pod-x lost on the way: the next one shows the gap, replayed through the registration's
            // replay endpoint, while the other engine's sequence is its own.
            a.command("lose remove kv_event_base.json 10 25");
            a.command("ping");
            b.command("remove kv_event_base.json 20 25");
            await("pod-x's gap replayed", () -> {
                final String body = http.post("/query", query).body();
                return body.contains("\"pod-x\":{\"0\":160}") && body.contains("\"10.0.0.2:8000\":{\"0\":320}");
            });
            assertEquals(1, daemon.counters().value(CounterType.SEQUENCE_GAPS));
            assertEquals(0, daemon.counters().value(CounterType.REPLAY_FAILURES));
            final String workers = http.get("/workers").body();
            assertTrue(workers.contains("\"instance_id\":\"10.0.0.2:8000\",\"source\":\"events\""), workers);
        }
    }
}
