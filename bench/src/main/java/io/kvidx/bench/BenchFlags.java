package io.kvidx.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * JVM flags the benchmarks need on JDK 25, as compile-time constants so that JMH's {@code @Fork(jvmArgsAppend)}
 * can use them. Chronicle Map needs the most (shared/FACTS.md); kvidx itself needs only native access (for
 * madvise/mlock) and Agrona's jdk.internal.misc export (daemon side).
 */
public final class BenchFlags {
    /** Silences Chronicle's analytics (it would try to reach a remote host and write ~/.chronicle.analytics.*). */
    public static final String CHRONICLE_ANALYTICS_OFF = "-Dchronicle.analytics.disable=true";
    /** Flag 1. */
    public static final String F1 = "--add-opens=java.base/java.lang=ALL-UNNAMED";
    /** Flag 2. */
    public static final String F2 = "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED";
    /** Flag 3. */
    public static final String F3 = "--add-opens=java.base/java.io=ALL-UNNAMED";
    /** Flag 4. */
    public static final String F4 = "--add-opens=java.base/java.util=ALL-UNNAMED";
    /** Flag 5. */
    public static final String F5 = "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED";
    /** Flag 6. */
    public static final String F6 = "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED";
    /** Flag 7. */
    public static final String F7 = "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED";
    /** Flag 8. */
    public static final String F8 = "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED";
    /** Flag 9. */
    public static final String F9 = "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED";
    /** Flag 10. */
    public static final String F10 = "--add-exports=jdk.compiler/com.sun.tools.javac=ALL-UNNAMED";
    /** Flag 11. */
    public static final String F11 = "--enable-native-access=ALL-UNNAMED";
    /** Flag 12. */
    public static final String F12 = "--sun-misc-unsafe-memory-access=allow";
    /** Flag 13: Chronicle's jdk.compiler use needs the module resolved even under -cp. */
    public static final String F13 = "--add-modules=jdk.compiler";

    /** Every flag above, for child JVMs started by the harness. */
    public static final String[] CHRONICLE = {
        CHRONICLE_ANALYTICS_OFF, F1, F2, F3, F4, F5, F6, F7, F8, F9, F10, F11, F12, F13,
    };

    private BenchFlags() {
    }

    /**
     * Sets Chronicle's analytics switch before any Chronicle class loads, for runs started without the -D flag
     * (the launcher cannot pass it; the jar manifest carries the module flags but not system properties).
     */
    public static void disableChronicleAnalytics() {
        if (System.getProperty("chronicle.analytics.disable") == null) {
            System.setProperty("chronicle.analytics.disable", "true");
        }
    }

    /**
     * The command line of a kvidx child JVM: this JVM's java, the flags kvidx needs (not Chronicle's), this class
     * path. The one builder for the harness's child processes (trace replay, router bench).
     *
     * @param main main class.
     * @param jvm  extra JVM flags (heap, ...).
     * @param args program arguments.
     * @return the command line.
     */
    public static List<String> javaCommand(final String main, final List<String> jvm,
        final List<String> args) {
        final List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-XX:+IgnoreUnrecognizedVMOptions");
        cmd.add(F7);
        cmd.add(F11);
        cmd.add(F12);
        cmd.addAll(jvm);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main);
        cmd.addAll(args);
        return cmd;
    }

    /**
     * @return a loopback port free now, for a child server that is told its port (nginx, a daemon's metrics); the
     * child fails loudly when another process took it since.
     * @throws java.io.IOException when none can be bound.
     */
    public static int freeLoopbackPort() throws java.io.IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
