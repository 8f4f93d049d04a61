package io.kvidx.bench.ingest;

import io.kvidx.bench.KvidxStore;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@code nats-server -js} (the Debian package's binary) for a bench: on a free loopback port, its store in a
 * directory of its own that {@link #close} deletes with the process. The JetStream benches' one way to start one
 * (the tests have theirs, {@code NatsServer}, in the daemon's test sources).
 *
 * <p><b>Note:</b> the bench's main thread starts and closes it.
 */
final class NatsProcess implements AutoCloseable {
    private static final List<Path> BINARIES = List.of(Path.of("/usr/sbin/nats-server"),
        Path.of("/usr/bin/nats-server"));
    /** How long the server may take to listen. */
    private static final long START_LIMIT_NS = TimeUnit.SECONDS.toNanos(20);

    private final Process process;
    private final Path store;
    private final int port;

    private NatsProcess(final Process process, final Path store, final int port) {
        this.process = process;
        this.store = store;
        this.port = port;
    }

    /**
     * Starts the server and waits until it listens.
     *
     * @param storeParent where its store directory goes (deleted on close).
     * @param prefix      the store directory's name prefix.
     * @return the running server.
     * @throws IOException when it is not installed, cannot start, or does not listen within 20 s.
     */
    static NatsProcess start(final Path storeParent, final String prefix) throws IOException {
        final Path binary = BINARIES.stream().filter(Files::isExecutable).findFirst().orElseThrow(
            () -> new IOException("nats-server is not installed (apt-get install nats-server)"));
        final Path store = Files.createTempDirectory(storeParent, prefix);
        final int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        final Process process = new ProcessBuilder(binary.toString(), "-js", "-sd", store.toString(), "-a",
            "127.0.0.1", "-p", Integer.toString(port)).redirectErrorStream(true)
            .redirectOutput(store.resolve("nats-server.log").toFile()).start();
        final NatsProcess nats = new NatsProcess(process, store, port);
        try {
            nats.awaitListening();
        } catch (final IOException | RuntimeException ex) {
            nats.close();
            throw ex;
        }
        return nats;
    }

    private void awaitListening() throws IOException {
        final long deadline = System.nanoTime() + START_LIMIT_NS;
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (final IOException ex) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new IOException("nats-server did not start on port " + port + " (its log: "
                        + store.resolve("nats-server.log") + ")", ex);
                }
                try {
                    Thread.sleep(20);
                } catch (final InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted waiting for nats-server", ie);
                }
            }
        }
    }

    /**
     * @return its client URL.
     */
    String url() {
        return "nats://127.0.0.1:" + port;
    }

    /** Stops the server (forcibly after 10 s) and deletes its store. */
    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (final InterruptedException ex) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        KvidxStore.deleteTree(store);
    }
}
