package io.kvidx.bench;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RestartBenchTest {
    @Test
    void shouldKeepTheDefaultsWithoutOptions() {
        final RestartBench.Options o = RestartBench.Options.parse(new String[0]);
        assertEquals(1L << 20, o.blocks);
        assertEquals(64, o.pods);
        assertEquals(5, o.rounds);
        assertEquals((1 << 20) / 64 + 32, o.perPodBlocks());
    }

    @Test
    void shouldTakeEachOption() {
        final RestartBench.Options o = RestartBench.Options.parse(new String[] {
            "--blocks", "4096", "--pods", "256", "--rounds", "1"});
        assertEquals(4096, o.blocks);
        assertEquals(256, o.pods);
        assertEquals(1, o.rounds);
    }

    @Test
    void shouldRefuseBadOptionsWithAMessageNamingTheOption() {
        final List<List<String>> bad = List.of(
            List.of("--blocks", "0"),
            List.of("--blocks", "-1"),
            List.of("--blocks", Long.toString(RestartBench.BLOCKS_MAX + 1)),
            List.of("--blocks", "1M"),
            List.of("--pods", "0"),
            List.of("--pods", "257"),
            List.of("--rounds", "0"),
            List.of("--rounds", Integer.toString(RestartBench.ROUNDS_MAX + 1)),
            List.of("--rounds"),
            List.of("--blocks", Long.toString(RestartBench.BLOCKS_MAX), "--pods", "1"));
        for (final List<String> args : bad) {
            final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                () -> RestartBench.Options.parse(args.toArray(String[]::new)), args.toString());
            assertTrue(ex.getMessage().contains(args.get(0)), args + ": " + ex.getMessage());
        }
        final IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
            () -> RestartBench.Options.parse(new String[] {"--bogus", "1"}));
        assertTrue(unknown.getMessage().contains("--bogus"), unknown.getMessage());
    }

    @Test
    void shouldAnswerHelpWithUsageListingEveryOption() {
        assertThrows(IllegalArgumentException.class, () -> RestartBench.Options.parse(new String[] {"-h"}));
        assertThrows(IllegalArgumentException.class, () -> RestartBench.Options.parse(new String[] {"--help"}));
        for (final String option : List.of("--blocks", "--pods", "--rounds")) {
            assertTrue(RestartBench.usage().contains(option), option);
        }
    }
}
