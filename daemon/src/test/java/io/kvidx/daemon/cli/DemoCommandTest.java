package io.kvidx.daemon.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs the real demo for a few seconds: a fleet writing in this JVM and a reader JVM answering queries.
 */
@Timeout(60)
class DemoCommandTest {
    @TempDir
    Path dir;

    @Test
    void shouldRunWriterAndSeparateReaderProcessAndStopByItself() throws Exception {
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final PrintStream original = System.out;
        final int code;
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            code = KvidxCli.run("demo", "--seconds=5", "--dir=" + dir, "--pods=4", "--capacity=65536",
                "--budget=2000", "--rate=200000");
        } finally {
            System.setOut(original);
        }
        final String out = captured.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, out);
        assertTrue(out.contains("reader pid"), out);
        assertTrue(out.lines().anyMatch(l -> l.contains("queries/s") && !l.contains("queries/s         0")),
            "the reader process answered queries:\n" + out);
        assertTrue(out.contains("stopped after"), out);
        assertFalse(Files.exists(dir.resolve("demo").resolve("index")), "the demo removes its index");
    }

    @Test
    void shouldDescribeReaderStats() {
        final String line = DemoCommand.describe("STATS queries=1000 p50=150 p99=400 hits=900 depth=5000 "
            + "blocks=10000 entries=7");
        assertTrue(line.contains("p50   150 ns"), line);
        assertTrue(line.contains("hit  90%"), line);
        assertTrue(line.contains("prefix  50%"), line);
    }
}
