package io.kvidx.tools;

import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.ingest.zmq.JavaVllmPublisherAccess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code kvidx daemon} and {@code kvidx query} as real processes of the launcher's jar ({@link ToolsCli}): the daemon
 * subscribes to a real publisher, the query maps the index read-only, SIGTERM stops the daemon cleanly.
 */
class DaemonQueryProcessTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;

    private static List<String> java(final String... args) {
        final List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(Arrays.asList("--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
            "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
            ToolsCli.class.getName()));
        cmd.addAll(Arrays.asList(args));
        return cmd;
    }

    private String query(final String... tokens) throws IOException, InterruptedException {
        final Process q = new ProcessBuilder(java("query", "--dir", dir.toString(), "--model", MODEL, "--tokens",
            String.join(",", tokens))).redirectErrorStream(true).start();
        assertTrue(q.waitFor(30, TimeUnit.SECONDS));
        final String out = new String(q.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, q.exitValue(), out);
        return out.strip();
    }

    @Test
    @Timeout(90)
    void shouldRunDaemonProcessAnswerQueriesAndStopOnSigterm() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String[] tokens = Arrays.stream(base.tokenIds()).mapToObj(Integer::toString).toArray(String[]::new);
        try (JavaVllmPublisherAccess publisher = new JavaVllmPublisherAccess("whatever", true)) {
            final Path log = dir.resolve("daemon.log");
            final Process daemon = new ProcessBuilder(java("daemon", "--dir", dir.toString(), "--capacity", "8192",
                "--max-pods", "64",
                "--zmq", "pod-7@" + MODEL + "=" + publisher.endpoint(), "--replay",
                "pod-7=" + publisher.replayEndpoint(), "--idle", "sleeping"))
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            try {
                final long deadline = System.currentTimeMillis() + 30_000;
                final byte[] store = new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
                    .stored(base.blockHashes(), null, base.tokenIds(), 16, null, "GPU").batch(0);
                String answer = "";
                while (!answer.startsWith("pod-7 25 ") && System.currentTimeMillis() < deadline) {
                    publisher.publish(store);
                    Thread.sleep(200);
                    if (Files.exists(dir.resolve("default").resolve("index"))) {
                        answer = query(tokens);
                    }
                }
                assertEquals("pod-7 25 slot=0 generation=1", answer, "pod id, depth, slot and generation");
                try (io.kvidx.client.index.IndexReader reader = io.kvidx.client.index.IndexReader.attach(
                    new io.kvidx.client.index.IndexReaderContext().dir(dir))) {
                    assertEquals(64, reader.maxPods(), "--max-pods 64: a direct cell");
                }
                assertEquals("pod-7 4 slot=0 generation=1", query(Arrays.copyOf(tokens, 70)));
                assertEquals("", query("1", "2", "3"));
            } finally {
                daemon.destroy();
                assertTrue(daemon.waitFor(30, TimeUnit.SECONDS), "daemon did not stop on SIGTERM");
            }
            final String out = Files.readString(log);
            // The JVM reports a SIGTERM-initiated exit as 128 + 15 after the shutdown hooks have run.
            assertTrue(daemon.exitValue() == 0 || daemon.exitValue() == 143, daemon.exitValue() + ": " + out);
            assertTrue(out.contains("kvidx daemon: stopping"), out);
            assertTrue(out.lines().anyMatch(l -> l.startsWith("kvidx blocks stored: 25")), out);
        }
    }
}
