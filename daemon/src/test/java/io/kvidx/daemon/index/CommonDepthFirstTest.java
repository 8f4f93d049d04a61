package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PrefixResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A narrow search probes first at the depth most pods held in the querying thread's last narrow answer (ADR 0023,
 * decision 7): on prompts whose 128 holders all stop at a shared system prompt, as the Mooncake trace's do, a
 * 750-block query takes 3 probes (block 0, the prompt's first block past the shared prefix and its last block in it)
 * instead of the 11 of a plain binary search, and a pod that holds more still gets its exact depth.
 */
class CommonDepthFirstTest {
    private static final int PODS = 128;
    private static final int SYSTEM_PROMPT = 32;
    private static final int LENGTH = 750;

    @TempDir
    Path dir;

    @Test
    void shouldAnswerAPromptEveryPodHoldsToTheSharedPrefixInThreeProbes() {
        final SplittableRandom rnd = new SplittableRandom(7);
        final long[] system = keys(rnd, SYSTEM_PROMPT);
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("test").shardCount(16)
            .slotsPerShard(8192).maxPods(256).maxChainLength(8192).deleteOnClose(true))) {
            for (int p = 0; p < PODS; p++) {
                writer.store(writer.registerPod("pod-" + p, "m"), system, 0, SYSTEM_PROMPT);
            }
            // One pod served the conversation's earlier turn: it holds 400 blocks of the last prompt.
            final long[] turn = prompt(system, rnd);
            writer.store(5, turn, 0, 400);
            writer.heartbeat(System.currentTimeMillis());
            try (IndexReader reader = IndexReader.attach(TestIndexes.reader(dir))) {
                final PrefixResult result = new PrefixResult();
                final long[] first = prompt(system, rnd);
                assertEquals(SYSTEM_PROMPT, reader.query(first, LENGTH, null, result));
                final int plain = result.probes();
                assertTrue(plain >= 10, "a fresh result searches by halves: " + plain + " probes");
                // Prompts of the same shape turn the thread's searches narrow, and teach it the common depth.
                for (int i = 0; i < 30; i++) {
                    reader.query(prompt(system, rnd), LENGTH, null, result);
                }
                final long[] next = prompt(system, rnd);
                assertEquals(SYSTEM_PROMPT, reader.query(next, LENGTH, null, result));
                assertEquals(3, result.probes(), "block 0, block 32 and block 31");
                assertEquals(PODS, result.count());
                for (int p = 0; p < PODS; p++) {
                    assertEquals(SYSTEM_PROMPT, result.depthOf(p), "pod " + p);
                }
                // A pod that holds more than the others still gets its own depth, searched in [33, 750].
                assertEquals(400, reader.query(turn, LENGTH, null, result));
                assertEquals(400, result.depthOf(5));
                assertEquals(SYSTEM_PROMPT, result.depthOf(6));
                assertTrue(result.probes() <= 3 + 10, "the guess costs the deeper pod nothing: "
                    + result.probes() + " probes");
            }
        }
    }

    /**
     * Two tenants behind one router: each has its own system prompt (32 and 80 blocks), held by its own 64 pods, and
     * the querying thread alternates between their prompts. The guess is kept per prompt root (block 0's key), so
     * neither tenant's depth misleads the other's search: 3 probes each, where one depth for the thread would guess
     * the other tenant's and search a whole side by halves (10 probes).
     */
    @Test
    void shouldKeepOneGuessPerSystemPromptWhenTheThreadAlternatesBetweenTenants() {
        final SplittableRandom rnd = new SplittableRandom(11);
        final int deepSystem = 80;
        final long[] systemA = keys(rnd, SYSTEM_PROMPT);
        final long[] systemB = keys(rnd, deepSystem);
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("test").shardCount(16)
            .slotsPerShard(8192).maxPods(256).maxChainLength(8192).deleteOnClose(true))) {
            for (int p = 0; p < PODS; p++) {
                final long[] system = p < PODS / 2 ? systemA : systemB;
                writer.store(writer.registerPod("pod-" + p, "m"), system, 0, system.length);
            }
            writer.heartbeat(System.currentTimeMillis());
            try (IndexReader reader = IndexReader.attach(TestIndexes.reader(dir))) {
                final PrefixResult result = new PrefixResult();
                for (int i = 0; i < 30; i++) {
                    reader.query(prompt(i % 2 == 0 ? systemA : systemB, rnd), LENGTH, null, result);
                }
                for (int i = 0; i < 4; i++) {
                    final boolean a = i % 2 == 0;
                    final int depth = reader.query(prompt(a ? systemA : systemB, rnd), LENGTH, null, result);
                    assertEquals(a ? SYSTEM_PROMPT : deepSystem, depth);
                    assertEquals(PODS / 2, result.count());
                    assertEquals(3, result.probes(), (a ? "tenant A" : "tenant B") + ": block 0 and the two blocks"
                        + " around its own system prompt's end");
                }
            }
        }
    }

    private static long[] prompt(final long[] system, final SplittableRandom rnd) {
        final long[] keys = keys(rnd, LENGTH);
        System.arraycopy(system, 0, keys, 0, system.length);
        return keys;
    }

    private static long[] keys(final SplittableRandom rnd, final int n) {
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = rnd.nextLong();
        }
        return keys;
    }
}
