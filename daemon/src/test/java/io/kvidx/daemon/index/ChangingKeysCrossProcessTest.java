package io.kvidx.daemon.index;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer process churns chains whose pod sets change ({@link ChangingKeysWriterMain}: stores, removals in random
 * order, evictions by a small, crowded table, overflow bitmaps, pods taken down, swept and their slots reused,
 * clears) while a reader process ({@link ChangingKeysReaderMain}) checks every answer against the chain states the
 * writer published for the query's window: real processes sharing the mapped index file and a mapped log of states.
 * In a direct cell (64 pods: plain bitmaps) and a cell of 256 pods (inline holder lists and overflow bitmaps).
 */
class ChangingKeysCrossProcessTest {
    @ParameterizedTest(name = "{0} pods")
    @ValueSource(ints = {64, 256})
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void shouldAnswerOnlyStatesTheWriterPublishedWhileKeysChange(final int maxPods) throws Exception {
        run(maxPods, 4, 42L + maxPods);
    }

    @ParameterizedTest(name = "{0} pods")
    @ValueSource(ints = {64, 256})
    @Tag("slow")
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void shouldAnswerOnlyStatesTheWriterPublishedOverAMinuteOfChangingKeys(final int maxPods) throws Exception {
        run(maxPods, 60, 4242L + maxPods);
    }

    private static List<String> java(final String main, final String... args) {
        final List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(Arrays.asList("-XX:+UseSerialGC", "-Xmx256m", "--enable-native-access=ALL-UNNAMED", "-cp",
            System.getProperty("java.class.path"), main));
        cmd.addAll(Arrays.asList(args));
        return cmd;
    }

    private static void run(final int maxPods, final int seconds, final long seed) throws Exception {
        final Path shm = Path.of("/dev/shm");
        final Path dir = Files.createTempDirectory(Files.isDirectory(shm) && Files.isWritable(shm) ? shm
            : Path.of(System.getProperty("java.io.tmpdir")), "kvidx-changing");
        final Path log = dir.resolve("states");
        final Path writerOut = dir.resolve("writer.out");
        final Path readerOut = dir.resolve("reader.out");
        Process writer = null;
        Process reader = null;
        try {
            writer = new ProcessBuilder(java(ChangingKeysWriterMain.class.getName(), dir.toString(), "changing",
                Integer.toString(maxPods), Integer.toString(seconds), log.toString(), Long.toString(seed)))
                .redirectErrorStream(true).redirectOutput(writerOut.toFile()).start();
            final long readyBy = System.currentTimeMillis() + 30_000;
            while (!read(writerOut).contains("READY")) {
                assertTrue(writer.isAlive() && System.currentTimeMillis() < readyBy, () -> "writer did not start: "
                    + read(writerOut));
                Thread.sleep(10);
            }
            reader = new ProcessBuilder(java(ChangingKeysReaderMain.class.getName(), dir.toString(), "changing",
                log.toString(), Integer.toString(seconds + 60), Long.toString(seed + 1))).redirectErrorStream(true)
                .redirectOutput(readerOut.toFile()).start();
            assertTrue(writer.waitFor(seconds + 60L, TimeUnit.SECONDS), "writer did not exit");
            final String rest = read(writerOut);
            assertEquals(0, writer.exitValue(), () -> "writer: " + rest);
            assertTrue(reader.waitFor(60, TimeUnit.SECONDS), "reader did not exit (a query hung?)");
            final String readerText = read(readerOut);
            assertEquals(0, reader.exitValue(), () -> "reader: " + readerText);
            final String done = rest.lines().filter(l -> l.startsWith("DONE")).findFirst().orElse("");
            final String checked = readerText.lines().filter(l -> l.startsWith("CHECKED")).findFirst().orElse("");
            System.out.println(maxPods + " pods: writer " + done + "\n" + maxPods + " pods: reader " + checked);
            final Map<String, Long> w = fields(done);
            final Map<String, Long> r = fields(checked);
            assertEquals(0L, r.get("violations"), () -> "the reader saw answers no published state allows:\n"
                + readerText);
            assertTrue(r.get("queries") + r.get("exact") > 300, "reader ran " + checked);
            assertTrue(r.get("overlapping") > 100, () -> "too few queries overlapped a change: " + checked);
            assertTrue(r.get("skipped") * 10 < r.get("queries") + r.get("exact") + r.get("lookups"),
                () -> "too many windows fell out of the state ring: " + checked);
            assertTrue(w.get("evictions") > 0, () -> "no eviction: " + done);
            assertTrue(w.get("reuses") > 0, () -> "no slot reused: " + done);
            assertTrue(w.get("sweep") > 0 && w.get("clear") > 0, () -> "no sweep or no clear: " + done);
        } finally {
            for (final Process p : new Process[] {writer, reader}) {
                if (p != null && p.isAlive()) {
                    p.destroyForcibly();
                    p.waitFor(10, TimeUnit.SECONDS);
                }
            }
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static String read(final Path file) {
        try {
            return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
        } catch (final IOException ex) {
            return "<" + ex + ">";
        }
    }

    private static Map<String, Long> fields(final String line) {
        final Map<String, Long> m = new HashMap<>();
        for (final String f : line.split(" ")) {
            final int eq = f.indexOf('=');
            if (eq > 0) {
                m.put(f.substring(0, eq), Long.parseLong(f.substring(eq + 1)));
            }
        }
        return m;
    }
}
