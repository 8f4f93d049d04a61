package io.kvidx.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AuthCostBenchTest {
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldTimeAlternatingRoundsWithoutAndWithTheToken() throws Exception {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        final AuthCostBench.Outcome outcome = AuthCostBench.run(AuthCostBench.Options.parse(new String[] {
            "--pairs", "2", "--seconds", "0.2", "--warmup", "0.2", "--pods", "4", "--prompt", "64",
            "--door-seconds", "0.1"}), out);

        final String text = bytes.toString(StandardCharsets.UTF_8);
        for (final AuthCostBench.Result result : List.of(outcome.loopback(), outcome.door())) {
            assertEquals(4, result.rounds().size(), text);
            for (int i = 0; i < 4; i++) {
                final AuthCostBench.Round r = result.rounds().get(i);
                assertEquals(i % 2 == 1, r.auth(), "A, B, A, B: " + text);
                assertTrue(r.requests() > 0 && r.p50Ns() > 0 && r.p99Ns() >= r.p50Ns(), r.toString());
            }
            assertTrue(result.medianP50A() > 0 && result.medianP50B() > 0, text);
        }
        assertTrue(text.contains("median over the 2 pairs of (B p50 - A p50)"), text);
        assertTrue(text.contains("the door alone, in process"), text);
        assertTrue(text.contains("index (each daemon): 4 entries"), text);
    }

    @Test
    void shouldTakeTheMedianOfEachSideAndOfThePairs() {
        final AuthCostBench.Result r = AuthCostBench.summarise(List.of(
            new AuthCostBench.Round(false, 1, 50_000, 90_000), new AuthCostBench.Round(true, 1, 52_000, 95_000),
            new AuthCostBench.Round(false, 1, 60_000, 90_000), new AuthCostBench.Round(true, 1, 59_000, 95_000),
            new AuthCostBench.Round(false, 1, 40_000, 90_000), new AuthCostBench.Round(true, 1, 43_000, 95_000)));
        assertEquals(50_000, r.medianP50A());
        assertEquals(52_000, r.medianP50B());
        assertEquals(2_000, r.medianPairNs(), "pairs: +2,000, -1,000, +3,000");
    }

    @Test
    void shouldRefuseBadOptionsWithAMessageNamingTheOption() {
        for (final List<String> args : List.of(List.of("--pairs", "0"), List.of("--pods", "65"),
            List.of("--prompt", "8"), List.of("--http-threads", "0"),
            List.of("--door-seconds", "-1"))) {
            final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                () -> AuthCostBench.Options.parse(args.toArray(String[]::new)), args.toString());
            assertTrue(ex.getMessage().contains(args.get(0)), args + ": " + ex.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> AuthCostBench.Options.parse(new String[] {"-h"}));
        for (final String option : List.of("--pairs", "--seconds", "--warmup", "--pods", "--prompt",
            "--http-threads", "--door-seconds")) {
            assertTrue(AuthCostBench.usage().contains(option), option);
        }
    }
}
