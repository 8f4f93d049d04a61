package io.kvidx.bench.router;

import io.kvidx.bench.trace.TraceBlocks;
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
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Starts what {@code bench router} routes over, each as its own process under a {@link ChildProcesses}: mock vLLM
 * engines ({@code router/mock-engine/kvidx_mock_engine.py}, free ports from their ready files), one kvidx daemon
 * subscribed to all of them (ZeroMQ events and replay; pods never time out, so an engine no request reached for a
 * while stays routable), and {@code kvidx router} processes ({@code io.kvidx.router.RouterCommand} from this class
 * path, the same code as {@code kvidx-router.jar}).
 */
final class Fleet {
    /** Model the engines serve, the requests name and the router keys are seeded with. */
    static final String MODEL = TraceBlocks.MODEL;
    /** Time a process gets to come up. */
    static final long START_LIMIT_MS = 60_000;
    private static final Pattern ROUTER_PORT = Pattern.compile("kvidx router listening on [^\\s]+:(\\d+)");

    private Fleet() {
    }

    /**
     * A running mock engine.
     *
     * @param pod    pod id (the daemon's and the router's name for it).
     * @param http   base URL of its OpenAI server.
     * @param pub    its KV event PUB endpoint.
     * @param replay its replay endpoint.
     */
    record Engine(String pod, String http, String pub, String replay) {
    }

    /**
     * How the mock engines are started.
     *
     * @param python            Python 3 with zmq, msgpack and xxhash (Debian's /usr/bin/python3).
     * @param script            kvidx_mock_engine.py.
     * @param blockSize         prefix-cache block size, tokens.
     * @param numBlocks         prefix-cache capacity, blocks.
     * @param prefillUsPerToken simulated prefill time per uncached token.
     */
    record EngineSettings(String python, Path script, int blockSize, int numBlocks, int prefillUsPerToken) {
    }

    /**
     * A running router.
     *
     * @param process its process.
     * @param port    the port it serves on.
     */
    record Router(Process process, int port) {
    }

    /**
     * Starts the engines (all at once) and waits until each has bound its sockets.
     *
     * @param procs where they run.
     * @param s     their settings.
     * @param pods  their pod ids.
     * @return the engines, in the order of {@code pods}.
     * @throws IOException when one does not come up.
     */
    static List<Engine> startEngines(final ChildProcesses procs, final EngineSettings s, final List<String> pods)
        throws IOException {
        final List<Process> processes = new ArrayList<>();
        for (final String pod : pods) {
            final Path ready = procs.dir().resolve(pod + ".ready.json");
            Files.deleteIfExists(ready);
            processes.add(procs.start(pod, List.of(s.python(), s.script().toString(), "--host", "127.0.0.1",
                "--port", "0", "--zmq-pub", "tcp://127.0.0.1:*", "--zmq-replay", "tcp://127.0.0.1:*", "--model",
                MODEL, "--pod-id", pod, "--block-size", Integer.toString(s.blockSize()), "--num-blocks",
                Integer.toString(s.numBlocks()), "--prefill-us-per-token", Integer.toString(s.prefillUsPerToken()),
                "--decode-ms-per-token", "0", "--max-tokens-default", "1", "--ready-file", ready.toString())));
        }
        final List<Engine> engines = new ArrayList<>();
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_LIMIT_MS);
        for (int i = 0; i < pods.size(); i++) {
            final Path ready = procs.dir().resolve(pods.get(i) + ".ready.json");
            while (!Files.exists(ready)) {
                if (!processes.get(i).isAlive() || System.nanoTime() > deadline) {
                    throw new IOException("mock engine " + pods.get(i) + " did not start; its log ends: "
                        + procs.tail(pods.get(i)));
                }
                ChildProcesses.sleep(20);
            }
            final Map<?, ?> info = (Map<?, ?>) MiniJson.parse(Files.readString(ready, StandardCharsets.UTF_8));
            engines.add(new Engine(pods.get(i), (String) info.get("http"), (String) info.get("zmq_pub"),
                (String) info.get("zmq_replay")));
        }
        return engines;
    }

    /**
     * Starts a daemon indexing the engines' events into a new cell.
     *
     * @param procs     where it runs.
     * @param indexDir  index directory.
     * @param cell      the cell (new).
     * @param blockSize block size, tokens (the engines').
     * @param engines   the engines it subscribes to.
     * @return the daemon's process.
     * @throws IOException when it cannot be started.
     */
    static Process startDaemon(final ChildProcesses procs, final Path indexDir, final String cell,
        final int blockSize, final List<Engine> engines) throws IOException {
        final List<String> args = new ArrayList<>(List.of("daemon", "--dir", indexDir.toString(), "--cell", cell,
            "--block-size", Integer.toString(blockSize), "--max-pods", "64", "--pod-timeout-ms", "0"));
        for (final Engine e : engines) {
            args.add("--zmq");
            args.add(e.pod() + "@" + MODEL + "=" + e.pub());
            args.add("--replay");
            args.add(e.pod() + "=" + e.replay());
        }
        return procs.start("daemon", ChildProcesses.java("io.kvidx.daemon.cli.KvidxCli", List.of("-Xmx512m"),
            args));
    }

    /**
     * Starts a router on a free port and waits until it serves.
     *
     * @param procs           where it runs.
     * @param name            its log's name.
     * @param indexDir        the daemon's index directory.
     * @param cell            the daemon's cell.
     * @param policy          routing policy.
     * @param pods            pod id to URL.
     * @param responseHeaders ask for x-kvidx-pod and x-kvidx-predicted-tokens.
     * @param jvmArgs         JVM flags after the bench's {@code -Xmx1g} ({@code --router-jvm-arg}).
     * @return the router.
     * @throws IOException when it does not come up.
     */
    static Router startRouter(final ChildProcesses procs, final String name, final Path indexDir, final String cell,
        final String policy, final Map<String, String> pods, final boolean responseHeaders, final List<String> jvmArgs)
        throws IOException {
        final List<String> args = new ArrayList<>(List.of("--listen", "127.0.0.1:0", "--dir", indexDir.toString(),
            "--cell", cell, "--policy", policy));
        for (final Map.Entry<String, String> p : pods.entrySet()) {
            args.add("--pod");
            args.add(p.getKey() + "=" + p.getValue());
        }
        if (responseHeaders) {
            args.add("--response-headers");
        }
        final List<String> jvm = new ArrayList<>(List.of("-Xmx1g"));
        jvm.addAll(jvmArgs);
        final Process p = procs.start(name, ChildProcesses.java("io.kvidx.router.RouterCommand", jvm, args));
        return new Router(p, Integer.parseInt(procs.awaitLog(name, p, ROUTER_PORT, START_LIMIT_MS)));
    }

    /**
     * Waits until the router has mapped the index and sees the pods as routable ({@code GET /health}).
     *
     * @param client  an HTTP client.
     * @param procs   where the router runs (for its log).
     * @param name    the router's log name.
     * @param router  the router.
     * @param pods    pods that must be routable.
     * @throws IOException when that does not happen within {@link #START_LIMIT_MS}.
     */
    static void awaitRoutable(final HttpClient client, final ChildProcesses procs, final String name,
        final Router router, final int pods) throws IOException {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_LIMIT_MS);
        String last = "";
        while (System.nanoTime() < deadline && router.process().isAlive()) {
            try {
                final HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                    + router.port() + "/health")).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
                last = r.body();
                final Map<?, ?> h = (Map<?, ?>) MiniJson.parse(last);
                if (Boolean.TRUE.equals(h.get("index_available")) && h.get("pods_routable") instanceof Number n
                    && n.intValue() >= pods) {
                    return;
                }
            } catch (final IOException | RuntimeException ex) {
                last = ex.toString();
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", ex);
            }
            ChildProcesses.sleep(100);
        }
        throw new IOException("router " + name + " did not see the index and " + pods + " routable pod(s) (last"
            + " /health: " + last + "); its log ends: " + procs.tail(name));
    }

    /**
     * Reads a counter of the router's {@code GET /metrics}.
     *
     * @param client an HTTP client.
     * @param port   the router's port.
     * @param sample the sample's name and labels, e.g. {@code kvidx_router_decisions_total{outcome="fallback"}}.
     * @return its value, or -1 when the page lacks it or cannot be read.
     */
    static long metric(final HttpClient client, final int port, final String sample) {
        try {
            final String page = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/metrics")).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
            for (final String line : page.split("\n")) {
                if (line.startsWith(sample + " ")) {
                    return (long) Double.parseDouble(line.substring(sample.length() + 1).trim());
                }
            }
            return -1;
        } catch (final IOException | RuntimeException ex) {
            return -1;
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }
}
