package io.kvidx.bench.trace;

import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodRole;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;

import java.util.Comparator;
import java.util.PriorityQueue;

/**
 * The simulated fleet a routing policy is measured on ({@link RoutingSim}, {@link LiveRouting}): one
 * {@link SimEngine} per pod, the load model the least-load scorer reads (a request occupies its pod from its
 * arrival until arrival + uncached prompt tokens / {@value RoutingSim#PREFILL_TOKENS_PER_S} tokens/s + output tokens
 * x {@value RoutingSim#DECODE_MS_PER_TOKEN} ms, on the trace's clock) and the hit-rate tally.
 *
 * <p>Several routing replicas may share the fleet ({@link #SimFleet(PodRegistry[], int, int, int, int)}): each has its
 * own registry, in which the same pod may hold another slot (each replica's daemon numbers pods as they came); the
 * load model is written to every replica's registry, as each replica would read it from the engines' metrics.
 *
 * <p><b>Note:</b> not thread safe; one thread routes.
 */
final class SimFleet {
    private final PodRegistry[] registries;
    private final SimEngine[] engines;
    /** Per replica: the pod of each slot, and the slot of each pod. */
    private final int[][] podOfSlot;
    private final int[][] slotOfPod;
    private final long[] perPod;
    private final int blockSize;
    private final PriorityQueue<long[]> running = new PriorityQueue<>(Comparator.comparingLong(a -> a[0]));
    private long requested;
    private long reused;
    private long evictions;
    private int lastSlot;

    /**
     * @param registry  the pods' registry (the router's).
     * @param pods      pods.
     * @param blockSize engine block size.
     * @param budget    blocks per engine.
     * @param maxBlocks longest chain an engine keeps.
     */
    SimFleet(final PodRegistry registry, final int pods, final int blockSize, final int budget, final int maxBlocks) {
        this(new PodRegistry[] {registry}, pods, blockSize, budget, maxBlocks);
    }

    /**
     * @param registries each routing replica's registry.
     * @param pods       pods.
     * @param blockSize  engine block size.
     * @param budget     blocks per engine.
     * @param maxBlocks  longest chain an engine keeps.
     */
    SimFleet(final PodRegistry[] registries, final int pods, final int blockSize, final int budget,
        final int maxBlocks) {
        this.registries = registries.clone();
        this.podOfSlot = new int[registries.length][PodRegistry.MAX_PODS];
        this.slotOfPod = new int[registries.length][pods];
        this.engines = new SimEngine[pods];
        this.perPod = new long[pods];
        this.blockSize = blockSize;
        for (int p = 0; p < pods; p++) {
            engines[p] = new SimEngine(budget, maxBlocks);
        }
    }

    /**
     * Registers pod {@code p} (named as every transport names it) at an index slot.
     *
     * @param p    pod number.
     * @param slot its slot.
     */
    void register(final int p, final int slot) {
        register(0, p, slot);
    }

    /**
     * Registers pod {@code p} at a slot of one replica's registry.
     *
     * @param replica the replica.
     * @param p       pod number.
     * @param slot    its slot there.
     */
    void register(final int replica, final int p, final int slot) {
        registries[replica].register(slot, BatchEncoder.podId(p), TraceBlocks.MODEL, PodRole.BOTH, null);
        podOfSlot[replica][slot] = p;
        slotOfPod[replica][p] = slot;
    }

    /**
     * Routes one request and serves it on the chosen pod's engine, whose stored and evicted blocks the caller then
     * publishes or applies ({@link #lastSlot()} is the chosen slot).
     *
     * @param r      the request.
     * @param blocks its blocks, loaded.
     * @param n      how many.
     * @param router the policy's router.
     * @param ctx    its context.
     * @return the chosen pod.
     */
    int route(final TraceRequest r, final TraceBlocks blocks, final int n, final Router router,
        final RoutingContext ctx) {
        return route(0, r, blocks, n, router, ctx);
    }

    /**
     * Routes one request through one replica's router ({@link #lastSlot()} is the slot in that replica).
     *
     * @param replica the replica routing it.
     * @param r       the request.
     * @param blocks  its blocks, loaded.
     * @param n       how many.
     * @param router  the replica's router.
     * @param ctx     its context.
     * @return the chosen pod.
     */
    int route(final int replica, final TraceRequest r, final TraceBlocks blocks, final int n, final Router router,
        final RoutingContext ctx) {
        while (!running.isEmpty() && running.peek()[0] <= r.timestampMs()) {
            final long[] done = running.poll();
            for (int k = 0; k < registries.length; k++) {
                registries[k].requestFinished(slotOfPod[k][(int) done[1]], (int) done[2]);
            }
        }
        final int slot = router.routeKeys(ctx, blocks.routerKeys(), n);
        final int pod = podOfSlot[replica][slot];
        final SimEngine engine = engines[pod];
        final int hit = engine.serve(blocks.engineHashes(), blocks.routerKeys(), n);
        perPod[pod]++;
        requested += n;
        reused += hit;
        evictions += engine.removedCount();
        final long uncached = Math.max(0, r.promptTokens() - (long) hit * blockSize);
        final long serviceMs = uncached * 1000 / RoutingSim.PREFILL_TOKENS_PER_S
            + (long) r.outputLength() * RoutingSim.DECODE_MS_PER_TOKEN;
        for (int k = 0; k < registries.length; k++) {
            registries[k].requestStarted(slotOfPod[k][pod], r.promptTokens());
        }
        running.add(new long[] {r.timestampMs() + serviceMs, pod, r.promptTokens()});
        lastSlot = slot;
        return pod;
    }

    /**
     * @return the slot the last {@link #route} chose.
     */
    int lastSlot() {
        return lastSlot;
    }

    /**
     * @param replica a replica.
     * @param pod     pod number.
     * @return the pod's slot in that replica's registry.
     */
    int slotOf(final int replica, final int pod) {
        return slotOfPod[replica][pod];
    }

    /**
     * @param pod pod number.
     * @return its engine.
     */
    SimEngine engine(final int pod) {
        return engines[pod];
    }

    /**
     * @param policy   the policy's name.
     * @param requests requests routed.
     * @param seconds  wall time.
     * @return the tally.
     */
    RoutingSim.Result result(final String policy, final long requests, final double seconds) {
        long max = 0;
        for (final long c : perPod) {
            max = Math.max(max, c);
        }
        return new RoutingSim.Result(policy, requests, requested, reused, reused * blockSize, evictions, max, seconds);
    }
}
