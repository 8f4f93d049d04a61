package io.kvidx.bench.trace;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RoutingSimTest {
    /** 300 requests: 12 conversations, each request a shared 4-block system prefix of its own plus a fresh tail. */
    static List<TraceRequest> sharedPrefixTrace(final int requests) {
        final SplittableRandom random = new SplittableRandom(42);
        final List<TraceRequest> out = new ArrayList<>();
        long next = 1_000;
        for (int i = 0; i < requests; i++) {
            final int conversation = random.nextInt(12);
            final long[] ids = new long[6];
            for (int k = 0; k < 4; k++) {
                ids[k] = conversation * 10L + k;
            }
            ids[4] = next++;
            ids[5] = next++;
            out.add(new TraceRequest(i * 50L, ids.length * 512, 20, ids));
        }
        return out;
    }

    @Test
    void shouldReuseMorePrefixBlocksWithTheIndexThanRoundRobin() throws IOException {
        final List<TraceRequest> trace = sharedPrefixTrace(300);
        final Path scratch = Path.of("target", "routing-sim-test");
        final RoutingSim.Result cache = RoutingSim.run(trace, 8, 16, 4_096, "cache_aware", scratch);
        final RoutingSim.Result rr = RoutingSim.run(trace, 8, 16, 4_096, "round_robin", scratch);
        final RoutingSim.Result approx = RoutingSim.run(trace, 8, 16, 4_096, "approximate", scratch);
        final RoutingSim.Result least = RoutingSim.run(trace, 8, 16, 4_096, "least_load", scratch);
        for (final RoutingSim.Result r : List.of(cache, rr, approx, least)) {
            assertEquals(300 * 6 * 32, r.blocksRequested(), r.policy());
            assertTrue(r.hitRate() >= 0 && r.hitRate() <= 4.0 / 6, r.policy() + " " + r.hitRate());
            assertEquals(r.blocksReused() * 16, r.tokensSaved());
        }
        // Every request after a conversation's first can reuse its 4-block prefix (128 engine blocks of 192):
        // the index finds the pod that holds it; round robin over 8 pods finds it only where it already went.
        assertTrue(cache.hitRate() > 0.6, "cache-aware " + cache.hitRate());
        assertTrue(cache.hitRate() > rr.hitRate() + 0.1, cache.hitRate() + " vs round robin " + rr.hitRate());
        assertTrue(approx.hitRate() > rr.hitRate(), approx.hitRate() + " vs round robin " + rr.hitRate());
    }

    @Test
    void shouldLoseNothingThroughReplicasWithExactEventsButLoseHitsWithApproximateTrees() throws IOException {
        final List<TraceRequest> trace = sharedPrefixTrace(300);
        final Path scratch = Path.of("target", "routing-sim-test");
        final RoutingSim.Result one = RoutingSim.run(trace, 8, 16, 4_096, "cache_aware", scratch, 1);
        final RoutingSim.Result three = RoutingSim.run(trace, 8, 16, 4_096, "cache_aware", scratch, 3);
        assertEquals("cache_aware_x3", three.policy());
        assertEquals(one.blocksReused(), three.blocksReused(), "exact events: three replicas pick as one");
        assertEquals(one.maxPodRequests(), three.maxPodRequests());
        final RoutingSim.Result approxOne = RoutingSim.run(trace, 8, 16, 4_096, "approximate", scratch, 1);
        final RoutingSim.Result approxThree = RoutingSim.run(trace, 8, 16, 4_096, "approximate", scratch, 3);
        assertTrue(approxThree.hitRate() < approxOne.hitRate() - 0.05, "each replica knows only its own picks: "
            + approxThree.hitRate() + " vs " + approxOne.hitRate());
    }
}
