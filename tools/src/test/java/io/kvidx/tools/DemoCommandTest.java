package io.kvidx.tools;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.stream.Stream;

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
            code = ToolsCli.run("demo", "--seconds=5", "--dir=" + dir, "--pods=4", "--capacity=65536",
                "--budget=2000", "--rate=200000");
        } finally {
            System.setOut(original);
        }
        final String out = captured.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, out);
        assertTrue(out.contains("reader pid"), out);
        assertTrue(out.lines().anyMatch(l -> l.contains("queries/s") && !l.contains("queries/s       0")),
            "the reader process answered queries:\n" + out);
        // Routing by the index must reuse more of each prompt than round robin over 4 pods.
        assertTrue(out.lines().filter(l -> l.contains("cache-aware")).anyMatch(DemoCommandTest::cacheAwareWins),
            "cache-aware routing should beat round robin:\n" + out);
        assertTrue(out.contains("stopped after"), out);
        assertFalse(Files.exists(dir.resolve("demo").resolve("index")), "the demo removes its index");
    }

    @Test
    void shouldRouteTextPromptsTokenizedInTheRoutersProfile() throws Exception {
        final Path tokenizer = Path.of(DemoCommandTest.class.getResource("/qwen3/tokenizer.json").toURI());
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final PrintStream original = System.out;
        final int code;
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            code = ToolsCli.run("demo", "--seconds=6", "--dir=" + dir, "--pods=4", "--capacity=65536",
                "--budget=2000", "--tokenizer=" + tokenizer);
        } finally {
            System.setOut(original);
        }
        final String out = captured.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, out);
        assertTrue(out.contains("text prompts, tokenized with " + tokenizer), out);
        // The reader received text only: its profile tokenized it (tokens per request > 0) into the keys the fleet
        // stored from its own tokenization, so routing by the index finds the prompts' blocks.
        final java.util.regex.Pattern text = java.util.regex.Pattern.compile(
            "queries/s +[\\d,]+ +([\\d,]+) tokens/request .*held +(\\d+)% \\| routed text: cache-aware +(\\d+)%.*"
                + "round-robin +(\\d+)%");
        assertTrue(out.lines().map(text::matcher).filter(java.util.regex.Matcher::find).anyMatch(m ->
                Integer.parseInt(m.group(1).replace(",", "")) > 50 && Integer.parseInt(m.group(2)) > 0
                    && Integer.parseInt(m.group(3)) > Integer.parseInt(m.group(4))),
            "text routing should find held prefixes and beat round robin:\n" + out);
        assertFalse(Files.exists(dir.resolve("demo").resolve("index")), "the demo removes its index");
    }

    @Test
    void shouldRefuseAMissingTokenizerBeforeStarting() {
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final PrintStream original = System.err;
        final int code;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            code = ToolsCli.run("demo", "--seconds=1", "--dir=" + dir, "--tokenizer=" + dir.resolve("none"));
        } finally {
            System.setErr(original);
        }
        assertEquals(2, code);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("no readable tokenizer file"), err.toString());
        assertFalse(Files.exists(dir.resolve("demo")), "nothing was started");
    }

    @Test
    void shouldRefuseACellADaemonWritesAndLeaveTheLiveIndexAlone() throws Exception {
        try (KvidxDaemon daemon = KvidxDaemon.start(new DaemonContext().dir(dir).cell("live").shardCount(16)
            .capacityBlocks(4096).idleStrategy("sleeping"))) {
            final Path index = daemon.index().context().indexFile();
            final Object key = Files.readAttributes(index, BasicFileAttributes.class).fileKey();
            final List<String> names;
            try (Stream<Path> files = Files.list(index.getParent())) {
                names = files.map(f -> f.getFileName().toString()).sorted().toList();
            }
            final ByteArrayOutputStream err = new ByteArrayOutputStream();
            final PrintStream original = System.err;
            final int code;
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            try {
                code = ToolsCli.run("demo", "--seconds=1", "--dir=" + dir, "--cell=live", "--pods=4",
                    "--capacity=65536");
            } finally {
                System.setErr(original);
            }
            final String message = err.toString(StandardCharsets.UTF_8);
            assertEquals(1, code, message);
            assertTrue(message.contains("cell 'live' is already written by the kvidx process with pid "
                + ProcessHandle.current().pid()), message);
            assertEquals(key, Files.readAttributes(index, BasicFileAttributes.class).fileKey(),
                "the live index is not replaced");
            try (Stream<Path> files = Files.list(index.getParent())) {
                assertEquals(names, files.map(f -> f.getFileName().toString()).sorted().toList(),
                    "nothing was added to or removed from the live cell");
            }
            try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("live"))) {
                assertEquals(daemon.index().epoch(), reader.epoch(), "routers still read the daemon's index");
            }
        }
    }

    private static boolean cacheAwareWins(final String line) {
        final java.util.regex.Matcher m = java.util.regex.Pattern
            .compile("cache-aware +(\\d+)%.*round-robin +(\\d+)%").matcher(line);
        return m.find() && Integer.parseInt(m.group(1)) > Integer.parseInt(m.group(2));
    }

    @Test
    void shouldDescribeReaderStats() {
        final String line = DemoCommand.describe("STATS queries=1000 p50=150 p99=400 hits=900 depth=5000 "
            + "blocks=10000 entries=7 ca=4000 rr=600 dp50=700 dp99=900");
        assertTrue(line.contains("p50   150 ns"), line);
        assertTrue(line.contains("held  50%"), line);
        assertTrue(line.contains("cache-aware  40%"), line);
        assertTrue(line.contains("decision p50   700 ns"), line);
        assertTrue(line.contains("round-robin   6%"), line);
        final String text = DemoCommand.describe("STATS queries=500 p50=2000 p99=4000 hits=450 depth=5000 "
            + "blocks=10000 entries=7 ca=4500 rr=3000 dp50=1200000 dp99=3000000 tok=260000");
        assertTrue(text.contains("520 tokens/request"), text);
        assertTrue(text.contains("routed text: cache-aware  45%"), text);
        assertTrue(text.contains("tokenize + decide p50  1,200 us"), text);
        assertTrue(text.contains("round-robin  30%"), text);
    }
}
