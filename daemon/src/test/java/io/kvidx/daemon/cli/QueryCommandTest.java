package io.kvidx.daemon.cli;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.index.TestIndexes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@code kvidx query} names each pod by its pod table entry: after a slot changed hands, the new pod, with the
 * slot's new generation.
 */
@Timeout(30)
class QueryCommandTest {
    @TempDir
    Path dir;

    @Test
    void shouldPrintSlotGenerationAndPodIdOfAReusedSlot() {
        final int[] tokens = new int[64];
        Arrays.setAll(tokens, i -> 100 + i);
        final long[] keys = new long[4];
        new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed("m", null, null), tokens, tokens.length, keys);
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("q").shardCount(4)
            .slotsPerShard(64).maxChainLength(64).deleteOnClose(true))) {
            final int a = writer.registerPod("pod-a", "m");
            final int b = writer.registerPod("pod-b", "m");
            writer.store(a, keys, 0, 4);
            writer.store(b, keys, 0, 2);
            assertEquals("pod-a 4 slot=0 generation=1\npod-b 2 slot=1 generation=1", query(tokens));
            TestIndexes.fillFreeSlots(writer);
            writer.podDown(a);
            while (writer.isSweeping()) {
                writer.sweepStep();
            }
            assertEquals(a, writer.registerPod("pod-c", "m"));
            writer.store(a, keys, 0, 3);
            assertEquals("pod-c 3 slot=0 generation=2\npod-b 2 slot=1 generation=1", query(tokens));
            writer.markSuspect(b, true);
            assertEquals("pod-c 3 slot=0 generation=2\npod-b 2 slot=1 generation=1 suspect", query(tokens));
        }
    }

    @Test
    void shouldQueryWithMultimodalItemsLoraAndSalt() {
        final int[] tokens = new int[64];
        Arrays.fill(tokens, 151_655);
        final io.kvidx.client.keys.RequestExtras image = new io.kvidx.client.keys.RequestExtras()
            .addMultiModal("img-a", 8, 40);
        final long[] keys = new long[4];
        new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed("m", "Alice", "t1"), tokens, 64, image, keys);
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("q").shardCount(4)
            .slotsPerShard(64).maxChainLength(64).deleteOnClose(true))) {
            writer.store(writer.registerPod("pod-a", "m"), keys, 0, 4);
            assertEquals("pod-a 4 slot=0 generation=1", query(tokens, "--lora-name", "Alice", "--cache-salt", "t1",
                "--mm", "img-a:8:40"));
            assertEquals("", query(tokens, "--lora-name", "Alice", "--cache-salt", "t1", "--mm", "img-b:8:40"));
            assertEquals("", query(tokens, "--lora-name", "Alice", "--mm", "img-a:8:40"));
            assertEquals("", query(tokens, "--cache-salt", "t1", "--mm", "img-a:8:40"));
        }
    }

    private String query(final int[] tokens, final String... more) {
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final PrintStream original = System.out;
        final int code;
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            final java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of("query", "--dir",
                dir.toString(), "--cell", "q", "--model", "m", "--tokens",
                Arrays.stream(tokens).mapToObj(Integer::toString).collect(Collectors.joining(","))));
            args.addAll(java.util.List.of(more));
            code = KvidxCli.run(args.toArray(new String[0]));
        } finally {
            System.setOut(original);
        }
        final String out = captured.toString(StandardCharsets.UTF_8).strip();
        assertEquals(0, code, out);
        return out;
    }
}
