package io.kvidx.bench.tokenize;

import io.kvidx.client.keys.RouterKeyHasher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TokenizeBenchmarkTest {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldTurnEachTextOf2048TokensInto128KeysTheSameWayOnEveryPath() {
        final TokenizeBenchmark bench = new TokenizeBenchmark();
        bench.tokenizer = "";
        bench.tokens = 2048;
        bench.texts = 4;
        bench.setUp();
        try {
            final BenchTexts pool = bench.pool();
            final RouterKeyHasher hasher = new RouterKeyHasher(16);
            final long seed = RouterKeyHasher.chainSeed("Qwen/Qwen3-0.6B", null, null);
            final Set<String> texts = new HashSet<>();
            final Set<Long> lastKeys = new HashSet<>();
            for (int i = 0; i < pool.count(); i++) {
                final String text = pool.text(i);
                texts.add(text);
                // Mixed text: digits, inline code and non-Latin script in every text.
                assertTrue(text.chars().anyMatch(Character::isDigit), "text " + i + " has no digits");
                assertTrue(text.indexOf('`') >= 0, "text " + i + " has no inline code");
                assertTrue(text.chars().anyMatch(c -> c > 0x2FF), "text " + i + " has no non-Latin characters");

                final long[] expected = new long[129];
                assertEquals(128, hasher.keys(seed, pool.ids(i), pool.ids(i).length, expected), "keys of " + i);

                bench.position(i);
                final long kvidxLast = bench.kvidxTextToKeys();
                assertEquals(2048, bench.lastTokens().length, "kvidx tokens of text " + i);
                assertArrayEquals(pool.ids(i), bench.lastTokens(), "kvidx tokens of text " + i);
                assertArrayEquals(Arrays.copyOf(expected, 128), bench.lastKeys(), "kvidx keys of text " + i);
                assertEquals(expected[127], kvidxLast);

                bench.position(i);
                assertEquals(expected[127], bench.djlTextToKeys(), "DJL's last key of text " + i);
                assertArrayEquals(Arrays.copyOf(expected, 128), bench.lastKeys(), "DJL keys of text " + i);

                bench.position(i);
                assertEquals(expected[127], bench.routerKeysOnly(), "keys alone, text " + i);
                lastKeys.add(expected[127]);
            }
            assertEquals(pool.count(), texts.size(), "texts must be distinct");
            assertEquals(pool.count(), lastKeys.size(), "chains must be distinct");
            // Invocations walk the pool: two in a row tokenize different texts.
            bench.position(0);
            final long first = bench.kvidxTextToKeys();
            assertNotEquals(first, bench.kvidxTextToKeys(), "the second invocation must take the next text");
            assertFalse(pool.meanChars() < 2048, "2048 tokens of prose are longer than 2048 characters");
        } finally {
            bench.tearDown();
        }
    }
}
