package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.lifecycle.ChildProcesses;
import io.kvidx.daemon.lifecycle.KvidxDaemon;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What the JetStream tests share: a relay's and a consumer's context (small cells, the HTTP API on a free loopback
 * port), the documents of the Python publisher's random stream, and the {@code scores} a daemon's {@code /query}
 * answers for each of them.
 */
final class StreamFleet {
    static final String MODEL = "Qwen/Qwen3-0.6B";
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();

    private StreamFleet() {
    }

    static DaemonContext base(final Path dir, final String cell) {
        final DaemonContext c = new DaemonContext().dir(dir).cell(cell).shardCount(16).capacityBlocks(16384)
            .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff").writers(1);
        c.zmq().replayTimeoutMs(1_000).checkpointIntervalMs(20);
        c.serving().http("127.0.0.1:0");
        return c;
    }

    /** A relay subscribed to the publisher (pods and model from its topics). */
    static DaemonContext relay(final Path dir, final String cell, final PyPeer peer, final String url) {
        final DaemonContext c = base(dir, cell);
        c.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, peer.replayEndpoint));
        c.jetstream().url(url).role("relay");
        return c;
    }

    /**
     * Waits until the relay received the engine's first messages: the publisher is pinged until one arrives (a
     * ZeroMQ subscription drops what is published before it is joined).
     *
     * @param peer  the engine's Python publisher.
     * @param relay the relay daemon subscribed to it.
     * @throws Exception when it does not happen within 20 s.
     */
    static void awaitSubscribed(final PyPeer peer, final KvidxDaemon relay) throws Exception {
        JetStreamRelayTest.await("the relay subscribed", 20_000, () -> {
            try {
                peer.command("ping");
            } catch (final Exception ex) {
                throw new AssertionError(ex);
            }
            return relay.counters().value(CounterType.MESSAGES_RECEIVED) > 0;
        });
    }

    /** A daemon fed by the stream only. */
    static DaemonContext consumer(final Path dir, final String cell, final String url) {
        final DaemonContext c = base(dir, cell);
        c.jetstream().url(url).role("consumer").snapshotIntervalMs(0);
        return c;
    }

    /**
     * @param docs the stream's documents file (vllm_publisher.py, "stream").
     * @return each document's token ids.
     */
    static List<int[]> documents(final Path docs) throws Exception {
        final List<int[]> all = new ArrayList<>();
        for (final String line : Files.readAllLines(docs)) {
            if (!line.startsWith("doc ")) {
                continue;
            }
            final String[] parts = line.split(" ");
            final String[] ids = parts[3].split(",");
            final int[] tokens = new int[ids.length];
            for (int i = 0; i < ids.length; i++) {
                tokens[i] = Integer.parseInt(ids[i]);
            }
            all.add(tokens);
        }
        return all;
    }

    /**
     * @param port   a daemon's HTTP API port.
     * @param tokens a prompt.
     * @return the {@code scores} object of its {@code /query} answer (each pod's matched tokens).
     */
    static String scores(final int port, final int[] tokens) throws Exception {
        final StringBuilder body = new StringBuilder("{\"token_ids\":[");
        for (int i = 0; i < tokens.length; i++) {
            body.append(i == 0 ? "" : ",").append(tokens[i]);
        }
        body.append("],\"model_name\":\"").append(MODEL).append("\"}");
        HttpResponse<String> r = null;
        // 503 "unavailable": a shard stayed locked past the read bound while the writer applies a burst (a loaded
        // machine); asked again, as a router would.
        for (int attempt = 0; attempt < 50 && (r == null || r.statusCode() == 503); attempt++) {
            if (r != null) {
                Thread.sleep(20);
            }
            r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/query"))
                .timeout(Duration.ofSeconds(10)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(),
                HttpResponse.BodyHandlers.ofString());
        }
        if (r.statusCode() == 404) {
            return "{}"; // no pod serves the model (yet)
        }
        final String text = r.body();
        final int start = text.indexOf("\"scores\":");
        if (r.statusCode() != 200 || start < 0) {
            throw new AssertionError("/query answered " + r.statusCode() + ": " + text);
        }
        int depth = 0;
        final int open = text.indexOf('{', start);
        for (int i = open; i < text.length(); i++) {
            if (text.charAt(i) == '{') {
                depth++;
            } else if (text.charAt(i) == '}' && --depth == 0) {
                return sorted(text.substring(open, i + 1));
            }
        }
        throw new AssertionError("unbalanced /query answer: " + text);
    }

    /** The scores' pods in order (daemons number pods as they come, and answer in slot order). */
    private static String sorted(final String scores) {
        final java.util.TreeMap<String, String> byPod = new java.util.TreeMap<>();
        final java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"([^\"]+)\":(\\{[^}]*\\})")
            .matcher(scores);
        while (m.find()) {
            byPod.put(m.group(1), m.group(2));
        }
        return byPod.isEmpty() ? "{}" : byPod.toString();
    }

    /**
     * @return every document's scores from the daemon, one line each.
     */
    static List<String> answers(final int port, final List<int[]> docs) throws Exception {
        final List<String> out = new ArrayList<>(docs.size());
        for (final int[] d : docs) {
            out.add(scores(port, d));
        }
        return out;
    }

    /**
     * @return the /health status code.
     */
    static int health(final int port) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health"))
            .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    /**
     * Starts a relay daemon in a JVM of its own (so that a test can kill it with SIGKILL), its output appended to a
     * log, and waits until it runs.
     *
     * @param config its daemon.yaml.
     * @param log    where its output goes.
     * @return the process.
     * @throws Exception when it cannot start or died starting.
     */
    static Process startRelay(final Path config, final Path log) throws Exception {
        final Process p = new ProcessBuilder(ChildProcesses.kvidx("daemon", "--config", config.toString()))
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        JetStreamRelayTest.await("the relay process ready", 60_000, () ->
            ChildProcesses.read(log).contains("kvidx daemon: index ") || !p.isAlive());
        if (!p.isAlive()) {
            throw new AssertionError("relay died: " + ChildProcesses.read(log));
        }
        return p;
    }
}
