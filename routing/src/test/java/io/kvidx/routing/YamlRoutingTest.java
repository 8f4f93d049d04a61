package io.kvidx.routing;

import io.kvidx.routing.yaml.YamlRouting;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class YamlRoutingTest {
    private static final String GOOD = """
        profiles:
          cache-aware:
            prepare:
              - block-keys
              - {type: prefix-query, mode: index-and-overlay, ttl-ms: 2000}
            filter: [alive, model]
            score:
              - {type: cache-affinity, weight: 2}
              - {type: least-load, weight: 1, metric: requests}
            pick: {type: max-score}
            fallback: {type: power-of-two, metric: running}
          round-robin:
            filter: [alive]
            score: [{type: round-robin, weight: 1}]
            pick: max-score
        workflow: {type: single, profile: cache-aware}
        """;

    private final PodRegistry registry = PluginTestSupport.registry(6);
    private final MapPodIndex index = new MapPodIndex();
    private YamlRouting.Environment env;

    @BeforeEach
    void fleet() {
        for (int s = 0; s < 6; s++) {
            index.pod(s, "pod-" + s, "m");
        }
        env = new YamlRouting.Environment().index(index).registry(registry).keyFunction(TestKeys.KEYS)
            .blockSize(TestKeys.BLOCK);
    }

    private ProfileValidationException fails(final String yaml) {
        return assertThrows(ProfileValidationException.class, () -> YamlRouting.parse(yaml, env));
    }

    @Test
    void shouldLoadProfilesAndRouteLikeCode(@TempDir final Path dir) throws IOException {
        final Path file = dir.resolve("routing.yaml");
        Files.writeString(file, GOOD);
        final YamlRouting.Loaded loaded = YamlRouting.load(file, env);
        assertEquals(2, loaded.profiles().size());
        final Profile p = loaded.profiles().get("cache-aware");
        assertEquals(2, p.preparers().size());
        assertEquals(2.0, p.weight(0));
        assertEquals("power-of-two", p.fallback().name());
        final int[] prompt = TestKeys.tokens(4, 64);
        index.store(3, TestKeys.chain(prompt), 16);
        final Router router = loaded.router();
        final RoutingContext ctx = router.newContext();
        assertEquals(3, router.route(ctx, prompt, prompt.length));
    }

    @Test
    void shouldPickTheNonSuspectPodOfTwoHoldingThePrefixUnlessSuspectsAreTrusted() {
        final int[] prompt = TestKeys.tokens(6, 64);
        index.store(2, TestKeys.chain(prompt), 16).store(3, TestKeys.chain(prompt), 16).suspect(2, true);
        final String yaml = """
            profiles:
              p:
                prepare: [block-keys, prefix-query]
                filter: [alive]
                score: [{type: cache-affinity%s}]
                pick: {type: max-score, tie-break: random}
            workflow: {type: single, profile: p}
            """;
        final Router distrusting = YamlRouting.parse(yaml.formatted(""), env).router();
        final RoutingContext ctx = distrusting.newContext();
        for (int i = 0; i < 32; i++) {
            assertEquals(3, distrusting.route(ctx, prompt, prompt.length), "the suspect pod's depth is not trusted");
        }
        final Router trusting = YamlRouting.parse(yaml.formatted(", trust-suspect: true"), env).router();
        final RoutingContext tctx = trusting.newContext();
        final boolean[] picked = new boolean[6];
        for (int i = 0; i < 64; i++) {
            picked[trusting.route(tctx, prompt, prompt.length)] = true;
        }
        assertTrue(picked[2] && picked[3], "trusted: both score alike, ties broken at random");
    }

    @Test
    void shouldBuildAPrefillDecodeWorkflow() {
        final YamlRouting.Loaded loaded = YamlRouting.parse("""
            profiles:
              prefill:
                prepare: [router-keys, prefix-query]
                filter: [{type: role, role: prefill}]
                score: [{type: cache-affinity}]
                pick: max-score
              decode:
                inputs: [prefill-pick, block-keys]
                filter: [{type: role, role: decode}, {type: concurrency, cap: 8}]
                score: [{type: least-load, metric: tokens}]
                pick: {type: softmax, temperature: 0.5}
            workflow: {type: prefill-decode, prefill: prefill, decode: decode}
            """, env);
        assertTrue(loaded.workflow() instanceof PrefillDecodeWorkflow);
        assertEquals(2, loaded.workflow().selectors().size());
    }

    @Test
    void shouldNameTheReaderAndSlotWithoutWriter() {
        final ProfileValidationException ex = fails("""
            profiles:
              broken:
                score: [{type: cache-affinity, weight: 1}]
                pick: max-score
            """);
        assertEquals(ProfileValidationException.Kind.MISSING_WRITER, ex.problem());
        assertEquals("broken", ex.profile());
        assertEquals("cache-affinity", ex.plugin());
        assertEquals("prefix-depths", ex.slot());
    }

    @Test
    void shouldRejectUnknownTypesParametersAndBadValues() {
        ProfileValidationException ex = fails("""
            profiles:
              p:
                score: [{type: cache-afinity}]
                pick: max-score
            """);
        assertEquals(ProfileValidationException.Kind.BAD_DEFINITION, ex.problem());
        assertEquals("cache-afinity", ex.plugin());
        assertTrue(ex.getMessage().contains("unknown scorer type"), ex.getMessage());
        ex = fails("""
            profiles:
              p:
                score: [{type: round-robin, wieght: 2}]
                pick: max-score
            """);
        assertTrue(ex.getMessage().contains("wieght"), ex.getMessage());
        ex = fails("""
            profiles:
              p:
                score: [{type: round-robin, weight: -1}]
                pick: {type: softmax, temperature: 0}
            """);
        assertTrue(ex.problems().size() >= 2, ex.getMessage());
        assertTrue(ex.problems().stream().anyMatch(q -> q.kind() == ProfileValidationException.Kind.INVALID_WEIGHT));
        assertTrue(ex.problems().stream().anyMatch(q -> "softmax".equals(q.plugin())));
        ex = fails("""
            profiles:
              p:
                filter: [{type: role, role: sideways}]
                pick: max-score
            """);
        assertTrue(ex.getMessage().contains("sideways"), ex.getMessage());
    }

    @Test
    void shouldRejectBrokenDocumentsAndWorkflows() {
        assertEquals(ProfileValidationException.Kind.BAD_DEFINITION, fails("profiles: [unclosed").problem());
        assertTrue(fails("nothing: here").getMessage().contains("'profiles'"));
        final ProfileValidationException ex = fails(GOOD.replace("profile: cache-aware", "profile: nope"));
        assertTrue(ex.getMessage().contains("'nope'"), ex.getMessage());
        assertTrue(fails(GOOD.replace("workflow: {type: single, profile: cache-aware}", ""))
            .getMessage().contains("no workflow"));
    }

    @Test
    void shouldBuildPreparerTypesOfOptionalModulesWithPathsRelativeToTheFile(@TempDir final Path dir)
        throws IOException {
        final Path[] seen = new Path[2];
        env.preparerType(new io.kvidx.routing.yaml.PreparerType() {
            @Override
            public String type() {
                return "text";
            }

            @Override
            public Preparer create(final String name, final io.kvidx.routing.yaml.PluginParameters params) {
                seen[0] = params.path("file");
                seen[1] = params.resolve(params.stringMap("models").get("m"));
                return ProfileValidationTest.prep(name, java.util.Set.of(Slots.REQUEST),
                    java.util.Set.of(Slots.TOKENS));
            }
        });
        final Path file = dir.resolve("routing.yaml");
        Files.writeString(file, """
            profiles:
              p:
                prepare: [{type: text, file: a/t.json, models: {m: /abs/t.json}}, router-keys]
                pick: max-score
            """);
        final Profile p = YamlRouting.load(file, env).profiles().get("p");
        assertEquals("text", p.preparers().get(0).name());
        assertEquals(dir.toAbsolutePath().resolve("a/t.json"), seen[0]);
        assertEquals(Path.of("/abs/t.json"), seen[1]);
        final ProfileValidationException ex = fails("""
            profiles:
              p:
                prepare: [{type: text, models: [a]}]
                pick: max-score
            """);
        assertTrue(ex.getMessage().contains("'models' must be a mapping"), ex.getMessage());
    }

    @Test
    void shouldSayWhichJarTheTokenizePreparerNeeds() {
        final ProfileValidationException ex = fails("""
            profiles:
              p:
                prepare: [{type: tokenize, tokenizer: /models/qwen3}, router-keys]
                pick: max-score
            """);
        assertTrue(ex.getMessage().contains("'tokenize' needs the kvidx-tokenize jar on the class path"),
            ex.getMessage());
    }
}
