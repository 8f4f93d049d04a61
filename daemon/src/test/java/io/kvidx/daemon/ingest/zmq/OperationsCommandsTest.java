package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.json.MiniJson;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.lifecycle.ChildProcesses;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.MODEL;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An operator's tools read a running daemon's cell from other processes, through the shared files only:
 * {@code kvidx status --json} (pods, fill, writer), {@code kvidx counters} (no Aeron) and {@code kvidx errors}
 * (one entry per problem and pod, counting recurrences), while a real Python publisher feeds the daemon.
 */
@Timeout(120)
class OperationsCommandsTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        ChildProcesses.requirePython();
    }

    @Test
    @SuppressWarnings("unchecked")
    void shouldShowPodsCountersAndErrorsFromAnotherProcess() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String pod = "ops-pod";
        try (PythonPublisherTest.Peer peer =
                 new PythonPublisherTest.Peer("kv@" + pod + "@" + MODEL, "map", "new", "uint")) {
            // No replay socket: a lost batch leaves the pod suspect, which the status shows.
            final DaemonContext ctx = new DaemonContext().dir(dir).cell("ops").shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, null));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("ops"))) {
                while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
                    peer.command("ping");
                    Thread.sleep(20);
                }
                peer.command("store kv_event_base.json");
                await("depth 25", () -> depth(reader, pod, base, null) == 25);
                for (int i = 0; i < 3; i++) {
                    peer.command("garbage");
                }
                await("3 decode errors", () -> daemon.counters().value(CounterType.DECODE_ERRORS) == 3);

                final Map<String, Object> status = (Map<String, Object>) MiniJson.parse(
                    run("status", "--dir", dir.toString(), "--cell", "ops", "--json"));
                final Map<String, Object> writer = (Map<String, Object>) status.get("writer");
                assertEquals(ProcessHandle.current().pid(), ((Number) writer.get("pid")).longValue());
                assertEquals(Boolean.TRUE, writer.get("running"));
                assertEquals("3.1.0", status.get("layout").toString().substring(0, 2) + "1.0",
                    "layout " + status.get("layout"));
                final Map<String, Object> index = (Map<String, Object>) status.get("index");
                assertEquals(25L, ((Number) index.get("entries")).longValue());
                final List<Object> pods = (List<Object>) status.get("pods");
                assertEquals(1, pods.size(), status.toString());
                final Map<String, Object> row = (Map<String, Object>) pods.get(0);
                assertEquals(pod, row.get("id"));
                assertEquals(0L, ((Number) row.get("slot")).longValue());
                assertEquals(1L, ((Number) row.get("generation")).longValue());
                assertEquals(Boolean.TRUE, row.get("alive"));
                assertEquals(Boolean.FALSE, row.get("suspect"));
                assertEquals(25L, ((Number) row.get("blocks")).longValue());
                assertTrue(((Number) row.get("events")).longValue() >= 1, row.toString());
                assertTrue(((Number) row.get("last_event_age_ms")).longValue() >= 0, row.toString());
                final Map<String, Object> counters = (Map<String, Object>) status.get("counters");
                assertEquals(25L, ((Number) counters.get("blocks_stored")).longValue());

                final String table = run("status", "--dir", dir.toString(), "--cell", "ops");
                assertTrue(table.lines().anyMatch(l -> l.startsWith(pod) && l.contains(" alive ")
                    && l.contains(" 25 ")), table);

                final String counterLines = run("counters", "--dir", dir.toString(), "--cell", "ops");
                assertTrue(counterLines.lines().anyMatch(l -> l.endsWith(CounterType.BLOCKS_STORED.label())
                    && l.contains(" 25 - ")), counterLines);

                final String errors = run("errors", "--dir", dir.toString(), "--cell", "ops");
                assertTrue(errors.lines().anyMatch(l -> l.contains("malformed vLLM batch dropped")
                    && l.strip().startsWith("3 x")), errors);

                peer.command("lose ping");
                peer.command("ping");
                await("the gap's replay failure", () -> daemon.counters().value(CounterType.REPLAY_FAILURES) >= 1);
                final String suspect = run("status", "--dir", dir.toString(), "--cell", "ops");
                assertTrue(suspect.lines().anyMatch(l -> l.startsWith(pod) && l.contains(" alive,suspect ")),
                    suspect);
                final Map<String, Object> again = (Map<String, Object>) MiniJson.parse(
                    run("status", "--dir", dir.toString(), "--cell", "ops", "--json"));
                assertEquals(Boolean.TRUE, ((Map<String, Object>) ((List<Object>) again.get("pods")).get(0))
                    .get("suspect"), again.toString());
            }
            // The error log outlives the daemon (its files stay in the cell until the next daemon starts).
            final String after = run("errors", "--dir", dir.toString(), "--cell", "ops");
            assertTrue(after.contains("malformed vLLM batch dropped"), after);
        }
    }

    @Test
    void shouldServePrometheusMetricsThatPromtoolAccepts() throws Exception {
        assertTrue(Files.isExecutable(PROMTOOL) || System.getenv("CI") == null,
            "CI is set and promtool is missing (apt-get install -y prometheus; .ci/run installs it)");
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(PROMTOOL),
            "skipped locally: promtool (Debian package prometheus) is needed");
        final Capture base = Capture.load("kv_event_base.json");
        final String pod = "metrics-pod";
        try (PythonPublisherTest.Peer peer =
                 new PythonPublisherTest.Peer("kv@" + pod + "@" + MODEL, "array", "old", "uint")) {
            final DaemonContext ctx = new DaemonContext().dir(dir).cell("m").shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.serving().metrics("127.0.0.1:0");
            ctx.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, peer.replayEndpoint));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("m"))) {
                while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
                    peer.command("ping");
                    Thread.sleep(20);
                }
                peer.command("store kv_event_base.json");
                await("depth 25", () -> depth(reader, pod, base, null) == 25);
                peer.command("remove kv_event_base.json 20 25");
                await("depth 20", () -> depth(reader, pod, base, null) == 20);

                final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
                final HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(
                    "http://127.0.0.1:" + daemon.metricsPort() + "/metrics")).timeout(Duration.ofSeconds(10))
                    .build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(200, response.statusCode());
                final String body = response.body();
                final List<String> lines = body.lines().toList();
                assertTrue(lines.contains("kvidx_blocks_stored_total 25.0"), body);
                assertTrue(lines.contains("kvidx_blocks_removed_total 5.0"), body);
                assertTrue(lines.contains("kvidx_pods_alive 1.0"), body);
                assertTrue(lines.contains("kvidx_pod_blocks{pod=\"" + pod + "\",slot=\"0\"} 20.0"), body);
                assertTrue(lines.contains("kvidx_index_entries 25.0") || lines.contains("kvidx_index_entries 20.0"),
                    body);
                for (final String stage : List.of("ingest", "queue", "apply")) {
                    assertTrue(lines.stream().anyMatch(l -> l.startsWith("kvidx_batch_" + stage + "_seconds_count ")
                        && Double.parseDouble(l.substring(l.indexOf(' ') + 1)) >= 2), stage + ": " + body);
                }
                assertTrue(lines.stream().anyMatch(l -> l.startsWith("kvidx_event_to_visible_seconds_count ")
                    && Double.parseDouble(l.substring(l.indexOf(' ') + 1)) >= 2), body);
                assertTrue(lines.stream().anyMatch(l -> l.startsWith("kvidx_writer_queue_bytes{writer=\"0\"}")),
                    body);

                final Process promtool = new ProcessBuilder(PROMTOOL.toString(), "check", "metrics")
                    .redirectErrorStream(true).start();
                try (var in = promtool.getOutputStream()) {
                    in.write(body.getBytes(StandardCharsets.UTF_8));
                }
                final String verdict = new String(promtool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(promtool.waitFor(30, TimeUnit.SECONDS), "promtool hung");
                assertEquals(0, promtool.exitValue(), "promtool check metrics: " + verdict);
            }
        }
    }

    private static final Path PROMTOOL = Path.of("/usr/bin/promtool");

    private static String run(final String... args) throws Exception {
        final List<String> command = new ArrayList<>(ChildProcesses.kvidx(args));
        final Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        process.getInputStream().transferTo(out);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "kvidx " + String.join(" ", args) + " hung");
        final String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, process.exitValue(), "kvidx " + String.join(" ", args) + ": " + text);
        return text;
    }
}
