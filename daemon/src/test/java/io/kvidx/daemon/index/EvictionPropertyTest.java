package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Eviction trims chains from their tails (ADR 0007): under eviction pressure, with chains that share roots (a tree
 * of prompts), the index must stay sound against a reference model of what each pod stored, and every chain's
 * indexed blocks must stay prefix-closed (no block indexed whose parent was evicted) unless an inner eviction was
 * counted. Least-recently-stored eviction breaks the second property at once: a shared root stored first is the
 * first to go.
 */
class EvictionPropertyTest {
    private static final int ROOTS = 3;
    private static final int BRANCHES = 40;
    private static final int DEPTH = 12;

    private Path dir;

    @BeforeProperty
    void createDir() throws IOException {
        dir = Files.createTempDirectory("kvidx-evict");
    }

    @AfterProperty
    void deleteDir() throws IOException {
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** A prompt: shares root {@code root}'s first {@code shared} blocks, then goes its own way for {@code own}. */
    record Prompt(int pod, int root, int branch, int shared, int own) {
    }

    @Provide
    Arbitrary<List<Prompt>> prompts() {
        return Combinators.combine(Arbitraries.integers().between(0, 3), Arbitraries.integers().between(0, ROOTS - 1),
            Arbitraries.integers().between(0, BRANCHES - 1), Arbitraries.integers().between(1, 4),
            Arbitraries.integers().between(1, DEPTH)).as(Prompt::new).list().ofMinSize(100).ofMaxSize(200);
    }

    @Property(tries = 30)
    void shouldTrimChainsFromTheirTailsUnderEvictionPressure(@ForAll("prompts") final List<Prompt> prompts) {
        run(prompts, 256);
    }

    @Property(tries = 20)
    void shouldTrimChainsFromTheirTailsInAGeneralCell(@ForAll("prompts") final List<Prompt> prompts) {
        run(prompts, 200);
    }

    /** The writer's children counts equal the model's: indexed keys whose parent is the key. */
    private static void assertChildrenCounted(final IndexWriter writer, final Map<Long, Long> parentOf) {
        final Map<Long, Integer> expected = new HashMap<>();
        for (final Map.Entry<Long, Long> e : parentOf.entrySet()) {
            if (writer.children(e.getKey()) >= 0 && e.getValue() != 0) {
                expected.merge(e.getValue(), 1, Integer::sum);
            }
        }
        for (final Long key : parentOf.keySet()) {
            final int actual = writer.children(key);
            if (actual >= 0) {
                org.junit.jupiter.api.Assertions.assertEquals(expected.getOrDefault(key, 0), actual,
                    "children of an indexed block");
            }
        }
    }

    private static void assertPrefixClosed(final IndexReader reader, final Map<Long, Long> parentOf,
        final IndexWriter writer) {
        final long[] out = new long[4];
        for (final Map.Entry<Long, Long> e : parentOf.entrySet()) {
            if (e.getValue() != 0 && reader.lookup(e.getKey(), out)) {
                assertTrue(reader.lookup(e.getValue(), out),
                    "block indexed while its parent was evicted (evictions " + writer.evictions() + ")");
            }
        }
    }

    private void run(final List<Prompt> prompts, final int maxPods) {
        final String cell = "e" + System.nanoTime();
        // 2 shards x 256 slots at 0.75: 384 entries for 100 to 200 prompts of 2 to 16 blocks: steady eviction.
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell(cell).shardCount(2)
            .slotsPerShard(256).maxChainLength(64).maxPods(maxPods).deleteOnClose(true));
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell(cell)
                .attachTimeoutMs(1_000).heartbeatTimeoutMs(0))) {
            final int[] slots = new int[4];
            for (int p = 0; p < slots.length; p++) {
                slots[p] = writer.registerPod("pod-" + p, "m");
            }
            final Map<Integer, Set<Long>> stored = new HashMap<>();
            final Map<Long, Long> parentOf = new HashMap<>();
            final long[] chain = new long[DEPTH + 4];
            int number = 0;
            int checked = 0;
            for (final Prompt prompt : prompts) {
                // Every prompt's own blocks are new (its number is in their keys): 100+ prompts overflow 384 entries.
                number++;
                final int n = prompt.shared() + prompt.own();
                for (int i = 0; i < n; i++) {
                    chain[i] = i < prompt.shared() ? TestIndexes.mix(-(prompt.root() + 1) * 1_000L - i)
                        : TestIndexes.mix(((prompt.root() * 1_000L + prompt.branch()) * 1_000L + number) * 1_000L + i);
                    parentOf.put(chain[i], i == 0 ? 0L : chain[i - 1]);
                    stored.computeIfAbsent(slots[prompt.pod()], k -> new HashSet<>()).add(chain[i]);
                }
                writer.store(slots[prompt.pod()], chain, 0, n, 0);
                if (writer.innerEvictions() == 0) {
                    // Until a shard had no tail to give, the counts are exact and every chain is prefix-closed.
                    assertChildrenCounted(writer, parentOf);
                    assertPrefixClosed(reader, parentOf, writer);
                    if (writer.evictions() > 0) {
                        checked++;
                    }
                }
            }
            final long[] out = new long[4];
            for (final Map.Entry<Long, Long> e : parentOf.entrySet()) {
                if (reader.lookup(e.getKey(), out)) {
                    for (int slot = 0; slot < maxPods; slot++) {
                        if ((out[slot >>> 6] & (1L << slot)) != 0) {
                            assertTrue(stored.getOrDefault(slot, Set.of()).contains(e.getKey()), "phantom holder");
                        }
                    }
                }
            }
            assertTrue(writer.evictions() > 0, "the test must evict");
            // Checked under eviction at least once: least-recently-stored eviction fails there (roots go first).
            assertTrue(checked > 0, "the tail rule was never checked under eviction (inner evictions "
                + writer.innerEvictions() + " of " + writer.evictions() + ")");
        }
    }
}
