package io.kvidx.tools;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.client.json.MiniJson;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.cli.CliRun;
import io.kvidx.daemon.index.TestHeartbeat;
import io.kvidx.daemon.index.TestIndexes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code kvidx query} names each pod by its pod table entry: after a slot changed hands, the new pod, with the
 * slot's new generation; a prompt given as text is tokenized with the model's tokenizer as vLLM tokenized it.
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
    void shouldListDataParallelRankPodsUnderTheirOwnIds() {
        final int[] tokens = new int[64];
        Arrays.setAll(tokens, i -> 300 + i);
        final long[] keys = new long[4];
        new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed("m", null, null), tokens, tokens.length, keys);
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("q").shardCount(4)
            .slotsPerShard(64).maxChainLength(64).deleteOnClose(true))) {
            writer.store(writer.registerPod("dp", "m"), keys, 0, 4);
            writer.store(writer.registerPod("dp#1", "m"), keys, 0, 1);
            writer.store(writer.registerPod("dp#2", "m"), keys, 0, 3);
            assertEquals("dp 4 slot=0 generation=1\ndp#2 3 slot=2 generation=1\ndp#1 1 slot=1 generation=1",
                query(tokens));
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

    @Test
    void shouldTokenizeTextWithTheModelsTokenizerAsVllmDid() throws IOException {
        // Ground truth: a real vLLM capture (Qwen/Qwen3-0.6B, block size 16): its prompt and the first 400 token ids
        // vLLM made of it. The index holds the router keys of those ids; the query gets only the text.
        final Capture capture = Capture.load("kv_event_base.json");
        @SuppressWarnings("unchecked")
        final Map<String, Object> raw = (Map<String, Object>) MiniJson.parse(
            Files.readString(Capture.sharedDir().resolve("kv_event_base.json")));
        final String prompt = (String) raw.get("prompt");
        assertEquals(400, capture.tokenIds().length);
        final long[] keys = new long[25];
        assertEquals(25, new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed(capture.model(), null, null),
            capture.tokenIds(), 400, keys));
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("q").shardCount(4)
            .slotsPerShard(64).maxChainLength(64).deleteOnClose(true));
             TestHeartbeat _ = new TestHeartbeat(writer)) {
            writer.store(writer.registerPod("pod-a", capture.model()), keys, 0, 25);
            writer.store(writer.registerPod("pod-b", capture.model()), keys, 0, 10);
            final String[] text = {"query", "--dir", dir.toString(), "--cell", "q", "--model", capture.model(),
                "--tokenizer", qwen3Dir().toString(), "--text", prompt};
            final CliRun r = run(text);
            assertEquals(0, r.code(), r.err());
            assertEquals("pod-a 25 slot=0 generation=1\npod-b 10 slot=1 generation=1", r.out());
            // The tokenizer file itself works too, and --no-add-special-tokens changes nothing for Qwen3 (its
            // post-processor adds no BOS), as in vLLM.
            final List<String> file = new java.util.ArrayList<>(List.of(text));
            file.set(8, qwen3Dir().resolve("tokenizer.json").toString());
            file.add("--no-add-special-tokens");
            assertEquals("pod-a 25 slot=0 generation=1\npod-b 10 slot=1 generation=1",
                ok(run(file.toArray(String[]::new))));
            // Another model's seed finds nothing: the keys are the model's.
            text[6] = "other-model";
            assertEquals("", ok(run(text)));
        }
    }

    @Test
    void shouldRenderAChatWithTheModelsTemplateThenQuery() throws IOException {
        // What vLLM's chat endpoint makes of this request with Qwen3's template (add_generation_prompt defaults to
        // true), written out by hand; the user's text is padded until the prompt fills whole blocks, so that its
        // last block holds the generation prompt. The index holds the keys of that text's tokens.
        final String system = "You are a terse assistant.";
        String user = "Summarise the history of the printing press in Europe, from Gutenberg's movable type in Mainz"
            + " around 1450 to the spread of presses across Venice, Paris and London.";
        int[] ids;
        try (io.kvidx.tokenize.HfTokenizer t = io.kvidx.tokenize.HfTokenizer.load(qwen3Dir(), false)) {
            for (int pad = 0; ; pad++) {
                assertTrue(pad < 64, "no padding made whole blocks");
                ids = t.encode("<|im_start|>system\n" + system + "<|im_end|>\n<|im_start|>user\n" + user
                    + "<|im_end|>\n<|im_start|>assistant\n", false);
                if (ids.length % 16 == 0) {
                    break;
                }
                user += " yes";
            }
        }
        final int blocks = ids.length / 16;
        final long[] keys = new long[blocks];
        new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed("qwen3", null, null), ids, ids.length, keys);
        final Path chat = dir.resolve("chat.json");
        final String body = "{\"model\": \"qwen3\", \"messages\": [{\"role\": \"system\", \"content\": \""
            + system + "\"}, {\"role\": \"user\", \"content\": \"" + user + "\"}]}";
        Files.writeString(chat, body);
        final String[] args = {"query", "--dir", dir.toString(), "--cell", "q", "--model", "qwen3", "--tokenizer",
            qwen3Dir().toString(), "--messages", chat.toString()};
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("q").shardCount(4)
            .slotsPerShard(64).maxChainLength(64).deleteOnClose(true));
             TestHeartbeat _ = new TestHeartbeat(writer)) {
            writer.store(writer.registerPod("pod-a", "qwen3"), keys, 0, blocks);
            final CliRun r = run(args);
            assertEquals(0, r.code(), r.err());
            assertEquals("pod-a " + blocks + " slot=0 generation=1", r.out());
            // Without the generation prompt the text ends after the user's turn: the last block is not full.
            Files.writeString(chat, body.replace("{\"model\"", "{\"add_generation_prompt\": false, \"model\""));
            assertEquals("pod-a " + (blocks - 1) + " slot=0 generation=1", ok(run(args)));
            // A body that is not a chat request is a usage error.
            Files.writeString(chat, "{\"prompt\": \"hi\"}");
            final CliRun bad = run(args);
            assertEquals(2, bad.code());
            assertTrue(bad.err().contains("needs \"messages\""), bad.err());
        }
    }

    @Test
    void shouldRefuseATextPromptItCannotTokenize() {
        final String base = "query --dir " + dir + " --cell q --model m ";
        final CliRun neither = run((base).trim().split(" "));
        assertEquals(2, neither.code());
        assertTrue(neither.err().contains("give the prompt as --tokens"), neither.err());
        final CliRun both = run((base + "--tokens 1,2 --text hi --tokenizer " + qwen3Dir()).split(" "));
        assertEquals(2, both.code());
        assertTrue(both.err().contains("not both"), both.err());
        final CliRun textAndChat = run((base + "--text hi --messages x.json --tokenizer " + qwen3Dir()).split(" "));
        assertEquals(2, textAndChat.code());
        assertTrue(textAndChat.err().contains("not both"), textAndChat.err());
        final CliRun chatNoTokenizer = run((base + "--messages x.json").split(" "));
        assertEquals(2, chatNoTokenizer.code());
        assertTrue(chatNoTokenizer.err().contains("--messages needs --tokenizer"), chatNoTokenizer.err());
        final CliRun chatMissing = run((base + "--messages " + dir.resolve("none.json") + " --tokenizer "
            + qwen3Dir()).split(" "));
        assertEquals(2, chatMissing.code());
        assertTrue(chatMissing.err().contains("cannot read --messages"), chatMissing.err());
        final CliRun noTokenizer = run((base + "--text hi").split(" "));
        assertEquals(2, noTokenizer.code());
        assertTrue(noTokenizer.err().contains("--text needs --tokenizer"), noTokenizer.err());
        final CliRun tokensWithTokenizer = run((base + "--tokens 1,2 --tokenizer " + qwen3Dir()).split(" "));
        assertEquals(2, tokensWithTokenizer.code());
        assertTrue(tokensWithTokenizer.err().contains("--tokenizer is for --text"), tokensWithTokenizer.err());
        final CliRun missing = run((base + "--text hi --tokenizer " + dir.resolve("none")).split(" "));
        assertEquals(2, missing.code());
        assertTrue(missing.err().contains("no readable tokenizer file"), missing.err());
        final CliRun notATokenizer = run((base + "--text hi --tokenizer " + dir).split(" "));
        assertEquals(2, notATokenizer.code());
        assertTrue(notATokenizer.err().contains("a directory must hold tokenizer.json"), notATokenizer.err());
    }

    private static Path qwen3Dir() {
        try {
            return Path.of(QueryCommandTest.class.getResource("/qwen3/tokenizer.json").toURI()).getParent();
        } catch (final URISyntaxException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /**
     * @param r a run that must succeed.
     * @return what it printed.
     */
    private static String ok(final CliRun r) {
        assertEquals(0, r.code(), r.err());
        return r.out();
    }

    private static CliRun run(final String... args) {
        final CliRun r = CliRun.of(ToolsCli::run, args);
        return new CliRun(r.code(), r.out().strip(), r.err());
    }

    private String query(final int[] tokens, final String... more) {
        final List<String> args = new java.util.ArrayList<>(List.of("query", "--dir", dir.toString(), "--cell", "q",
            "--model", "m", "--tokens",
            Arrays.stream(tokens).mapToObj(Integer::toString).collect(Collectors.joining(","))));
        args.addAll(List.of(more));
        final CliRun r = run(args.toArray(new String[0]));
        assertEquals(0, r.code(), r.err());
        return r.out();
    }
}
