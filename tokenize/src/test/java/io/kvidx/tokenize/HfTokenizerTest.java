package io.kvidx.tokenize;

import io.kvidx.routing.TokenIds;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(60)
class HfTokenizerTest {
    private static HfTokenizer qwen3;

    @BeforeAll
    static void load() {
        qwen3 = HfTokenizer.load(TestData.qwen3Dir(), true);
    }

    @AfterAll
    static void close() {
        qwen3.close();
    }

    @Test
    void shouldReproduceTheTokensVllmMadeOfTheCapturedPrompt() {
        final TestData.Capture c = TestData.vllmCapture();
        assertEquals(400, c.tokenIds().length);
        final int[] ids = qwen3.encode(c.prompt());
        assertTrue(ids.length >= 400, "the prompt has at least the 400 captured tokens: " + ids.length);
        assertArrayEquals(c.tokenIds(), Arrays.copyOf(ids, 400));
    }

    @Test
    void shouldWriteIntoTheContextsTokenBufferAndGrowIt() {
        final TestData.Capture c = TestData.vllmCapture();
        final String text = c.prompt().repeat(12);
        final TokenIds out = new TokenIds();
        final int n = qwen3.encode(text, out);
        assertTrue(n > 4096, "longer than the initial buffer: " + n);
        assertEquals(n, out.length());
        assertArrayEquals(qwen3.encode(text), Arrays.copyOf(out.ids(), n));
        assertEquals(2, qwen3.encode("Hello world", out));
        assertArrayEquals(new int[] {9707, 1879}, Arrays.copyOf(out.ids(), out.length()));
    }

    @Test
    void shouldNeverTruncateLongPrompts() {
        final String text = "token ".repeat(20_000);
        assertTrue(qwen3.encode(text).length >= 20_000, "no truncation at DJL's default 512");
    }

    @Test
    void shouldTurnSpecialTokensWrittenInTheTextIntoTheirIds() {
        assertArrayEquals(new int[] {151644, 872, 198, 9707, 151645},
            qwen3.encode("<|im_start|>user\nHello<|im_end|>"));
    }

    @Test
    void shouldAcceptTheFileOrItsDirectory() {
        try (HfTokenizer byFile = HfTokenizer.load(TestData.qwen3Dir().resolve("tokenizer.json"), false)) {
            assertEquals(qwen3.file(), byFile.file());
            assertArrayEquals(qwen3.encode("Hello world"), byFile.encode("Hello world"));
        }
    }

    @Test
    void shouldRejectAMissingOrBrokenTokenizerWithAClearMessage(@TempDir final Path dir) throws IOException {
        final IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
            () -> HfTokenizer.load(dir, true));
        assertTrue(missing.getMessage().contains("a directory must hold tokenizer.json"), missing.getMessage());
        final Path broken = Files.writeString(dir.resolve("tokenizer.json"), "{\"model\": 42}");
        final IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
            () -> HfTokenizer.load(broken, true));
        assertTrue(bad.getMessage().startsWith("cannot load the tokenizer " + broken.toAbsolutePath()),
            bad.getMessage());
    }
}
