package io.kvidx.bench.trace;

import io.kvidx.bench.Json;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Profile;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.routing.Slots;
import io.kvidx.routing.overlay.PickOverlay;
import io.kvidx.routing.plugins.CacheAffinityScorer;
import io.kvidx.routing.plugins.LeastLoadScorer;
import io.kvidx.routing.LoadMetric;
import io.kvidx.routing.plugins.MaxScorePicker;
import io.kvidx.routing.plugins.PrefixQueryPreparer;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Routing on the trace: replays every request, in timestamp order, through one routing policy over {@code pods}
 * simulated engines ({@link SimEngine}, LRU budget each) and measures the prefix hit rate the policy earns
 * (blocks reused / blocks requested, from the engines' own caches) and the prefill tokens it saves.
 *
 * <p>Policies: {@code cache_aware} (RoutingProfiles.cacheAware over a kvidx index: prefix depth, alive filter,
 * cache affinity x2 + least load x1), {@code approximate} (no events: the router's own recent picks,
 * {@link PickOverlay} in {@link PrefixQueryPreparer.Mode#APPROXIMATE}, same scorers), {@code round_robin} and
 * {@code least_load} (fewest queued + running requests).
 *
 * <p>The cache-aware policy reads a real shared-memory index that this class writes in-process with
 * {@link IndexWriter}: after each request the engine's stored blocks (router keys, chained to their parent) and
 * evicted blocks are applied, exactly the store/remove calls the daemon's writer makes after decoding the engine's
 * BlockStored / BlockRemoved events and recomputing router keys from their tokens. What this leaves out is the
 * event path's delay: here each request's events are visible before the next request is routed (the bench's
 * throughput part measures that delay through the real daemon process). The overlay's TTL runs on wall time,
 * and the replay takes seconds, so in the approximate policy no pick expires: it is bounded by the overlay's
 * capacity only, which favours it.
 *
 * <p>Load model (for the least-load scorer): a request occupies its pod from its arrival until arrival + uncached
 * prompt tokens / {@value #PREFILL_TOKENS_PER_S} tokens/s + output tokens x {@value #DECODE_MS_PER_TOKEN} ms.
 *
 * <p><b>Note:</b> not thread safe; one thread runs a simulation.
 */
public final class RoutingSim {
    /** Prefill throughput of the load model, tokens per second. */
    public static final int PREFILL_TOKENS_PER_S = 8_000;
    /** Decode time per output token of the load model, ms. */
    public static final int DECODE_MS_PER_TOKEN = 25;
    /** Entries of the approximate policy's overlay. */
    public static final int OVERLAY_CAPACITY = 1 << 20;
    /** The policies, in report order. */
    public static final List<String> POLICIES = List.of("cache_aware", "approximate", "round_robin", "least_load");

    /**
     * One policy's outcome.
     *
     * @param policy        policy name.
     * @param requests      requests routed.
     * @param blocksRequested engine blocks requested.
     * @param blocksReused  engine blocks found in the chosen engine's cache (prefix).
     * @param tokensSaved   prefill tokens saved (reused blocks x block size).
     * @param evictions     blocks the engines evicted.
     * @param maxPodRequests requests served by the busiest pod.
     * @param seconds       wall time of the simulation.
     */
    public record Result(String policy, long requests, long blocksRequested, long blocksReused, long tokensSaved,
        long evictions, long maxPodRequests, double seconds) {
        /** @return blocks reused / blocks requested. */
        public double hitRate() {
            return blocksRequested == 0 ? 0 : (double) blocksReused / blocksRequested;
        }

        /** @return the JSON object of this result. */
        public Json json() {
            return new Json().put("hit_rate", hitRate()).put("hit_rate_pct", hitRate() * 100)
                .put("blocks_requested", blocksRequested).put("blocks_reused", blocksReused)
                .put("prefill_tokens_saved", tokensSaved).put("evictions", evictions)
                .put("max_pod_requests", maxPodRequests);
        }
    }

    private RoutingSim() {
    }

    /**
     * @param trace       requests sorted by timestamp.
     * @param pods        engines (at most 256).
     * @param blockSize   engine block size.
     * @param budget      blocks per engine.
     * @param policy      one of {@link #POLICIES}.
     * @param scratch     where the cache-aware policy's index goes.
     * @return the outcome.
     * @throws IOException when the index directory cannot be made.
     */
    public static Result run(final List<TraceRequest> trace, final int pods, final int blockSize, final int budget,
        final String policy, final Path scratch) throws IOException {
        return run(trace, pods, blockSize, budget, policy, scratch, 1);
    }

    /**
     * Routes the trace through {@code replicas} routers taking turns (request i through replica i mod replicas), as
     * replicas of a router or picker behind one Service would. Each replica has its own registry, its own index (the
     * cache-aware policy: every replica's index gets the engines' events, as each replica's daemon subscribes to every
     * engine) in which the pods hold other slots, and its own state (the approximate policy's overlay of its own
     * picks); the load model is the engines', the same for all.
     *
     * @param trace     requests sorted by timestamp.
     * @param pods      engines (at most 256).
     * @param blockSize engine block size.
     * @param budget    blocks per engine.
     * @param policy    one of {@link #POLICIES}.
     * @param scratch   where the cache-aware policy's indexes go.
     * @param replicas  routing replicas, at least 1.
     * @return the outcome (named {@code <policy>_x<replicas>} for more than one replica).
     * @throws IOException when an index directory cannot be made.
     */
    public static Result run(final List<TraceRequest> trace, final int pods, final int blockSize, final int budget,
        final String policy, final Path scratch, final int replicas) throws IOException {
        if (replicas < 1) {
            throw new IllegalArgumentException("replicas must be at least 1: " + replicas);
        }
        final int maxBlocks = Math.min(budget, IndexWriterContext.Configuration.MAX_CHAIN_LENGTH_DEFAULT);
        final long start = System.nanoTime();
        final PodRegistry[] registries = new PodRegistry[replicas];
        for (int k = 0; k < replicas; k++) {
            registries[k] = new PodRegistry();
        }
        final SimFleet fleet = new SimFleet(registries, pods, blockSize, budget, maxBlocks);
        final TraceBlocks blocks = new TraceBlocks(blockSize, maxBlocks);
        final IndexWriter[] writers = new IndexWriter[replicas];
        final IndexReaderPodIndex[] indexes = new IndexReaderPodIndex[replicas];
        final Path[] dirs = new Path[replicas];
        try {
            final Router[] routers = new Router[replicas];
            final RoutingContext[] contexts = new RoutingContext[replicas];
            for (int k = 0; k < replicas; k++) {
                if (policy.equals("cache_aware")) {
                    Files.createDirectories(scratch);
                    dirs[k] = Files.createTempDirectory(scratch, "routing-");
                    writers[k] = IndexWriter.create(new IndexWriterContext().dir(dirs[k]).cell("trace")
                        .shardCount(256).capacityBlocks(Math.max(1L << 16, 2L * pods * budget)).blockSize(blockSize)
                        .maxPods(pods).deleteOnClose(true));
                }
                // Each replica meets the pods in another order, so a pod's slot differs between replicas.
                for (int i = 0; i < pods; i++) {
                    final int p = (i + k * 7) % pods;
                    fleet.register(k, p, writers[k] == null ? i
                        : writers[k].registerPod(BatchEncoder.podId(p), TraceBlocks.MODEL));
                }
                if (writers[k] != null) {
                    writers[k].heartbeat(System.currentTimeMillis());
                    indexes[k] = new IndexReaderPodIndex(IndexReader.attach(new IndexReaderContext().dir(dirs[k])
                        .cell("trace").heartbeatTimeoutMs(0)), 1_000);
                }
                routers[k] = RoutingProfiles.single(profile(policy, indexes[k], registries[k], blockSize),
                    registries[k], indexes[k]);
                contexts[k] = routers[k].newContext();
            }
            long i = 0;
            for (final TraceRequest r : trace) {
                final int n = blocks.load(r);
                final int k = (int) (i++ % replicas);
                final int pod = fleet.route(k, r, blocks, n, routers[k], contexts[k]);
                for (int w = 0; w < replicas; w++) {
                    if (writers[w] != null) {
                        apply(writers[w], fleet.slotOf(w, pod), blocks, fleet.engine(pod));
                    }
                }
            }
            return fleet.result(replicas == 1 ? policy : policy + "_x" + replicas, trace.size(),
                (System.nanoTime() - start) / 1e9);
        } finally {
            for (int k = 0; k < replicas; k++) {
                if (indexes[k] != null) {
                    indexes[k].close();
                }
                if (writers[k] != null) {
                    writers[k].close();
                }
                if (dirs[k] != null) {
                    // The index file went with the writer; the cell's lock file stays by design.
                    io.kvidx.bench.KvidxStore.deleteTree(dirs[k]);
                }
            }
        }
    }

    /** The index calls the daemon's writer makes for the engine's events of one request. */
    private static void apply(final IndexWriter writer, final int slot, final TraceBlocks blocks,
        final SimEngine engine) {
        if (engine.removedCount() > 0) {
            writer.remove(slot, engine.removedRouterKeys(), 0, engine.removedCount());
        }
        final long[] keys = blocks.routerKeys();
        int i = 0;
        while (i < engine.storedCount()) {
            int j = i + 1;
            while (j < engine.storedCount() && engine.stored(j) == engine.stored(j - 1) + 1) {
                j++;
            }
            final int first = engine.stored(i);
            writer.store(slot, keys, first, j - i, first == 0 ? 0 : keys[first - 1]);
            i = j;
        }
    }

    /**
     * @param policy    one of {@link #POLICIES}.
     * @param index     the index (cache-aware only).
     * @param registry  the pods.
     * @param blockSize block size.
     * @return the policy's profile.
     */
    static Profile profile(final String policy, final PodIndex index, final PodRegistry registry,
        final int blockSize) {
        return switch (policy) {
            case "cache_aware" -> RoutingProfiles.cacheAware("cache-aware", index, registry, null, blockSize, null);
            case "approximate" -> Profile.builder("approximate").input(Slots.BLOCK_KEYS)
                .prepare(new PrefixQueryPreparer("overlay", PrefixQueryPreparer.Mode.APPROXIMATE,
                    new PickOverlay(OVERLAY_CAPACITY, PickOverlay.APPROXIMATE_TTL_MS_DEFAULT)))
                .score(new CacheAffinityScorer("cache-affinity"), RoutingProfiles.CACHE_WEIGHT_DEFAULT)
                .score(new LeastLoadScorer("least-load", registry, LoadMetric.REQUESTS),
                    RoutingProfiles.LOAD_WEIGHT_DEFAULT)
                .pick(new MaxScorePicker("max-score", registry))
                .build(registry);
            case "round_robin" -> RoutingProfiles.roundRobin("round-robin", null, registry, true);
            case "least_load" -> Profile.builder("least-load").input(Slots.BLOCK_KEYS)
                .score(new LeastLoadScorer("least-load", registry, LoadMetric.REQUESTS), 1.0)
                .pick(new MaxScorePicker("max-score", registry))
                .build(registry);
            default -> throw new IllegalArgumentException("unknown policy " + policy + "; one of " + POLICIES);
        };
    }
}
