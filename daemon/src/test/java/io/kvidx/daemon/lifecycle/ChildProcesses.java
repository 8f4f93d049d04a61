package io.kvidx.daemon.lifecycle;


import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Real processes for the lifecycle tests: JVMs on this test's class path (the {@code kvidx} CLI, reader mains), the
 * Python publisher, bounded waits, and clean-up.
 */
public final class ChildProcesses {
    /** Debian's interpreter (python3-zmq, python3-msgpack): the one on PATH may not see them. */
    static final Path PYTHON = Path.of("/usr/bin/python3");
    static final Path PUBLISHER = Path.of("src/test/python/vllm_publisher.py");
    /** Captures copied into the repository (llm-d test data, Apache-2.0; see the README there). */
    static final Path CAPTURES = Path.of("src/test/resources/vllm");
    /** Exit status of a process killed by SIGKILL, as {@link Process#exitValue()} reports it on Linux. */
    static final int SIGKILL_EXIT = 128 + 9;
    /** Exit status of the JVM after SIGTERM once its shutdown hooks ran. */
    static final int SIGTERM_EXIT = 128 + 15;

    private ChildProcesses() {
    }

    /**
     * @param mainClass main class on this test's class path.
     * @param args      its arguments.
     * @return the command line of a small JVM running it.
     */
    public static List<String> java(final String mainClass, final String... args) {
        return java(List.of(), mainClass, args);
    }

    /**
     * @param jvmOptions extra JVM options.
     * @param mainClass  main class on this test's class path.
     * @param args       its arguments.
     * @return the command line of a small JVM running it.
     */
    public static List<String> java(final List<String> jvmOptions, final String mainClass, final String... args) {
        final List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        // Small, quick-starting JVMs: this machine has two cores shared by several processes.
        cmd.addAll(Arrays.asList("-XX:+IgnoreUnrecognizedVMOptions", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            "-Xmx256m", "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "--enable-native-access=ALL-UNNAMED",
            "--sun-misc-unsafe-memory-access=allow"));
        cmd.addAll(jvmOptions);
        cmd.addAll(Arrays.asList("-cp", System.getProperty("java.class.path"), mainClass));
        cmd.addAll(Arrays.asList(args));
        return cmd;
    }

    /**
     * @param args {@code kvidx} CLI arguments.
     * @return the command line of the CLI.
     */
    public static List<String> kvidx(final String... args) {
        return java("io.kvidx.daemon.cli.KvidxCli", args);
    }

    /**
     * @param args {@code kvidx} CLI arguments.
     * @return the command line of the CLI in a JVM a {@link Debugger} can attach to.
     */
    static List<String> debuggableKvidx(final String... args) {
        return java(List.of(Debugger.agentOption()), "io.kvidx.daemon.cli.KvidxCli", args);
    }

    /**
     * Starts a process with stdout and stderr going to a log file.
     *
     * @param command the command.
     * @param log     the log file (appended).
     * @return the process.
     */
    static Process start(final List<String> command, final Path log) throws IOException {
        return new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    }

    /**
     * Kills a process with SIGKILL ({@link Process#destroyForcibly()} on Linux) and waits for it, bounded.
     *
     * @return its exit status.
     */
    static int kill(final Process process) throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            throw new AssertionError("pid " + process.pid() + " still alive 20 s after SIGKILL");
        }
        return process.exitValue();
    }

    /**
     * Stops a process with SIGTERM ({@link Process#destroy()}) and waits for it, bounded.
     *
     * @return its exit status.
     */
    static int stop(final Process process) throws InterruptedException {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("pid " + process.pid() + " did not stop within 30 s of SIGTERM");
        }
        return process.exitValue();
    }

    /** Destroys processes still alive (finally blocks): SIGKILL, bounded wait. */
    public static void destroy(final Process... processes) {
        for (final Process p : processes) {
            if (p != null && p.isAlive()) {
                p.destroyForcibly();
                try {
                    p.waitFor(10, TimeUnit.SECONDS);
                } catch (final InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /**
     * Waits, bounded, for a condition.
     *
     * @param what      what is awaited (for the failure message).
     * @param timeoutMs bound.
     * @param condition the condition.
     * @return how long it took, in ms.
     */
    static long await(final String what, final long timeoutMs, final BooleanSupplier condition)
        throws InterruptedException {
        final long start = System.nanoTime();
        final long deadline = start + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            Thread.sleep(5);
        }
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    /**
     * @return the file's text, or "" when it does not exist.
     */
    public static String read(final Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (final NoSuchFileException ex) {
            return "";
        } catch (final IOException ex) {
            return "<cannot read " + file + ": " + ex + ">";
        }
    }

    /**
     * @return true when the log holds the line the daemon prints once it is running.
     */
    static boolean daemonReady(final Path log) {
        return read(log).contains("kvidx daemon: index ");
    }

    /**
     * @return the last {@code n} lines of a file, for failure messages.
     */
    static String tail(final Path file, final int n) {
        final List<String> lines = read(file).lines().toList();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - n), lines.size()));
    }

    /**
     * Fails (when the {@code CI} environment variable is set) or skips (locally) unless /usr/bin/python3 can import
     * zmq and msgpack.
     */
    public static void requirePython() throws IOException, InterruptedException {
        boolean ok = Files.isExecutable(PYTHON);
        if (ok) {
            final Process p = new ProcessBuilder(PYTHON.toString(), "-c", "import zmq, msgpack")
                .redirectErrorStream(true).start();
            ok = p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
            destroy(p);
        }
        final String why = "/usr/bin/python3 with Debian's python3-zmq and python3-msgpack is needed "
            + "(apt-get install -y python3-zmq python3-msgpack)";
        if (!ok && System.getenv("CI") != null) {
            throw new AssertionError("CI is set and " + why);
        }
        assumeTrue(ok, "skipped locally: " + why);
    }

    /** Deletes a directory tree (best effort). */
    static void deleteTree(final Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (final IOException ex) {
            // best effort
        }
    }

    /**
     * @return a fresh directory in /dev/shm when it is usable (the index's home), else in the temp directory.
     */
    static Path shmDir(final String prefix) throws IOException {
        final Path shm = Path.of("/dev/shm");
        final Path parent = Files.isDirectory(shm) && Files.isWritable(shm) ? shm
            : Path.of(System.getProperty("java.io.tmpdir"));
        return Files.createTempDirectory(parent, prefix);
    }

    /** A daemon process, with its debugger (suspended before main until armed and resumed) when asked. */
    record Daemon(Process process, Path log, Debugger debugger) {
    }

    /**
     * Starts a {@code kvidx} daemon process; with a debugger, it waits before its main method until the debugger
     * resumes it.
     */
    static Daemon startDaemon(final String[] args, final Path log, final boolean debug, final List<Process> processes,
        final List<Debugger> debuggers) throws Exception {
        final Process process = start(debug ? debuggableKvidx(args) : kvidx(args), log);
        processes.add(process);
        Debugger debugger = null;
        if (debug) {
            debugger = Debugger.attach(log, 30_000);
            debuggers.add(debugger);
        }
        return new Daemon(process, log, debugger);
    }

    /** Waits until the daemon says it is ready, failing with its log's tail when it died first. */
    static void awaitReady(final Daemon daemon) throws InterruptedException {
        await("daemon ready", 30_000, () -> daemonReady(daemon.log()) || !daemon.process().isAlive());
        org.junit.jupiter.api.Assertions.assertTrue(daemon.process().isAlive(),
            () -> "daemon died: " + tail(daemon.log(), 40));
    }
}
