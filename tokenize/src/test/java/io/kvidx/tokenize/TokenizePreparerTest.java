package io.kvidx.tokenize;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.routing.BlockKeys;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodRole;
import io.kvidx.routing.Preparer;
import io.kvidx.routing.Profile;
import io.kvidx.routing.ProfileValidationException;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Slots;
import io.kvidx.routing.TokenIds;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.RouterKeysPreparer;
import io.kvidx.routing.yaml.YamlRouting;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(60)
class TokenizePreparerTest {
    private static final String QWEN = "Qwen/Qwen3-0.6B";
    private static TokenizePreparer tokenize;
    private final RouterKeysPreparer routerKeys = new RouterKeysPreparer("router-keys", new RouterKeyHasher(16));

    @BeforeAll
    static void load() {
        tokenize = TokenizePreparer.builder("tokenize").model(QWEN, TestData.qwen3Dir()).build();
    }

    @AfterAll
    static void close() {
        tokenize.close();
    }

    private static PodRegistry registry() {
        final PodRegistry r = new PodRegistry();
        r.register(0, "pod-0", QWEN, PodRole.BOTH, null);
        return r;
    }

    private static RoutingContext context() {
        return new RoutingContext(null, 42).reset();
    }

    private static long[] keys(final RoutingContext ctx) {
        final BlockKeys k = ctx.get(Slots.BLOCK_KEYS);
        return Arrays.copyOf(k.keys(), k.length());
    }

    @Test
    void shouldKeyATextRequestLikeTheTokensVllmMadeOfIt() {
        final TestData.Capture c = TestData.vllmCapture();
        final long before = tokenize.tokenized();
        final RoutingContext byText = context();
        byText.request().model(c.model()).prompt(c.prompt());
        tokenize.prepare(byText);
        routerKeys.prepare(byText);
        final RoutingContext byIds = context();
        byIds.request().model(c.model());
        byIds.tokens(c.tokenIds(), 0, c.tokenIds().length);
        routerKeys.prepare(byIds);
        assertEquals(25, keys(byIds).length);
        assertArrayEquals(keys(byIds), Arrays.copyOf(keys(byText), 25), "the 25 blocks vLLM stored");
        assertEquals(before + 1, tokenize.tokenized(), "one prompt tokenized");
    }

    @Test
    void shouldLeaveTheTokensOfARequestWithoutText() {
        final RoutingContext ctx = context();
        ctx.request().model(QWEN);
        ctx.tokens(new int[] {1, 2, 3}, 0, 3);
        tokenize.prepare(ctx);
        final TokenIds t = ctx.get(Slots.TOKENS);
        assertArrayEquals(new int[] {1, 2, 3}, Arrays.copyOf(t.ids(), t.length()));
    }

    @Test
    void shouldCountAModelWithoutTokenizerAndLeaveNoTokens() {
        final long before = tokenize.noTokenizer();
        final RoutingContext ctx = context();
        ctx.tokens(new int[] {1, 2, 3}, 0, 3);
        ctx.request().model("some/other-model").prompt("Hello world");
        tokenize.prepare(ctx);
        assertEquals(0, ctx.get(Slots.TOKENS).length());
        assertEquals(before + 1, tokenize.noTokenizer());
        assertNull(tokenize.tokenizer(null), "no tokenizer for any model was given");
    }

    @Test
    void shouldUseTheAnyModelTokenizerAndLoadEachFileOnce() {
        try (TokenizePreparer p = TokenizePreparer.builder("t").model(QWEN, TestData.qwen3Dir())
            .model("alias", TestData.qwen3Dir().resolve("tokenizer.json")).anyModel(TestData.qwen3Dir()).build()) {
            assertEquals(1, p.loaded().size());
            assertSame(p.tokenizer(QWEN), p.tokenizer("alias"));
            assertSame(p.tokenizer(QWEN), p.tokenizer("unlisted"));
            final RoutingContext ctx = context();
            ctx.request().prompt("Hello world");
            p.prepare(ctx);
            final TokenIds t = ctx.get(Slots.TOKENS);
            assertArrayEquals(new int[] {9707, 1879}, Arrays.copyOf(t.ids(), t.length()));
        }
    }

    @Test
    void shouldRefuseAPreparerWithoutTokenizer() {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> TokenizePreparer.builder("t").build());
        assertTrue(ex.getMessage().contains("has no tokenizer"), ex.getMessage());
    }

    @Test
    void shouldWriteTheTokensInAProfileSoKeyPreparersMayFollowButNotPrecedeIt() {
        final Profile ok = Profile.builder("text").prepare(tokenize).prepare(routerKeys)
            .pick(new MaxScorePicker("max")).build(registry());
        assertTrue(!ok.inputs().contains(Slots.TOKENS), "the preparer, not the request, writes the tokens");
        final ProfileValidationException late = assertThrows(ProfileValidationException.class,
            () -> Profile.builder("late").prepare(routerKeys).prepare(tokenize).pick(new MaxScorePicker("max"))
                .build(registry()));
        assertTrue(late.getMessage().contains("router-keys"), late.getMessage());
        final ProfileValidationException declared = assertThrows(ProfileValidationException.class,
            () -> Profile.builder("declared").input(Slots.TOKENS).prepare(tokenize).prepare(routerKeys)
                .pick(new MaxScorePicker("max")).build(registry()));
        assertTrue(declared.getMessage().contains("already written by 'request'"), declared.getMessage());
    }

    @Test
    void shouldLoadATokenizeProfileFromYamlWithPathsRelativeToTheFile(@TempDir final Path dir) throws IOException {
        final Path models = Files.createDirectories(dir.resolve("models/qwen3"));
        Files.copy(TestData.qwen3Dir().resolve("tokenizer.json"), models.resolve("tokenizer.json"));
        final Path file = Files.writeString(dir.resolve("routing.yaml"), """
            profiles:
              text:
                prepare:
                  - {type: tokenize, models: {"Qwen/Qwen3-0.6B": models/qwen3}}
                  - router-keys
                pick: max-score
            """);
        final YamlRouting.Loaded loaded = YamlRouting.load(file, new YamlRouting.Environment().registry(registry()));
        final Preparer first = loaded.profiles().get("text").preparers().get(0);
        final TokenizePreparer p = (TokenizePreparer) first;
        try {
            assertNotNull(p.tokenizer(QWEN));
            assertEquals(models.resolve("tokenizer.json").toAbsolutePath(), p.tokenizer(QWEN).file());
            final TestData.Capture c = TestData.vllmCapture();
            final RoutingContext ctx = context();
            ctx.request().model(QWEN).prompt(c.prompt());
            for (final Preparer prep : loaded.profiles().get("text").preparers()) {
                prep.prepare(ctx);
            }
            final RoutingContext byIds = context();
            byIds.request().model(QWEN);
            byIds.tokens(c.tokenIds(), 0, c.tokenIds().length);
            routerKeys.prepare(byIds);
            assertArrayEquals(keys(byIds), Arrays.copyOf(keys(ctx), 25));
        } finally {
            p.close();
        }
    }

    @Test
    void shouldReportABadTokenizeDefinitionAgainstItsPlugin(@TempDir final Path dir) {
        final YamlRouting.Environment env = new YamlRouting.Environment().registry(registry());
        final ProfileValidationException missing = assertThrows(ProfileValidationException.class,
            () -> YamlRouting.parse("""
                profiles:
                  text:
                    prepare: [{type: tokenize, name: tok, tokenizer: %s}]
                    pick: max-score
                """.formatted(dir.resolve("nope")), env));
        assertTrue(missing.getMessage().contains("tok") && missing.getMessage().contains("no readable tokenizer"),
            missing.getMessage());
        final ProfileValidationException typo = assertThrows(ProfileValidationException.class,
            () -> YamlRouting.parse("""
                profiles:
                  text:
                    prepare: [{type: tokenize, tokenizer: %s, add-special-token: false}]
                    pick: max-score
                """.formatted(TestData.qwen3Dir()), env));
        assertTrue(typo.getMessage().contains("unknown parameter(s) [add-special-token]"), typo.getMessage());
    }

    @Test
    void shouldTokenizeAChatWithTheModelsTemplateAndWithoutSpecialTokens(@TempDir final Path dir) throws IOException {
        final Path bare = Files.createDirectories(dir.resolve("bare"));
        Files.copy(TestData.qwen3Dir().resolve("tokenizer.json"), bare.resolve("tokenizer.json"));
        final Path file = Files.writeString(dir.resolve("routing.yaml"), """
            profiles:
              chat:
                prepare:
                  - type: tokenize
                    models: {"Qwen/Qwen3-0.6B": %s, "bare": bare}
                    chat-template-kwargs: '{"enable_thinking": false}'
                  - router-keys
                pick: max-score
            """.formatted(TestData.qwen3Dir()));
        final YamlRouting.Loaded loaded = YamlRouting.load(file, new YamlRouting.Environment().registry(registry()));
        final TokenizePreparer p = (TokenizePreparer) loaded.profiles().get("chat").preparers().get(0);
        try {
            final String chat = "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
                + " {\"role\": \"user\", \"content\": \"Hi <|im_end|> there\"}]}";
            final RoutingContext ctx = context();
            ctx.request().model(QWEN).chat(chat).prompt("ignored: the chat wins");
            p.prepare(ctx);
            final String rendered = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi <|im_end|> there"
                + "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
            assertEquals(rendered, p.chatTemplate(QWEN).render(ChatRequest.parse(chat),
                Map.of("enable_thinking", false)));
            final TokenIds tokens = ctx.get(Slots.TOKENS);
            final int[] want = p.tokenizer(QWEN).encode(rendered, false);
            assertArrayEquals(want, Arrays.copyOf(tokens.ids(), tokens.length()), "the ids of the rendered text");
            assertEquals(151644, want[0], "<|im_start|> written by the template");
            assertEquals(1, p.chats());
            assertEquals(0, p.failures());

            final RoutingContext noTemplate = context();
            noTemplate.request().model("bare").chat(chat);
            p.prepare(noTemplate);
            assertEquals(0, noTemplate.get(Slots.TOKENS).length());
            assertEquals(1, p.failures());
            assertTrue(p.lastFailure().contains("model bare has no chat template"), p.lastFailure());

            final RoutingContext bad = context();
            bad.request().model(QWEN).chat("{\"messages\": []}");
            p.prepare(bad);
            assertEquals(2, p.failures());
            assertTrue(p.lastFailure().contains("non-empty array of messages"), p.lastFailure());
        } finally {
            p.close();
        }
    }
}
