package io.kvidx.bench;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class WorkloadTest {
    @Test
    void shouldGenerateTheSameWorkloadForTheSameSeed() {
        final Workload a = Workload.generate(64, 32, 20_000, 42);
        final Workload b = Workload.generate(64, 32, 20_000, 42);
        final Workload c = Workload.generate(64, 32, 20_000, 43);
        assertEquals(a.chainCount(), b.chainCount());
        for (int i = 0; i < a.chainCount(); i++) {
            assertArrayEquals(a.chain(i), b.chain(i));
        }
        assertArrayEquals(a.queryOrder(), b.queryOrder());
        assertTrue(a.chain(0)[31] != c.chain(0)[31], "another seed gives other keys");
    }

    @Test
    void shouldIndexTheRequestedNumberOfDistinctBlocksWithSharedPrefixes() {
        final Workload w = Workload.generate(64, 32, 50_000, 7);
        final Set<Long> held = new HashSet<>();
        final Map<Long, Integer> holdersByKey = new HashMap<>();
        final Set<Integer> pods = new HashSet<>();
        final long[] podBlocks = new long[1];
        w.forEachHolding((pod, chain, depth) -> {
            pods.add(pod);
            podBlocks[0] += depth;
            for (int i = 0; i < depth; i++) {
                assertTrue(chain[i] != 0, "key 0");
                held.add(chain[i]);
                holdersByKey.merge(chain[i], 1, Integer::sum);
            }
        });
        assertEquals(w.blocks(), held.size(), "blocks() counts distinct held keys");
        assertTrue(w.blocks() >= 50_000 && w.blocks() < 50_000 + 32, "overshoot below one chain: " + w.blocks());
        assertEquals(w.podBlocks(), podBlocks[0]);
        assertEquals(64, pods.size(), "every pod holds something");
        final long shared = holdersByKey.values().stream().filter(n -> n >= 8).count();
        assertTrue(shared > 100, "early blocks are shared by many holders: " + shared);
        assertTrue(Arrays.stream(w.queryOrder()).allMatch(q -> q >= 0 && q < w.chainCount()));
    }

    @Test
    void shouldGenerateChainsUpToTheIndexMaximumWithManyHoldersAtFewDepths() {
        final Workload w = Workload.generate(128, Workload.MAX_CHAIN, 200_000, 11, 16);
        assertEquals(Workload.MAX_CHAIN, w.chain(0).length);
        final Map<Integer, Set<Integer>> podsByChainDepth = new HashMap<>();
        final Map<Long, Integer> chainOf = new HashMap<>();
        for (int c = 0; c < w.chainCount(); c++) {
            chainOf.put(w.chain(c)[Workload.MAX_CHAIN - 1], c);
        }
        final long[] holdings = new long[1];
        w.forEachHolding((pod, chain, depth) -> {
            assertTrue(depth >= 1 && depth <= Workload.MAX_CHAIN, "depth " + depth);
            holdings[0]++;
            podsByChainDepth.computeIfAbsent(chainOf.get(chain[Workload.MAX_CHAIN - 1]), k -> new HashSet<>())
                .add(depth);
        });
        final double holders = holdings[0] / (double) w.chainCount();
        assertTrue(holders > 12 && holders < 20, "mean holders near 16: " + holders);
        final double depths = podsByChainDepth.values().stream().mapToInt(Set::size).average().orElse(0);
        assertTrue(depths <= 2 + Workload.TURNS, "the extra holders share the group's turn ends: " + depths);
        assertEquals(16.0, w.meanHolders());
    }

    @Test
    void shouldKeepWorkloadBForTwoHolders() {
        final Workload a = Workload.generate(64, 32, 20_000, 42);
        final Workload b = Workload.generate(64, 32, 20_000, 42, Workload.HOLDERS_DEFAULT);
        assertEquals(a.chainCount(), b.chainCount());
        assertEquals(a.podBlocks(), b.podBlocks());
        assertArrayEquals(a.queryOrder(), b.queryOrder());
    }
}
