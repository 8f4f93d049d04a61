package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer JVM churns the index while this JVM queries the same mapped file: real processes, real mapping.
 */
@Timeout(90)
class CrossProcessIndexTest {
    @Test
    void shouldReadConsistentAnswersFromAWriterInAnotherProcess() throws Exception {
        runFor(3);
    }

    @Test
    @org.junit.jupiter.api.Tag("slow")
    @Timeout(180)
    void shouldStayConsistentOverAMinuteOfChurn() throws Exception {
        runFor(60);
    }

    private static void runFor(final int seconds) throws Exception {
        final Path dir = Files.createTempDirectory(shmOrTemp(), "kvidx-xproc");
        final List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add(ChurnWriterMain.class.getName());
        command.add(dir.toString());
        command.add("xproc");
        command.add(Integer.toString(seconds));
        final Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
            StandardCharsets.UTF_8))) {
            assertEquals("READY", out.readLine(), "child writer did not start");
            final long queries;
            try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("xproc")
                .attachTimeoutMs(5_000).heartbeatTimeoutMs(5_000))) {
                assertEquals(child.pid(), reader.writerPid());
                queries = ConcurrentIndexStressTest.InvariantChecker.checkUntil(reader, child::isAlive);
            }
            final String done = out.readLine();
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, child.exitValue());
            assertTrue(done != null && done.startsWith("DONE"), "child said " + done);
            final long deletes = Long.parseLong(done.substring(done.indexOf("deletes=") + 8).trim());
            assertTrue(deletes > 3_000L * seconds, "writer churned " + deletes);
            assertTrue(queries > 1_000, "reader ran " + queries + " queries");
        } finally {
            child.destroyForcibly();
            try (var files = Files.walk(dir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static Path shmOrTemp() {
        final Path shm = Path.of("/dev/shm");
        return Files.isDirectory(shm) && Files.isWritable(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
    }
}
