package io.kvidx.daemon.lifecycle;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The Python vLLM-format publisher (src/test/python/vllm_publisher.py) in its own process, driven line by line with
 * a bound on every answer. Its stderr goes to a log file.
 */
final class PythonPublisher implements AutoCloseable {
    private final Process process;
    private final BufferedReader out;
    private final Writer in;
    private final ExecutorService answers = Executors.newSingleThreadExecutor(r -> {
        final Thread t = new Thread(r, "python-publisher-answers");
        t.setDaemon(true);
        return t;
    });
    final String endpoint;
    final String replayEndpoint;

    /**
     * @param topic  topic of the single-topic commands (the stream uses one topic per pod).
     * @param buffer batches kept for replay.
     * @param log    where the publisher's stderr goes.
     */
    PythonPublisher(final String topic, final int buffer, final Path log) throws Exception {
        this(topic, buffer, log, "map");
    }

    /**
     * @param topic  topic of the single-topic commands (the stream uses one topic per pod).
     * @param buffer batches kept for replay.
     * @param log    where the publisher's stderr goes.
     * @param shape  event shape: "map" (current vLLM) or "array" (before mid-2026).
     */
    PythonPublisher(final String topic, final int buffer, final Path log, final String shape) throws Exception {
        process = new ProcessBuilder(ChildProcesses.PYTHON.toString(), ChildProcesses.PUBLISHER.toString(), "--topic",
            topic, "--captures", ChildProcesses.CAPTURES.toString(), "--buffer", Integer.toString(buffer), "--shape",
            shape).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        final String ready = readLine(30_000);
        if (ready == null || !ready.startsWith("ready ")) {
            ChildProcesses.destroy(process);
            throw new AssertionError("publisher did not start: " + ready + "; " + ChildProcesses.tail(log, 20));
        }
        final String[] parts = ready.split(" ");
        endpoint = parts[1];
        replayEndpoint = parts[2];
    }

    private String readLine(final long timeoutMs) throws Exception {
        final Future<String> line = answers.submit(out::readLine);
        try {
            return line.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (final TimeoutException ex) {
            line.cancel(true);
            throw new AssertionError("no answer from the Python publisher within " + timeoutMs + " ms");
        }
    }

    /**
     * Sends one command and returns its answer, which must start with "ok".
     *
     * @param line      the command.
     * @param timeoutMs bound on the answer.
     * @return the answer.
     */
    String command(final String line, final long timeoutMs) throws Exception {
        in.write(line + "\n");
        in.flush();
        final String answer = readLine(timeoutMs);
        if (answer == null || !answer.startsWith("ok")) {
            throw new AssertionError("publisher: " + line + " -> " + answer);
        }
        return answer;
    }

    /**
     * @return the publisher's pid.
     */
    long pid() {
        return process.pid();
    }

    @Override
    public void close() throws Exception {
        try {
            in.write("quit\n");
            in.flush();
        } catch (final IOException ignored) {
            // already gone
        }
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            ChildProcesses.destroy(process);
        }
        answers.shutdownNow();
    }
}
