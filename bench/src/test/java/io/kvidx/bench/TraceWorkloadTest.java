package io.kvidx.bench;

import io.kvidx.bench.trace.SimEngine;
import io.kvidx.bench.trace.TraceBench;
import io.kvidx.bench.trace.TraceBlocks;
import io.kvidx.bench.trace.TraceFile;
import io.kvidx.bench.trace.TraceRequest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The trace workload holds what a fleet of LRU engines holds after serving the trace's first 7/8, and queries the
 * rest: checked against an independent replay of the same split, pod by pod.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TraceWorkloadTest {
    private static final int PODS = 16;
    private static final int REQUESTS = 1_600;
    private static final int MAX_CHAIN = 2_048;
    private static final long SEED = 42;

    private static List<TraceRequest> trace;
    private static Workload workload;

    @BeforeAll
    static void build() throws IOException {
        trace = TraceFile.loadDefault().subList(0, REQUESTS);
        workload = TraceWorkload.build(trace, PODS, MAX_CHAIN, SEED);
    }

    @Test
    void shouldHoldExactlyWhatEachEngineCachesAfterServingTheFirstSevenEighths() {
        // The oracle: the same split and engines, replayed here; each pod's depth is its engine's cached prefix.
        final int served = REQUESTS - REQUESTS / TraceWorkload.HELD_OUT_DIVISOR;
        final SplittableRandom split = new SplittableRandom(SEED);
        final TraceBlocks blocks = new TraceBlocks(TraceBench.BLOCK_SIZE_DEFAULT, MAX_CHAIN);
        final SimEngine[] engines = new SimEngine[PODS];
        for (int p = 0; p < PODS; p++) {
            engines[p] = new SimEngine(TraceBench.BUDGET_DEFAULT, MAX_CHAIN);
        }
        long evicted = 0;
        for (int i = 0; i < served; i++) {
            final int pod = split.nextInt(PODS);
            final int n = blocks.load(trace.get(i));
            engines[pod].serve(blocks.engineHashes(), blocks.routerKeys(), n);
            evicted += engines[pod].removedCount();
        }
        assertTrue(evicted > 0, "the engines must evict, else holdings never differ from whole prompts");
        final Set<Integer> queried = new HashSet<>();
        for (final int q : workload.queryOrder()) {
            queried.add(q);
        }
        assertEquals(REQUESTS - served, queried.size(), "every held-out prompt is queried, and nothing else");
        try (NaiveStore index = NaiveStore.load(workload)) {
            int chain = 0;
            int partial = 0;
            for (int i = 0; i < REQUESTS; i++) {
                final int n = blocks.load(trace.get(i));
                if (n == 0) {
                    continue;
                }
                final long[] keys = workload.chain(chain);
                assertArrayEquals(Arrays.copyOf(blocks.routerKeys(), n), keys, "chain " + chain + " is prompt " + i);
                assertEquals(i >= served, queried.contains(chain), "prompt " + i + " queried");
                index.query(keys, n);
                for (int p = 0; p < PODS; p++) {
                    final int expected = engines[p].cachedPrefix(blocks.engineHashes(), n);
                    assertEquals(expected, index.depthOf(p), "prompt " + i + ", pod " + p);
                    partial += expected > 0 && expected < n ? 1 : 0;
                }
                chain++;
            }
            assertEquals(workload.chainCount(), chain);
            assertTrue(partial > 100, "pods holding part of a prompt: " + partial);
        }
    }

    @Test
    void shouldMeetManyPodsAtFewDepthsAsTheTracePromptsDo() {
        try (NaiveStore index = NaiveStore.load(workload)) {
            final int[] order = workload.queryOrder();
            final int queries = 500;
            final int[] holders = new int[queries];
            final int[] depths = new int[queries];
            for (int i = 0; i < queries; i++) {
                final long[] keys = workload.chain(order[i]);
                index.query(keys, keys.length);
                final Set<Integer> distinct = new HashSet<>();
                for (int p = 0; p < PODS; p++) {
                    if (index.depthOf(p) > 0) {
                        holders[i]++;
                        distinct.add(index.depthOf(p));
                    }
                }
                depths[i] = distinct.size();
            }
            Arrays.sort(holders);
            Arrays.sort(depths);
            // Every pod holds the common system prompt; a conversation's earlier turns add a depth or two.
            assertEquals(PODS, holders[queries / 2], "median holders");
            assertTrue(depths[queries / 2] <= 2, "median distinct depths " + depths[queries / 2]);
        }
        assertTrue(workload.chains().startsWith("Mooncake prompts of "), workload.chains());
        assertTrue(workload.chainLength() > 128 && workload.chainLength() <= MAX_CHAIN, "longest prompt");
    }

    @Test
    void shouldRefuseBadArguments() {
        assertThrows(IllegalArgumentException.class, () -> TraceWorkload.build(trace, 0, 64, SEED));
        assertThrows(IllegalArgumentException.class, () -> TraceWorkload.build(trace, 257, 64, SEED));
        assertThrows(IllegalArgumentException.class, () -> TraceWorkload.build(trace, 8, Workload.MAX_CHAIN + 1,
            SEED));
        assertThrows(IllegalArgumentException.class, () -> TraceWorkload.build(trace.subList(0, 7), 8, 64, SEED),
            "seven requests hold out none");
    }
}
