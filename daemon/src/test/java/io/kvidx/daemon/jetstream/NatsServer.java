package io.kvidx.daemon.jetstream;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A real {@code nats-server} with JetStream (Debian package nats-server) on a free loopback port, its store in a
 * test folder, for the JetStream tests: started, restarted on the same port and store, stopped.
 */
final class NatsServer implements AutoCloseable {
    private static final List<Path> BINARIES = List.of(Path.of("/usr/sbin/nats-server"),
        Path.of("/usr/bin/nats-server"));

    private final Path binary;
    private final Path store;
    private final int port;
    private final List<String> options;
    private Process process;

    private NatsServer(final Path binary, final Path store, final int port, final String... options) {
        this.options = List.of(options);
        this.binary = binary;
        this.store = store;
        this.port = port;
    }

    /**
     * Skips the calling test when nats-server is missing (fails it when CI is set: .ci/run installs it).
     *
     * @return the binary.
     */
    static Path require() {
        for (final Path p : BINARIES) {
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        final String why = "nats-server is needed (apt-get install -y nats-server)";
        if (System.getenv("CI") != null) {
            throw new AssertionError("CI is set and " + why);
        }
        assumeTrue(false, "skipped locally: " + why);
        return null;
    }

    /**
     * @param dir     a test folder for the server's store.
     * @param options more nats-server options (authentication, TLS).
     * @return a started server.
     */
    static NatsServer start(final Path dir, final String... options) throws Exception {
        final NatsServer server = new NatsServer(require(), Files.createDirectories(dir.resolve("nats-store")),
            freePort(), options);
        server.startProcess();
        return server;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private void startProcess() throws Exception {
        final List<String> command = new java.util.ArrayList<>(List.of(binary.toString(), "-js", "-sd",
            store.toString(), "-a", "127.0.0.1", "-p", Integer.toString(port)));
        command.addAll(options);
        process = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(store.resolveSibling("nats-server.log").toFile()).start();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (final IOException ex) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new AssertionError("nats-server did not start on port " + port + " (see "
                        + store.resolveSibling("nats-server.log") + ")", ex);
                }
                Thread.sleep(20);
            }
        }
    }

    /**
     * @return the server's port.
     */
    int port() {
        return port;
    }

    /**
     * @return the server's URL.
     */
    String url() {
        return "nats://127.0.0.1:" + port;
    }

    /**
     * Stops the server (SIGTERM, then SIGKILL) and starts it again on the same port and store.
     */
    void restart() throws Exception {
        stop();
        startProcess();
    }

    /**
     * Stops the server.
     */
    void stop() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
