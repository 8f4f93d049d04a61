package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.lifecycle.ChildProcesses;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.MODEL;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A real vLLM-format publisher in Python (pyzmq + msgpack, as vLLM itself) in its own process, feeding the real
 * daemon over loopback TCP: both event shapes, both replay framings, bin and uint64 hashes; removals, clears,
 * a lost message recovered by replay, garbage, and a publisher restart.
 */
@Timeout(90)
class PythonPublisherTest {
    static final Path PYTHON = Path.of("/usr/bin/python3");
    static final Path SCRIPT = Path.of("src/test/python/vllm_publisher.py");

    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        ChildProcesses.requirePython();
    }

    /** The Python peer, driven line by line. */
    static final class Peer implements AutoCloseable {
        final Process process;
        final BufferedReader out;
        final Writer in;
        final String endpoint;
        final String replayEndpoint;

        Peer(final String topic, final String shape, final String framing, final String hashes) throws IOException {
            process = new ProcessBuilder(PYTHON.toString(), SCRIPT.toString(), "--topic", topic, "--shape", shape,
                "--framing", framing, "--hashes", hashes, "--captures", Capture.sharedDir().toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            final String ready = out.readLine();
            assertTrue(ready != null && ready.startsWith("ready "), "publisher did not start: " + ready);
            final String[] parts = ready.split(" ");
            endpoint = parts[1];
            replayEndpoint = parts[2];
        }

        String command(final String line) throws IOException {
            in.write(line + "\n");
            in.flush();
            final String answer = out.readLine();
            assertTrue(answer != null && answer.startsWith("ok"), line + " -> " + answer);
            return answer;
        }

        @Override
        public void close() throws IOException {
            try {
                in.write("quit\n");
                in.flush();
            } catch (final IOException ignored) {
                // already gone
            }
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (final InterruptedException ex) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    @ParameterizedTest(name = "{0} events, {1} replay framing, {2} hashes")
    @CsvSource({"array, old, uint", "map, new, bin", "map, old, uint", "array, new, bin"})
    void shouldIndexWhatARealVllmFormatPublisherSends(final String shape, final String framing, final String hashes)
        throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String pod = "py-" + shape + "-" + framing;
        try (Peer peer = new Peer("kv@" + pod + "@" + MODEL, shape, framing, hashes)) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, peer.replayEndpoint));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
                    peer.command("ping");
                    Thread.sleep(20);
                }
                peer.command("store kv_event_base.json");
                await("depth 25", () -> depth(reader, pod, base, null) == 25);
                assertEquals(MODEL, podInfoModel(reader, pod));

                peer.command("remove kv_event_base.json 15 25");
                await("depth 15", () -> depth(reader, pod, base, null) == 15);

                peer.command("lose remove kv_event_base.json 5 15");
                peer.command("ping");
                await("depth 5 after replay", () -> depth(reader, pod, base, null) == 5);

                peer.command("garbage");
                peer.command("store kv_event_base.json");
                await("depth 25 again", () -> depth(reader, pod, base, null) == 25);

                peer.command("clear");
                await("depth 0 after clear", () -> depth(reader, pod, base, null) == 0);

                peer.command("store kv_event_base.json");
                await("depth 25 before restart", () -> depth(reader, pod, base, null) == 25);
                peer.command("restart");
                peer.command("ping");
                await("cleared by restart", () -> depth(reader, pod, base, null) == 0);
                peer.command("store kv_event_base.json");
                await("depth 25 after restart", () -> depth(reader, pod, base, null) == 25);

                final var c = daemon.counters();
                assertEquals(1, c.value(CounterType.SEQUENCE_GAPS));
                assertEquals(1, c.value(CounterType.SEQUENCE_RESETS));
                assertEquals(1, c.value(CounterType.DECODE_ERRORS));
                assertEquals(0, c.value(CounterType.REPLAY_FAILURES));
                assertEquals(List.of(), List.of(c.value(CounterType.FRAMING_ERRORS),
                    c.value(CounterType.EVENTS_DROPPED)).stream().filter(v -> v != 0).toList());
            }
        }
    }

    private static String podInfoModel(final IndexReader reader, final String pod) {
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            if (reader.isAlive(slot) && pod.equals(reader.pod(slot).podId())) {
                return reader.pod(slot).model();
            }
        }
        return null;
    }
}
