package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.ingest.vllm.Capture;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;


/**
 * A Python test publisher (src/test/python: vllm_publisher.py or sglang_publisher.py, pyzmq + msgpack as the
 * engines use) in its own process, driven line by line with a bound on every answer.
 */
public final class PyPeer implements AutoCloseable {
    /** The Debian python3. */
    public static final Path PYTHON = Path.of("/usr/bin/python3");
    /** The vLLM-format publisher. */
    public static final String VLLM = "src/test/python/vllm_publisher.py";
    /** The SGLang-format publisher. */
    public static final String SGLANG = "src/test/python/sglang_publisher.py";

    private final Process process;
    private final BufferedReader out;
    private final Writer in;
    private final ExecutorService answers = Executors.newSingleThreadExecutor(r -> {
        final Thread t = new Thread(r, "py-peer-answers");
        t.setDaemon(true);
        return t;
    });
    /** The publisher's PUB endpoint. */
    public final String endpoint;
    /** Its replay ROUTER endpoint. */
    public final String replayEndpoint;

    /**
     * Skips the calling test when python3 with python3-zmq and python3-msgpack is missing (fails it when CI is set).
     */
    public static void requirePython() throws Exception {
        io.kvidx.daemon.lifecycle.ChildProcesses.requirePython();
    }

    /**
     * @param script {@link #VLLM} or {@link #SGLANG}.
     * @param args   its options (the captures folder is added).
     */
    public PyPeer(final String script, final String... args) throws Exception {
        final List<String> command = new ArrayList<>(List.of(PYTHON.toString(), script, "--captures",
            Capture.sharedDir().toString()));
        command.addAll(List.of(args));
        process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        final String ready = readLine();
        if (ready == null || !ready.startsWith("ready ")) {
            process.destroyForcibly();
            throw new AssertionError("publisher did not start: " + ready);
        }
        final String[] parts = ready.split(" ");
        endpoint = parts[1];
        replayEndpoint = parts[2];
    }

    private String readLine() throws Exception {
        final Future<String> line = answers.submit(out::readLine);
        try {
            return line.get(20, TimeUnit.SECONDS);
        } catch (final TimeoutException ex) {
            line.cancel(true);
            throw new AssertionError("no answer from the Python publisher within 20 s");
        }
    }

    /**
     * @param line a command.
     * @return its answer, which must start with "ok".
     */
    public String command(final String line) throws Exception {
        in.write(line + "\n");
        in.flush();
        final String answer = readLine();
        if (answer == null || !answer.startsWith("ok")) {
            throw new AssertionError("publisher: " + line + " -> " + answer);
        }
        return answer;
    }

    @Override
    public void close() throws Exception {
        try {
            in.write("quit\n");
            in.flush();
        } catch (final IOException ignored) {
            // already gone
        }
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
        answers.shutdownNow();
    }
}
