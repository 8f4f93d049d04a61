package io.kvidx.bench.routing;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodRole;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.routing.overlay.PickOverlay;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * One full routing decision on a real shared-memory index of 2^20 blocks (64 pods in a 64-pod cell, 32,768 prompts
 * of 32 blocks; the file is larger than a 32 MiB L3, so decisions meet the index cold, as a router does). Each
 * prompt's chain is held in full by one pod and by three more pods at random depths, so the query has several
 * drop-off points; decisions take the prompts in a random order. The headline, {@code cacheAwareFromTokensDecision},
 * starts from the prompt's 512 token ids and includes hashing them into 32 router keys; the other variants take the
 * keys already hashed, and {@code indexQueryOnly} is the prefix query alone.
 *
 * <p>Run: {@code ./kvidx bench DecisionBenchmark -prof gc} (SampleTime gives p99). Setup prints the index's size.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgs = {"--enable-native-access=ALL-UNNAMED"})
public class DecisionBenchmark {
    /** Pods, all in one 64-pod cell. */
    static final int PODS = 64;
    /** Blocks per prompt. */
    static final int CHAIN = 32;
    /** Prompts: 2^15 of 32 blocks, each held in full by one pod, index 2^20 distinct blocks. */
    static final int PROMPTS = 1 << 15;
    /** Tokens per block. */
    static final int BLOCK = 16;

    private Path dir;
    private IndexWriter writer;
    private IndexReaderPodIndex index;
    private Router cacheAware;
    private Router cacheAwareOverlay;
    private Router roundRobin;
    private Router fromTokens;
    private RoutingContext tokensCtx;
    private int[][] prompts;
    private RoutingContext ctx;
    private RoutingContext overlayCtx;
    private RoutingContext rrCtx;
    private long[][] chains;
    private int[] order;
    private final PrefixResult prefix = new PrefixResult();
    private int next;

    /**
     * Builds the index, the registry and the routers.
     *
     * @throws IOException when the temp dir cannot be made.
     */
    @Setup(Level.Trial)
    public void setUp() throws IOException {
        final Path shm = Path.of("/dev/shm");
        dir = Files.createTempDirectory(Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")),
            "kvidx-decision-");
        // The cell is sized to the fleet (64 pods: plain 64-bit pod bitmaps), as `kvidx daemon --max-pods 64`; 30 %
        // headroom so that no shard evicts while loading (shards fill unevenly).
        writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("bench").shardCount(256)
            .capacityBlocks((long) PROMPTS * CHAIN * 13 / 10 + 64L * 256).blockSize(BLOCK).maxPods(PODS)
            .deleteOnClose(true));
        final PodRegistry registry = new PodRegistry();
        final int[] slots = new int[PODS];
        for (int p = 0; p < PODS; p++) {
            slots[p] = writer.registerPod("pod-" + p, "model");
            registry.register(slots[p], "pod-" + p, "model", PodRole.BOTH, null);
        }
        final SplittableRandom random = new SplittableRandom(7);
        chains = new long[PROMPTS][CHAIN];
        prompts = new int[PROMPTS][CHAIN * BLOCK];
        final RouterKeyHasher hasher = new RouterKeyHasher(BLOCK);
        final long seed = RouterKeyHasher.chainSeed("model", null, null);
        for (int i = 0; i < PROMPTS; i++) {
            for (int t = 0; t < CHAIN * BLOCK; t++) {
                prompts[i][t] = random.nextInt(150_000);
            }
            hasher.keys(seed, prompts[i], CHAIN * BLOCK, chains[i]);
            writer.store(slots[random.nextInt(PODS)], chains[i], 0, CHAIN);
            for (int h = 0; h < 3; h++) {
                writer.store(slots[random.nextInt(PODS)], chains[i], 0, 1 + random.nextInt(CHAIN));
            }
        }
        if (writer.evictions() != 0) {
            throw new IllegalStateException("the index evicted " + writer.evictions() + " entries while loading");
        }
        order = new int[PROMPTS];
        for (int i = 0; i < PROMPTS; i++) {
            order[i] = i;
        }
        for (int i = PROMPTS - 1; i > 0; i--) {
            final int j = random.nextInt(i + 1);
            final int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int p = 0; p < PODS; p++) {
            registry.load(slots[p], random.nextInt(4), random.nextInt(16), random.nextInt(20_000));
        }
        writer.heartbeat(System.currentTimeMillis());
        index = new IndexReaderPodIndex(IndexReader.attach(new IndexReaderContext().dir(dir).cell("bench")
            .heartbeatTimeoutMs(0)), 1_000);
        cacheAware = RoutingProfiles.single(RoutingProfiles.cacheAware("cache-aware", index, registry, null, 16,
            null), registry, index);
        fromTokens = RoutingProfiles.single(RoutingProfiles.cacheAware("cache-aware-tokens", index, registry,
            hasher, null), registry, index);
        cacheAwareOverlay = RoutingProfiles.single(RoutingProfiles.cacheAware("cache-aware-overlay", index,
            registry, null, 16, new PickOverlay(1 << 16, PickOverlay.TTL_MS_DEFAULT)), registry, index);
        roundRobin = RoutingProfiles.single(RoutingProfiles.roundRobin("round-robin", index, registry, true),
            registry, index);
        ctx = cacheAware.newContext();
        overlayCtx = cacheAwareOverlay.newContext();
        tokensCtx = fromTokens.newContext();
        rrCtx = roundRobin.newContext();
        System.out.printf("%nDecisionBenchmark index: %d blocks, file %.1f MiB (%d prompts of %d blocks, %d pods)%n",
            indexedBlocks(), indexFileBytes() / (1024.0 * 1024.0), PROMPTS, CHAIN, PODS);
    }

    /**
     * @return distinct blocks in the index (the writer's entry count).
     */
    long indexedBlocks() {
        return writer.entryCount();
    }

    /**
     * @return bytes of the index file the decisions read.
     * @throws IOException when the file cannot be read.
     */
    long indexFileBytes() throws IOException {
        return Files.size(index.reader().path());
    }

    /**
     * Unmaps and deletes the index.
     *
     * @throws IOException when the temp dir cannot be removed.
     */
    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        index.close();
        writer.close();
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /**
     * @return the picked slot.
     */
    @Benchmark
    public int cacheAwareDecision() {
        final long[] chain = chains[order[next++ & (PROMPTS - 1)]];
        return cacheAware.routeKeys(ctx, chain, CHAIN);
    }

    /**
     * @return the picked slot.
     */
    @Benchmark
    public int cacheAwareWithOverlayDecision() {
        final long[] chain = chains[order[next++ & (PROMPTS - 1)]];
        return cacheAwareOverlay.routeKeys(overlayCtx, chain, CHAIN);
    }

    /**
     * The decision from token ids, the headline: 512 tokens hashed to 32 router keys (model-seeded), then as
     * {@link #cacheAwareDecision}.
     *
     * @return the picked slot.
     */
    @Benchmark
    public int cacheAwareFromTokensDecision() {
        final int[] prompt = prompts[order[next++ & (PROMPTS - 1)]];
        tokensCtx.reset().tokens(prompt, 0, prompt.length).request().model("model");
        return fromTokens.plan(tokensCtx).slot();
    }

    /**
     * The index query alone (the decision's largest part), for comparison.
     *
     * @return the deepest depth.
     */
    @Benchmark
    public int indexQueryOnly() {
        final long[] chain = chains[order[next++ & (PROMPTS - 1)]];
        return index.reader().query(chain, CHAIN, null, prefix);
    }

    /**
     * @return the picked slot.
     */
    @Benchmark
    public int roundRobinDecision() {
        final long[] chain = chains[order[next++ & (PROMPTS - 1)]];
        return roundRobin.routeKeys(rrCtx, chain, CHAIN);
    }
}
