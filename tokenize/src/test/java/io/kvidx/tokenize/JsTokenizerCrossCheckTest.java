package io.kvidx.tokenize;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A few hundred generated prompts (unicode of many scripts, emoji sequences, whitespace runs, digits, contractions,
 * code, special tokens whole and broken) give the same token ids through {@link HfTokenizer} as through Hugging
 * Face's JavaScript implementation.
 */
@Timeout(600)
class JsTokenizerCrossCheckTest {
    private static final int PROMPTS = 300;

    private static final String[] WORDS = {
        "the", "The", "routing", "cache", " prefix", "KV", "don't", "we'll", "I'm", "they've", "it's", "Hello",
        "world", "naïve", "café", "Straße", "ÆØÅ", "İstanbul", "ǅ", "ﬁ", "東京", "漢字", "こんにちは", "カタカナ",
        "한국어", "Привет", "мир", "Ελληνικά", "مرحبا", "שלום", "हिन्दी", "ไทย", "ქართული", "Ⅻ", "①", "½",
        "🤖", "👩‍💻", "👍🏽", "🇫🇷", "❤️", "e\u0301", "a\u0308\u0323", "x²", "€100", "$3.50", "12345678",
        "3.14159", "0x7fff", "1e-9", "foo_bar", "fooBar", "def f(x):", "return x+1;", "{\"k\": [1, 2]}",
        "<div>", "</div>", "http://example.com/a?b=c", "C++", "--flag", "…", "—", "«quoted»", "„Zitat“",
    };
    private static final String[] SPACES = {
        " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\t\t ", "\u00A0", "\u3000", "\u2009", "\u200B",
        "    ", "\n\n\n\n", " \t\n\r",
    };
    private static final String[] SPECIALS = {
        "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
        "<|vision_start|>", "<|fim_prefix|>", "<|im_start", "im_end|>", "<|", "|>", "<|im_start|>user\n",
        "<|im_start|>assistant\n", " <|im_end|> ",
    };

    static List<String> prompts(final long seed, final int n) {
        final Random r = new Random(seed);
        final List<String> out = new ArrayList<>();
        out.addAll(List.of("", " ", "\n", "  leading", "trailing  ", "a", "<|im_start|>", "<|im_start|><|im_end|>",
            "   \n\n\t  ", "\u0000", "x\u0000y"));
        while (out.size() < n) {
            final StringBuilder b = new StringBuilder();
            final int parts = 1 + r.nextInt(40);
            for (int i = 0; i < parts; i++) {
                final int k = r.nextInt(10);
                if (k < 5) {
                    b.append(WORDS[r.nextInt(WORDS.length)]);
                } else if (k < 8) {
                    b.append(SPACES[r.nextInt(SPACES.length)]);
                } else if (k < 9) {
                    b.append(SPECIALS[r.nextInt(SPECIALS.length)]);
                } else {
                    b.appendCodePoint(randomCodePoint(r));
                }
            }
            out.add(b.toString());
        }
        return out;
    }

    /** A random assigned, non-surrogate code point from a few planes. */
    private static int randomCodePoint(final Random r) {
        while (true) {
            final int cp = switch (r.nextInt(4)) {
                case 0 -> 0x20 + r.nextInt(0x60);
                case 1 -> 0xA0 + r.nextInt(0x2000);
                case 2 -> 0x3000 + r.nextInt(0x7000);
                default -> 0x1F300 + r.nextInt(0x300);
            };
            if (Character.isDefined(cp) && !Character.isSurrogate((char) cp)) {
                return cp;
            }
        }
    }

    @Test
    void shouldGiveTheTokenIdsOfHuggingFacesJavaScriptTokenizer(@TempDir final Path dir)
        throws IOException, InterruptedException {
        NodeReference.require();
        final List<String> prompts = prompts(20261123L, PROMPTS);
        final Path file = Files.writeString(dir.resolve("prompts.json"), new Gson().toJson(prompts));
        final JsonArray js = JsonParser.parseString(NodeReference.encode(TestData.qwen3Dir(), file))
            .getAsJsonArray();
        assertEquals(prompts.size(), js.size());
        int tokens = 0;
        try (HfTokenizer qwen3 = HfTokenizer.load(TestData.qwen3Dir(), true)) {
            for (int i = 0; i < prompts.size(); i++) {
                final JsonArray expected = js.get(i).getAsJsonArray();
                final int[] want = new int[expected.size()];
                for (int j = 0; j < want.length; j++) {
                    want[j] = expected.get(j).getAsInt();
                }
                final int[] got = qwen3.encode(prompts.get(i));
                if (!Arrays.equals(want, got)) {
                    throw new AssertionError("prompt " + i + " " + new Gson().toJson(prompts.get(i))
                        + "\n  javascript: " + Arrays.toString(want) + "\n  kvidx:      " + Arrays.toString(got));
                }
                tokens += got.length;
            }
        }
        assertEquals(true, tokens > PROMPTS * 10, "the prompts are not trivially short: " + tokens + " tokens");
    }
}
