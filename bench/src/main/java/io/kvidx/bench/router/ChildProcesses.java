package io.kvidx.bench.router;

import io.kvidx.bench.BenchFlags;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The processes one part of {@code bench router} or {@code bench epp} starts (mock engines, a daemon, routers,
 * proxies, nginx, a picker), each with its output in {@code <dir>/<name>.log}. {@link #close()} stops them all,
 * newest first (SIGTERM, then SIGKILL after {@link #GRACE_MS}, their descendants too: nginx's workers); a JVM
 * shutdown hook does the same for any still alive if the bench is killed or fails first, so a run leaves nothing
 * behind.
 *
 * <p><b>Note:</b> one instance per owning thread; only the shutdown hook's set is shared.
 */
public final class ChildProcesses implements AutoCloseable {
    /** Time a process gets to stop after SIGTERM. */
    public static final long GRACE_MS = 10_000;

    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (final Process p : LIVE) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
        }, "kvidx-bench-router-cleanup"));
    }

    private final Path dir;
    private final List<Process> started = new ArrayList<>();

    /**
     * @param dir directory of the logs (created).
     * @throws IOException when it cannot be created.
     */
    public ChildProcesses(final Path dir) throws IOException {
        this.dir = Files.createDirectories(dir);
    }

    /**
     * @param name names the log file.
     * @param cmd  command line.
     * @return the running process.
     * @throws IOException when it cannot be started.
     */
    public Process start(final String name, final List<String> cmd) throws IOException {
        final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log(name).toFile())
            .start();
        started.add(p);
        LIVE.add(p);
        return p;
    }

    /**
     * @param name a process's name.
     * @return its log file.
     */
    public Path log(final String name) {
        return dir.resolve(name + ".log");
    }

    /** @return the directory of the logs. */
    public Path dir() {
        return dir;
    }

    /**
     * Waits for a line of a process's log to match.
     *
     * @param name      the process's name.
     * @param p         the process (a dead one fails the wait at once).
     * @param pattern   what to find; its group 1 is returned.
     * @param timeoutMs how long to wait.
     * @return group 1 of the first match.
     * @throws IOException when the process dies or the line does not come in time (the log's tail in the message).
     */
    public String awaitLog(final String name, final Process p, final Pattern pattern, final long timeoutMs)
        throws IOException {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            final String text = Files.exists(log(name)) ? Files.readString(log(name), StandardCharsets.UTF_8) : "";
            final Matcher m = pattern.matcher(text);
            if (m.find()) {
                return m.group(1);
            }
            if (!p.isAlive() || System.nanoTime() > deadline) {
                throw new IOException(name + (p.isAlive() ? " did not print " + pattern + " within " + timeoutMs
                    + " ms" : " exited with " + p.exitValue()) + "; its log ends: " + lastChars(text));
            }
            sleep(50);
        }
    }

    /**
     * @param name a process's name.
     * @return the last lines of its log, for error messages.
     */
    public String tail(final String name) {
        try {
            return lastChars(Files.readString(log(name), StandardCharsets.UTF_8));
        } catch (final IOException ex) {
            return "(no log: " + ex.getMessage() + ")";
        }
    }

    private static String lastChars(final String text) {
        return text.length() <= 2_000 ? text : "..." + text.substring(text.length() - 2_000);
    }

    /**
     * Stops one process now (SIGTERM, SIGKILL after the grace).
     *
     * @param p the process, or null.
     */
    public void stop(final Process p) {
        if (p == null) {
            return;
        }
        stopAll(List.of(p));
        started.remove(p);
    }

    @Override
    public void close() {
        final List<Process> all = new ArrayList<>(started);
        java.util.Collections.reverse(all);
        stopAll(all);
        started.clear();
    }

    private static void stopAll(final List<Process> processes) {
        final List<List<ProcessHandle>> children = new ArrayList<>();
        for (final Process p : processes) {
            children.add(p.descendants().toList());
            p.destroy();
        }
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(GRACE_MS);
        for (int i = 0; i < processes.size(); i++) {
            final Process p = processes.get(i);
            try {
                if (!p.waitFor(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
                p.destroyForcibly();
            }
            for (final ProcessHandle h : children.get(i)) {
                if (h.isAlive()) {
                    h.destroyForcibly();
                }
            }
            LIVE.remove(p);
        }
    }

    /**
     * A Java child: this JVM's java, the flags kvidx needs, this class path.
     *
     * @param main    main class.
     * @param jvm     extra JVM flags (heap, ...).
     * @param args    program arguments.
     * @return the command line.
     */
    public static List<String> java(final String main, final List<String> jvm, final List<String> args) {
        return BenchFlags.javaCommand(main, jvm, args);
    }

    /**
     * @param ms milliseconds to sleep (an interrupt is kept and ends the sleep).
     */
    public static void sleep(final long ms) {
        try {
            Thread.sleep(ms);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
