package io.kvidx.tokenize;

import io.kvidx.routing.TokenIds;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The prefix cache against the plain model: on sequences of requests that share prefixes (multi-turn chats rendered
 * as Qwen3's template does, branches, and plain prompts with special tokens inside), the cached path gives exactly
 * the token ids of encoding each whole text, and the bounds hold after every request.
 */
class PrefixCachePropertyTest {
    private static final HfTokenizer TOKENIZER = HfTokenizer.load(TestData.qwen3Dir(), true);
    private static final PrefixBoundaries BOUNDARIES = PrefixBoundaries.read(TOKENIZER.file());

    /** Pieces chosen to stress the tokenizer at and near the boundaries. */
    private static final String[] PIECES = {"hello", " world", "the", " cache", "路由", "東京", "привет", "é", "e\u0301",
        "🙂", "12345", " 7", "\n", "\n\n", "\r\n", "  ", "   \n", "\t", " ", "<|im_end|>", "<|im_start|>",
        "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|im_", "|>", "<", ">", "'s", " don't", ".", "!!",
        "`x += 1;`", "{\"a\": 1}", "<|vision_start|>"};

    @AfterContainer
    static void close() {
        TOKENIZER.close();
    }

    @Provide
    Arbitrary<String> content() {
        return Arbitraries.of(PIECES).list().ofMinSize(0).ofMaxSize(24).map(l -> String.join("", l));
    }

    /** A conversation: its messages (role, content), alternating user and assistant after an optional system. */
    @Provide
    Arbitrary<List<String[]>> conversation() {
        final Arbitrary<String[]> message = Combinators.combine(Arbitraries.of("user", "assistant", "tool", "system"),
            content()).as((r, c) -> new String[] {r, c});
        return message.list().ofMinSize(1).ofMaxSize(8);
    }

    /** ChatML as Qwen3's template writes it, with the generation prompt. */
    static String render(final List<String[]> messages, final int upTo, final boolean generationPrompt) {
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < upTo; i++) {
            sb.append("<|im_start|>").append(messages.get(i)[0]).append('\n').append(messages.get(i)[1])
                .append("<|im_end|>\n");
        }
        if (generationPrompt) {
            sb.append("<|im_start|>assistant\n");
        }
        return sb.toString();
    }

    private static void checkExact(final PrefixCache cache, final String text, final boolean add,
        final TokenIds out) {
        cache.encode(text, add, out);
        final int[] expected = TOKENIZER.encode(text, add);
        assertArrayEquals(expected, Arrays.copyOf(out.ids(), out.length()), () -> "text: " + text);
    }

    @Property(tries = 150)
    void shouldEncodeMultiTurnChatsExactly(@ForAll("conversation") final List<String[]> a,
        @ForAll("conversation") final List<String[]> b, @ForAll("content") final String edit) {
        final PrefixCache cache = new PrefixCache(TOKENIZER, BOUNDARIES, 4096, 1 << 20);
        final TokenIds out = new TokenIds();
        // Two conversations interleaved, each request re-sending the history, then a branch of the first.
        final int turns = Math.max(a.size(), b.size());
        for (int k = 1; k <= turns; k++) {
            if (k <= a.size()) {
                checkExact(cache, render(a, k, true), false, out);
            }
            if (k <= b.size()) {
                checkExact(cache, render(b, k, k % 2 == 0), false, out);
            }
        }
        final List<String[]> branch = new ArrayList<>(a.subList(0, a.size() - 1));
        branch.add(new String[] {"user", edit});
        checkExact(cache, render(branch, branch.size(), true), false, out);
        checkExact(cache, render(a, a.size(), true) + edit, false, out);
        assertTrue(a.size() < 2 || cache.hits() > 0, "later turns reuse earlier ones");
    }

    @Property(tries = 150)
    void shouldEncodePlainPromptsWithSpecialTokensExactly(@ForAll("content") final String head,
        @ForAll("content") final String middle, @ForAll("content") final String tail) {
        final PrefixCache cache = new PrefixCache(TOKENIZER, BOUNDARIES, 4096, 1 << 20);
        final TokenIds out = new TokenIds();
        checkExact(cache, head, true, out);
        checkExact(cache, head + middle, true, out);
        checkExact(cache, head + middle + tail, true, out);
        checkExact(cache, head + tail + middle, true, out);
        checkExact(cache, head + middle + tail, false, out);
    }

    @Property(tries = 100)
    void shouldStayWithinBoundsAndExactWhenEvicting(@ForAll("conversation") final List<String[]> a,
        @ForAll("conversation") final List<String[]> b,
        @ForAll("entriesBound") final int maxEntries, @ForAll("tokensBound") final int maxTokens) {
        final PrefixCache cache = new PrefixCache(TOKENIZER, BOUNDARIES, maxEntries, maxTokens);
        final TokenIds out = new TokenIds();
        for (int round = 0; round < 2; round++) {
            for (int k = 1; k <= Math.max(a.size(), b.size()); k++) {
                if (k <= a.size()) {
                    checkExact(cache, render(a, k, true), false, out);
                }
                assertTrue(cache.entries() <= maxEntries, "entries " + cache.entries() + " > " + maxEntries);
                assertTrue(cache.cachedTokens() <= maxTokens, "tokens " + cache.cachedTokens() + " > " + maxTokens);
                if (k <= b.size()) {
                    checkExact(cache, render(b, k, true), false, out);
                }
                assertTrue(cache.entries() <= maxEntries, "entries " + cache.entries() + " > " + maxEntries);
                assertTrue(cache.cachedTokens() <= maxTokens, "tokens " + cache.cachedTokens() + " > " + maxTokens);
                assertEquals(cache.cachedTokens(), cache.reachableTokens(), "an evicted entry is kept by a child");
            }
        }
    }

    @Provide
    Arbitrary<Integer> entriesBound() {
        return Arbitraries.integers().between(1, 6);
    }

    @Provide
    Arbitrary<Integer> tokensBound() {
        return Arbitraries.integers().between(1, 200);
    }
}
