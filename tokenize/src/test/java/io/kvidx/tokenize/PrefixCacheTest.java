package io.kvidx.tokenize;

import io.kvidx.client.json.MiniJson;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodRole;
import io.kvidx.routing.ProfileValidationException;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slots;
import io.kvidx.routing.TokenIds;
import io.kvidx.routing.yaml.YamlRouting;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(120)
class PrefixCacheTest {
    private static final String QWEN = "Qwen/Qwen3-0.6B";
    private static HfTokenizer tokenizer;
    private static PrefixBoundaries boundaries;

    @BeforeAll
    static void load() {
        tokenizer = HfTokenizer.load(TestData.qwen3Dir(), true);
        boundaries = PrefixBoundaries.read(tokenizer.file());
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    private static Map<?, ?> json(final String text) {
        return (Map<?, ?>) MiniJson.parse(text);
    }

    private static String added(final String content, final boolean special, final String flags) {
        return "{\"id\": 1, \"content\": \"%s\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false,"
            .formatted(content) + " \"normalized\": false, \"special\": " + special + flags + "}";
    }

    @Test
    void shouldTakeQwen3sSpecialTokensAsBoundaries() {
        assertTrue(boundaries.enabled(), boundaries.disabledReason());
        assertEquals(14, boundaries.tokens().size(), boundaries.tokens().toString());
        assertTrue(boundaries.tokens().containsAll(List.of("<|im_start|>", "<|im_end|>", "<|endoftext|>")));
        assertFalse(boundaries.tokens().contains("<think>"), "not special");
        assertFalse(boundaries.tokens().contains("<tool_call>"), "not special");
    }

    @Test
    void shouldRefuseBoundariesWhereTheSplitWouldChangeTheIds() throws IOException {
        final String ok = added("<|a|>", true, "");
        assertEquals(List.of("<|a|>"), PrefixBoundaries.of(json("{\"added_tokens\": [" + ok + "]}")).tokens());
        // Flags that take neighbouring text, or match after normalization.
        assertFalse(PrefixBoundaries.of(json("{\"added_tokens\": [" + added("<|a|>", true, ", \"rstrip\": true")
            .replace("\"rstrip\": false,", "") + "]}")).enabled(), "rstrip");
        assertFalse(PrefixBoundaries.of(json("{\"added_tokens\": [" + added("<|a|>", true, ", \"lstrip\": true")
            .replace("\"lstrip\": false,", "") + "]}")).enabled(), "lstrip");
        assertFalse(PrefixBoundaries.of(json("{\"added_tokens\": [" + added("<|a|>", true,
            ", \"normalized\": true").replace("\"normalized\": false,", "") + "]}")).enabled(), "normalized");
        assertFalse(PrefixBoundaries.of(json("{\"added_tokens\": [" + added("<|a|>", false, "") + "]}")).enabled(),
            "not special");
        final PrefixBoundaries single = PrefixBoundaries.of(json("{\"added_tokens\": [" + ok + ", "
            + added("word", false, ", \"single_word\": true").replace("\"single_word\": false,", "") + "]}"));
        assertTrue(single.disabledReason().contains("single_word"), single.disabledReason());
        // Overlapping or containing added tokens.
        assertFalse(PrefixBoundaries.of(json("{\"added_tokens\": [" + ok + ", " + added("|>x", false, "")
            + "]}")).enabled(), "suffix of the boundary starts another token");
        assertFalse(PrefixBoundaries.of(json("{\"added_tokens\": [" + ok + ", " + added("y<|", false, "")
            + "]}")).enabled(), "prefix of the boundary ends another token");
        assertFalse(PrefixBoundaries.of(json("{\"added_tokens\": [" + ok + ", " + added("<|a|>\\n", true, "")
            + "]}")).tokens().contains("<|a|>"), "a longer token contains it");
        // Position-dependent pipelines.
        final PrefixBoundaries template = PrefixBoundaries.of(json("{\"post_processor\": {\"type\":"
            + " \"TemplateProcessing\"}, \"added_tokens\": [" + ok + "]}"));
        assertTrue(template.disabledReason().contains("TemplateProcessing"), template.disabledReason());
        final PrefixBoundaries metaspace = PrefixBoundaries.of(json("{\"pre_tokenizer\": {\"type\": \"Sequence\","
            + " \"pretokenizers\": [{\"type\": \"Metaspace\", \"prepend_scheme\": \"first\"}]}, \"added_tokens\": ["
            + ok + "]}"));
        assertTrue(metaspace.disabledReason().contains("Metaspace"), metaspace.disabledReason());
        assertTrue(PrefixBoundaries.of(json("{\"post_processor\": {\"type\": \"ByteLevel\"}, \"pre_tokenizer\":"
            + " {\"type\": \"Metaspace\", \"prepend_scheme\": \"always\"}, \"added_tokens\": [" + ok + "]}"))
            .enabled());
        assertThrows(IllegalArgumentException.class, () -> new PrefixCache(tokenizer,
            PrefixBoundaries.of(json("{\"added_tokens\": []}")), 1, 1));
    }

    @Test
    void shouldCountHitsAndTheTokensTheyCover() {
        final PrefixCache cache = new PrefixCache(tokenizer, boundaries, 16, 1 << 16);
        final TokenIds out = new TokenIds();
        final String first = "<|im_start|>system\nYou answer briefly, in English.<|im_end|>\n<|im_start|>user\n"
            + "What is a KV cache and why does routing care?<|im_end|>\n<|im_start|>assistant\n";
        final String second = first + "It holds attention keys and values.<|im_end|>\n<|im_start|>user\nThanks!"
            + "<|im_end|>\n<|im_start|>assistant\n";
        cache.encode(first, false, out);
        assertEquals(0, cache.hits());
        assertEquals(1, cache.misses());
        assertTrue(cache.entries() >= 1);
        cache.encode(second, false, out);
        assertArrayEquals(tokenizer.encode(second, false), Arrays.copyOf(out.ids(), out.length()));
        assertEquals(1, cache.hits());
        final String reused = first.substring(0, first.lastIndexOf("<|im_start|>") + "<|im_start|>".length());
        assertEquals(tokenizer.encode(reused, false).length, cache.tokensSaved(), "up to the last <|im_start|>");
        cache.encode("no special token here", true, out);
        assertEquals(2, cache.misses());
        assertEquals(0, cache.busy());
        assertEquals(0, cache.collisions());
    }

    /** Requests of many conversations sharing prefixes, and their ids as the plain tokenizer gives them. */
    private static List<String> requests(final long seed, final int conversations, final int turns) {
        final SplittableRandom r = new SplittableRandom(seed);
        final String[] words = {" the", " cache", " router", " 東京", " é", "\n", "\n\n", " 42", " <think>", "!", " "};
        final List<String> out = new ArrayList<>();
        for (int c = 0; c < conversations; c++) {
            final StringBuilder history = new StringBuilder("<|im_start|>system\nConversation " + c + ".<|im_end|>\n");
            for (int t = 0; t < turns; t++) {
                history.append("<|im_start|>").append(t % 2 == 0 ? "user" : "assistant").append('\n');
                for (int w = r.nextInt(5, 60); w > 0; w--) {
                    history.append(words[r.nextInt(words.length)]);
                }
                history.append("<|im_end|>\n");
                out.add(history + "<|im_start|>assistant\n");
            }
        }
        return out;
    }

    @Test
    void shouldEncodeExactlyFromFourThreads() throws Exception {
        final List<String> texts = requests(7, 24, 8);
        final int[][] expected = new int[texts.size()][];
        for (int i = 0; i < expected.length; i++) {
            expected[i] = tokenizer.encode(texts.get(i), false);
        }
        // Small enough to evict while the threads run.
        final PrefixCache cache = new PrefixCache(tokenizer, boundaries, 48, 4_000);
        final ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            final List<Future<Integer>> done = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                final int thread = t;
                done.add(pool.submit(() -> {
                    final TokenIds out = new TokenIds();
                    final SplittableRandom r = new SplittableRandom(thread);
                    int checked = 0;
                    for (int round = 0; round < 3; round++) {
                        // Each thread walks the conversations in its own order, turns in order.
                        final int offset = r.nextInt(24);
                        for (int k = 0; k < texts.size(); k++) {
                            final int conv = ((k / 8) + offset) % 24;
                            final int i = conv * 8 + k % 8;
                            cache.encode(texts.get(i), false, out);
                            assertArrayEquals(expected[i], Arrays.copyOf(out.ids(), out.length()), "request " + i);
                            checked++;
                        }
                    }
                    return checked;
                }));
            }
            for (final Future<Integer> f : done) {
                assertEquals(3 * texts.size(), f.get(60, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
        assertTrue(cache.hits() > 0, "hits");
        assertTrue(cache.evictions() > 0, "evictions");
        assertTrue(cache.entries() <= 48 && cache.cachedTokens() <= 4_000);
        assertEquals(cache.cachedTokens(), cache.reachableTokens());
        assertEquals(4L * 3 * texts.size(), cache.hits() + cache.misses() + cache.busy());
    }

    private static PodRegistry registry() {
        final PodRegistry r = new PodRegistry();
        r.register(0, "pod-0", QWEN, PodRole.BOTH, null);
        return r;
    }

    @Test
    void shouldCacheChatsAndPromptsOfAYamlProfile(@TempDir final Path dir) throws IOException {
        final Path file = Files.writeString(dir.resolve("routing.yaml"), """
            profiles:
              chat:
                prepare:
                  - type: tokenize
                    models: {"Qwen/Qwen3-0.6B": %s}
                    prefix-cache-entries: 64
                    prefix-cache-tokens: 100000
                  - router-keys
                pick: max-score
            """.formatted(TestData.qwen3Dir()));
        final YamlRouting.Loaded loaded = YamlRouting.load(file, new YamlRouting.Environment().registry(registry()));
        final TokenizePreparer p = (TokenizePreparer) loaded.profiles().get("chat").preparers().get(0);
        final TokenizePreparer plain = TokenizePreparer.builder("plain").model(QWEN, TestData.qwen3Dir()).build();
        try {
            final PrefixCache cache = p.prefixCache(QWEN);
            assertNotNull(cache);
            assertEquals(64, cache.maxEntries());
            assertEquals(100_000, cache.maxTokens());
            assertNull(plain.prefixCache(QWEN), "off unless configured");
            assertNull(p.prefixCacheDisabledReason(QWEN));
            final StringBuilder messages = new StringBuilder("{\"role\": \"system\", \"content\": \"Be brief.\"}");
            for (int turn = 0; turn < 4; turn++) {
                messages.append(", {\"role\": \"user\", \"content\": \"Question ").append(turn)
                    .append(": why <|im_end|> matters?\"}");
                final String chat = "{\"messages\": [" + messages + "]}";
                final RoutingContext cached = new RoutingContext(null, 42).reset();
                cached.request().model(QWEN).chat(chat);
                p.prepare(cached);
                final RoutingContext uncached = new RoutingContext(null, 42).reset();
                uncached.request().model(QWEN).chat(chat);
                plain.prepare(uncached);
                final TokenIds a = cached.get(Slots.TOKENS);
                final TokenIds b = uncached.get(Slots.TOKENS);
                assertArrayEquals(Arrays.copyOf(b.ids(), b.length()), Arrays.copyOf(a.ids(), a.length()));
                messages.append(", {\"role\": \"assistant\", \"content\": \"Answer ").append(turn).append(".\"}");
            }
            assertEquals(3, cache.hits());
            final RoutingContext prompt = new RoutingContext(null, 42).reset();
            prompt.request().model(QWEN).prompt("<|im_start|>user\nplain prompt<|im_end|>\n");
            p.prepare(prompt);
            assertEquals(tokenizer.encode("<|im_start|>user\nplain prompt<|im_end|>\n").length,
                prompt.get(Slots.TOKENS).length());
            assertEquals(0, p.failures());
        } finally {
            p.close();
            plain.close();
        }
        assertThrows(IllegalArgumentException.class,
            () -> TokenizePreparer.builder("x").model(QWEN, TestData.qwen3Dir()).prefixCache(-1, 10));
        final YamlRouting.Environment env = new YamlRouting.Environment().registry(registry());
        final ProfileValidationException tokensOnly = assertThrows(ProfileValidationException.class,
            () -> YamlRouting.parse("""
                profiles:
                  text:
                    prepare: [{type: tokenize, tokenizer: %s, prefix-cache-tokens: 1000}]
                    pick: max-score
                """.formatted(TestData.qwen3Dir()), env));
        assertTrue(tokensOnly.getMessage().contains("prefix-cache-tokens needs prefix-cache-entries"),
            tokensOnly.getMessage());
        final ProfileValidationException negative = assertThrows(ProfileValidationException.class,
            () -> YamlRouting.parse("""
                profiles:
                  text:
                    prepare: [{type: tokenize, tokenizer: %s, prefix-cache-entries: -5}]
                    pick: max-score
                """.formatted(TestData.qwen3Dir()), env));
        assertTrue(negative.getMessage().contains("prefix cache bounds must be >= 0"), negative.getMessage());
    }
}
