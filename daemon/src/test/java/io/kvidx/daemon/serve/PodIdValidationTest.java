package io.kvidx.daemon.serve;

import io.kvidx.daemon.cli.TransportOptionsAccess;
import io.kvidx.daemon.config.DaemonConfigFile;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static io.kvidx.daemon.serve.IndexHttpApiTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One pod id rule wherever a pod id enters the daemon (issue 35): an API registration whose instance id holds a
 * {@code #} (which would collide with a data-parallel rank id: "7#1" is instance 7's rank 1), a character outside the
 * documented set, or more bytes than the pod table holds is refused with 400 and the reason; a configured pod (flag,
 * YAML) outside the rule stops the start; a topic on the bound socket naming an invalid pod id is dropped and counted,
 * never registered, while a valid topic beside it is indexed. Real daemon, real HTTP client, real ZeroMQ PUB.
 */
@Timeout(60)
class PodIdValidationTest {
    @TempDir
    Path dir;

    @Test
    void shouldRefuseInvalidInstanceIdsAtRegistrationSayingWhy() throws Exception {
        try (KvidxDaemon daemon = KvidxDaemon.start(HttpApiClient.daemonContext(dir))) {
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            final HttpApiClient.Reply rank = http.post("/register", register("\"7#1\""));
            assertEquals(400, rank.status(), rank.body());
            assertTrue(rank.body().contains("\"code\":\"invalid_field\""), rank.body());
            assertTrue(rank.body().contains("contains '#'") && rank.body().contains("rank 1 of instance 7")
                && rank.body().contains("dp_rank"), rank.body());
            for (final String bad : new String[] {"\"a/b\"", "\"a b\"", "\"x@y\"", "\"caf\\u00e9\"", "\"a\\nb\"",
                "\"" + "p".repeat(113) + "\"", "\"\""}) {
                final HttpApiClient.Reply r = http.post("/register", register(bad));
                assertEquals(400, r.status(), bad + ": " + r.body());
            }
            // The longest instance id whose rank ids still fit is taken; a rank that makes it too long is not.
            final String longest = "p".repeat(107);
            assertEquals(201, http.post("/register", register("\"" + longest + "\"").replace("}",
                ",\"dp_rank\":1024}")).status());
            assertEquals(400, http.post("/register", register("\"" + "q".repeat(108) + "\"").replace("}",
                ",\"dp_rank\":1024}")).status());
            assertEquals(201, http.post("/register", register("\"10.0.0.7:8000\"")).status());
            assertEquals(201, http.post("/register", register("7")).status());
            final String workers = http.get("/workers").body();
            assertTrue(workers.contains("\"instance_id\":7,") && workers.contains("\"10.0.0.7:8000\"")
                && workers.contains(longest) && !workers.contains("#") && !workers.contains("a/b"), workers);
        }
    }

    @Test
    void shouldRefuseInvalidConfiguredPods() {
        final IllegalArgumentException flag = assertThrows(IllegalArgumentException.class,
            () -> TransportOptionsAccess.parseZmq("pod/1=tcp://127.0.0.1:5557"));
        assertTrue(flag.getMessage().startsWith("--zmq pod/1=tcp://127.0.0.1:5557: ")
            && flag.getMessage().contains("'/'"), flag.getMessage());
        assertEquals("7#1", TransportOptionsAccess.parseZmq("7#1=tcp://127.0.0.1:5557").podId(),
            "a rank id names a configured rank");
        final IllegalArgumentException yaml = assertThrows(IllegalArgumentException.class,
            () -> DaemonConfigFile.parse("zmq:\n  - endpoint: tcp://127.0.0.1:5557\n    pod: '7#1#2'\n",
                new DaemonContext(), "kvidx.yaml"));
        assertTrue(yaml.getMessage().startsWith("kvidx.yaml: zmq.pod: ") && yaml.getMessage().contains("'#'"),
            yaml.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ZmqEndpoint("tcp://127.0.0.1:5557", "a b", null, null));
    }

    @Test
    void shouldDropAndCountTopicsOfTheBoundSocketThatNameInvalidPodIds() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String model = base.model();
        final byte[] store = new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
            .stored(base.blockHashes(), null, base.tokenIds(), 16, null, "GPU").batch(0);
        final int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        final String bind = "tcp://127.0.0.1:" + port;
        final DaemonContext ctx = HttpApiClient.daemonContext(dir);
        ctx.zmq().bind(bind);
        final String[] invalid = {"evil/../x", "7#1#2", "a b", "h\u00e9", "x".repeat(113), "a?b=c"};
        final String query = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), base.tokenIds().length)
            + ",\"model_name\":\"" + model + "\"}";
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx); ZContext zmq = new ZContext(1);
            ZMQ.Socket pub = zmq.createSocket(SocketType.PUB)) {
            pub.setLinger(0);
            pub.connect(bind);
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            final long[] seq = new long[invalid.length + 1];
            // Slow joiner: publish until the valid topic's pod answers.
            await("the valid topic's pod indexed", () -> {
                send(pub, "kv@10.0.0.2:8000@" + model, seq[invalid.length]++, store);
                for (int i = 0; i < invalid.length; i++) {
                    send(pub, "kv@" + invalid[i] + "@" + model, seq[i]++, store);
                }
                return http.post("/query", query).body().contains("\"10.0.0.2:8000\":{\"0\":400}");
            });
            await("every invalid topic counted", () -> {
                for (int i = 0; i < invalid.length; i++) {
                    send(pub, "kv@" + invalid[i] + "@" + model, seq[i]++, store);
                }
                return daemon.counters().value(CounterType.INVALID_POD_IDS) >= 2L * invalid.length;
            });
            final String answer = http.post("/query", query).body();
            assertTrue(answer.startsWith("{\"scores\":{\"10.0.0.2:8000\":{\"0\":400}},"), answer);
            final String workers = http.get("/workers").body();
            assertEquals("[{\"instance_id\":\"10.0.0.2:8000\",\"source\":\"events\",\"status\":\"active\","
                + "\"endpoints\":{},\"listeners\":{}}]", workers);
            // A pod no registration names serves its topic's model, in the default group.
            assertEquals(workers, http.get("/workers?model_name=" + java.net.URLEncoder.encode(model,
                java.nio.charset.StandardCharsets.UTF_8) + "&routing_group=default").body());
            assertEquals("[]", http.get("/workers?model_name=other").body());
            assertEquals("[]", http.get("/workers?routing_group=g2").body());
            assertEquals(1, daemon.counters().value(CounterType.PODS_ALIVE));
            assertEquals(0, daemon.counters().value(CounterType.FRAMING_ERRORS));
            final String log = daemon.errors().dump();
            assertTrue(log.contains("is not a valid pod id"), log);
            assertFalse(log.contains("x".repeat(65)), "the stranger's id is cut in the log");
        }
    }

    private static String register(final String instanceJson) {
        return "{\"instance_id\":" + instanceJson + ",\"endpoint\":\"tcp://127.0.0.1:9\",\"model_name\":\"m\"}";
    }

    private static void send(final ZMQ.Socket pub, final String topic, final long seq, final byte[] payload) {
        pub.sendMore(topic.getBytes(StandardCharsets.UTF_8));
        pub.sendMore(ByteBuffer.allocate(8).putLong(seq).array());
        pub.send(payload);
    }
}
