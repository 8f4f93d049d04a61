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
}
