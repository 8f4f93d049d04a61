package io.kvidx.bench.routing;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DecisionBenchmarkTest {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldDecideOnAMillionBlockIndexLargerThanTheL3() throws Exception {
        final DecisionBenchmark bench = new DecisionBenchmark();
        bench.setUp();
        try {
            // Every prompt is held in full by one pod: 2^15 prompts x 32 blocks, no two alike.
            assertEquals(1L << 20, bench.indexedBlocks(), "distinct blocks in the decision benchmark's index");
            assertTrue(bench.indexFileBytes() > 32L << 20, "the index must not fit in a 32 MiB L3: "
                + bench.indexFileBytes() + " bytes");
            // The headline decision hashes the prompt's tokens and finds its holders: the picked pod is a holder
            // whenever one exists, and every prompt has one holding it whole.
            for (int i = 0; i < 1_000; i++) {
                assertTrue(bench.cacheAwareFromTokensDecision() >= 0, "decision " + i + " picked no pod");
                assertEquals(DecisionBenchmark.CHAIN, bench.indexQueryOnly(), "query " + i + ": a pod holds the"
                    + " whole chain");
            }
        } finally {
            bench.tearDown();
        }
    }
}
