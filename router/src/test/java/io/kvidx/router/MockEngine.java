package io.kvidx.router;

import io.kvidx.client.json.MiniJson;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * One mock vLLM engine process ({@code router/mock-engine/kvidx_mock_engine.py}, its path in the system property
 * {@code kvidx.mockEngine}) on free loopback ports: HTTP, the KV event PUB socket and the replay socket. Started with
 * {@code --verbose} (one line per request in its log). {@link #kill()} sends SIGKILL; {@link #restart()} starts it
 * again on the same three ports.
 */
final class MockEngine implements AutoCloseable {
    /** Debian's interpreter (python3-zmq, python3-msgpack, python3-xxhash): the one on PATH may not see them. */
    static final Path PYTHON = Path.of("/usr/bin/python3");
    static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(2)).build();

    final String podId;
    final String model;
    private final Path work;
    private final List<String> options;
    private final Path log;
    private Process process;
    private int port;
    private String zmqPub;
    private String zmqReplay;

    private MockEngine(final Path work, final String podId, final String model, final List<String> options) {
        this.work = work;
        this.podId = podId;
        this.model = model;
        this.options = options;
        this.log = work.resolve("mock-" + podId + ".log");
    }

    /**
     * Starts an engine and waits for its ready file.
     *
     * @param work    a directory for its ready file and log.
     * @param podId   its pod id ({@code x-kvidx-mock-pod}, the engine id it gives decode pods).
     * @param model   the model it serves.
     * @param options more mock options ({@code --decode-ms-per-token 20}, ...).
     * @return the running engine.
     */
    static MockEngine start(final Path work, final String podId, final String model, final String... options)
        throws IOException, InterruptedException {
        final MockEngine e = new MockEngine(work, podId, model, List.of(options));
        e.launch("0", "tcp://127.0.0.1:*", "tcp://127.0.0.1:*");
        return e;
    }

    /** Skips the test (locally) or fails it (when {@code CI} is set) unless the mock engine can run here. */
    static void require() throws IOException, InterruptedException {
        boolean ok = Files.isExecutable(PYTHON) && System.getProperty("kvidx.mockEngine") != null;
        if (ok) {
            final Process p = new ProcessBuilder(PYTHON.toString(), "-c", "import zmq, msgpack, xxhash")
                .redirectErrorStream(true).start();
            ok = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
            p.destroyForcibly();
        }
        final String why = "/usr/bin/python3 with python3-zmq, python3-msgpack and python3-xxhash is needed, and the"
            + " kvidx.mockEngine system property (set by router/pom.xml)";
        if (!ok && System.getenv("CI") != null) {
            throw new AssertionError("CI is set and " + why);
        }
        assumeTrue(ok, "skipped: " + why);
    }

    private void launch(final String httpPort, final String pub, final String replay) throws IOException,
        InterruptedException {
        final Path ready = work.resolve("mock-" + podId + ".ready.json");
        Files.deleteIfExists(ready);
        final List<String> cmd = new ArrayList<>(Arrays.asList(PYTHON.toString(),
            System.getProperty("kvidx.mockEngine"), "--port", httpPort, "--zmq-pub", pub, "--zmq-replay", replay,
            "--model", model, "--pod-id", podId, "--ready-file", ready.toString(), "--verbose"));
        cmd.addAll(options);
        process = new ProcessBuilder(cmd).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!Files.exists(ready)) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                process.destroyForcibly();
                throw new AssertionError("mock engine " + podId + " did not start: " + tail());
            }
            Thread.sleep(10);
        }
        @SuppressWarnings("unchecked")
        final Map<String, Object> info = (Map<String, Object>) MiniJson.parse(Files.readString(ready));
        port = ((Number) info.get("port")).intValue();
        zmqPub = (String) info.get("zmq_pub");
        zmqReplay = (String) info.get("zmq_replay");
    }

    /** Starts the engine again, on the same HTTP, PUB and replay ports (after {@link #kill()}). */
    void restart() throws IOException, InterruptedException {
        if (process.isAlive()) {
            throw new IllegalStateException("still running");
        }
        launch(Integer.toString(port), zmqPub, zmqReplay);
    }

    /** SIGKILL, and waits for the process to end. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError("mock engine " + podId + " still alive 10 s after SIGKILL");
        }
    }

    /** @return its base URL. */
    String url() {
        return "http://127.0.0.1:" + port;
    }

    int port() {
        return port;
    }

    /** @return its KV event PUB endpoint. */
    String zmqPub() {
        return zmqPub;
    }

    /** @return its replay endpoint. */
    String zmqReplay() {
        return zmqReplay;
    }

    /**
     * @param name a metric of its {@code /metrics} page (every sample is labelled with the engine and model).
     * @return the sample's value.
     */
    double metric(final String name) throws IOException, InterruptedException {
        final HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url() + "/metrics"))
            .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString());
        return Metrics.value(r.body(), name);
    }

    /**
     * Sends a request to the engine itself (not through a router).
     *
     * @param path the path.
     * @param json the body.
     * @return the answer.
     */
    HttpResponse<String> post(final String path, final String json) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create(url() + path)).timeout(Duration.ofSeconds(10))
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** @return the last lines of its log (failure messages). */
    String tail() {
        try {
            final List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (final IOException ex) {
            return "<no log: " + ex + ">";
        }
    }

    /** @return its whole log. */
    String log() throws IOException {
        return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
    }

    @Override
    public void close() {
        if (process != null && process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            } catch (final InterruptedException ex) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
