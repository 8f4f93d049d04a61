package io.kvidx.router;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@code kvidx daemon} process run from this test JVM's class path (the router module has a test-scope dependency
 * on kvidx-daemon), small and quick to start: C1 only, serial GC, a small cell, agents that sleep when idle (the
 * build machine may have two cores). Ready once its log says {@code kvidx daemon: index}.
 */
final class DaemonProcess implements AutoCloseable {
    private final List<String> command;
    private final Path log;
    private Process process;

    private DaemonProcess(final List<String> command, final Path log) {
        this.command = command;
        this.log = log;
    }

    /**
     * Starts a daemon and waits until it is ready.
     *
     * @param dir  index directory.
     * @param cell cell.
     * @param log  its log (appended; restarts append to it too).
     * @param args more {@code kvidx daemon} options.
     * @return the running daemon.
     */
    static DaemonProcess start(final Path dir, final String cell, final Path log, final String... args)
        throws IOException, InterruptedException {
        final List<String> cmd = new ArrayList<>(Arrays.asList(ProcessHandle.current().info().command()
                .orElse("java"), "-XX:+IgnoreUnrecognizedVMOptions", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            "-Xmx128m", "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "--enable-native-access=ALL-UNNAMED",
            "--sun-misc-unsafe-memory-access=allow", "-cp", System.getProperty("java.class.path"),
            "io.kvidx.daemon.cli.KvidxCli", "daemon", "--dir", dir.toString(), "--cell", cell, "--capacity", "65536",
            "--shards", "16", "--idle", "sleep-1ms", "--heartbeat-interval-ms", "100"));
        cmd.addAll(Arrays.asList(args));
        final DaemonProcess d = new DaemonProcess(cmd, log);
        d.launch();
        return d;
    }

    private void launch() throws IOException, InterruptedException {
        final int before = read().length();
        process = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!read().substring(Math.min(before, read().length())).contains("kvidx daemon: index ")) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                process.destroyForcibly();
                throw new AssertionError("daemon did not start:\n" + tail());
            }
            Thread.sleep(20);
        }
    }

    /** Starts it again with the same options (after {@link #kill()}). */
    void restart() throws IOException, InterruptedException {
        if (process.isAlive()) {
            throw new IllegalStateException("still running");
        }
        launch();
    }

    /** SIGKILL, and waits for it to end. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            throw new AssertionError("daemon still alive 20 s after SIGKILL");
        }
    }

    String read() {
        try {
            return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
        } catch (final IOException ex) {
            return "";
        }
    }

    /** @return the last lines of its log. */
    String tail() {
        final List<String> lines = read().lines().toList();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }

    /** @return a loopback port free now (for the daemon's --http; another process may take it first). */
    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        if (process != null && process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (final InterruptedException ex) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
