package io.kvidx.bench.ingest;

import io.kvidx.bench.trace.VllmEventEncoder;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.EngineDecoders;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterAgent;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One writer thread applying a fleet's steady churn to a warm index far larger than the cache: the end-to-end cost of
 * a stored or removed block (decode, engine-hash map, router keys, index, tier map, counters), no transport.
 *
 * <p>The fleet: {@link #pods} pods (128: more than 64, so the index keeps pod lists, as the trace bench's cell), each
 * holding {@link #live} chains of {@value #CHAIN} blocks of 16 tokens (12,288 blocks per pod: three quarters of the
 * trace bench's 16,384-block engines). A quarter of the chains are shared by groups of {@value #SHARE} pods (the same
 * tokens, so the same router keys and one index entry with several holders); the index holds about 1.2 M entries
 * (64-pod cells would be direct bitmaps; this is the pod-list layout). Each batch one pod sends is
 * {@code [ts, [BlockRemoved of its oldest chains, BlockStored of new chains...], nil]}: as many blocks removed as
 * stored, the steady state of a full cache. Chains cycle through {@code 2 x live} per pod, so the batches repeat and
 * are encoded once, before the benchmark; pods take turns, batch by batch.
 *
 * <p>Two parameters vary what a block costs (the figures in docs/perf.md before 2026-11-28 are {@code medium=GPU},
 * {@code parents=none}):
 * <ul>
 *   <li>{@link #medium}: {@code GPU}, no tier map entry (the tier map records offloaded blocks only); {@code CPU},
 *   every churned block offloaded: each store writes a tier map entry and each removal takes it out; {@code mixed},
 *   chains alternate between GPU and CPU (the shared chains stay on GPU), half the blocks in the tier map. A block
 *   moving between media (stored on CPU while it is still on GPU, then removed from GPU) is not modelled.</li>
 *   <li>{@link #parents}: {@code none}, each chain arrives as one BlockStored of {@value #CHAIN} blocks without a
 *   parent; {@code chained}, as {@value #EVENTS_PER_CHAIN} BlockStored events of {@value #BLOCKS_PER_EVENT} blocks,
 *   each after the first naming the previous one's last block as its parent (as an engine publishes a request's
 *   blocks step by step): the parent is looked up in the pod's block map, its router key seeds the event's keys, and
 *   the index counts the child under the parent's entry.</li>
 * </ul>
 * The block operations per batch stay {@code 2 x CHAINS_PER_BATCH x CHAIN}; the setup fails when a parent or a
 * removal was not found ({@code UNKNOWN_PARENTS}, {@code UNKNOWN_REMOVALS}).
 *
 * <p>Memory: index table, writer records, 128 block maps and the tier map take well over 100 MB, the batches another
 * ≈ 200 MB streamed once per cycle: nothing of it stays in the cache between two touches of the same block.
 *
 * <p>{@code java -cp bench/target/kvidx-bench.jar org.openjdk.jmh.Main WriterChurnBenchmark} (every combination of
 * the parameters; {@code -p medium=GPU -p parents=none} for the earlier figure alone)
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx8g", "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED"})
public class WriterChurnBenchmark {
    /** Blocks per chain (and per BlockStored event). */
    static final int CHAIN = 32;
    /** Pods sharing a shared chain. */
    static final int SHARE = 8;
    private static final int BLOCK_SIZE = 16;
    /** Chains removed and stored per batch. */
    private static final int CHAINS_PER_BATCH = 2;
    /** BlockStored events per chain with {@code parents=chained}. */
    static final int EVENTS_PER_CHAIN = 4;
    /** Blocks per BlockStored event with {@code parents=chained}. */
    static final int BLOCKS_PER_EVENT = CHAIN / EVENTS_PER_CHAIN;

    /** Pods of the fleet. */
    @Param({"128"})
    public int pods;

    /** Chains each pod holds. */
    @Param({"384"})
    public int live;

    /** Medium of the churned blocks: {@code GPU}, {@code CPU} (offloaded: in the tier map) or {@code mixed}. */
    @Param({"GPU", "CPU", "mixed"})
    public String medium;

    /** {@code none}: one parentless BlockStored per chain; {@code chained}: parent-linked BlockStored events. */
    @Param({"none", "chained"})
    public String parents;

    private Path dir;
    private IndexWriter index;
    private WriterPool pool;
    private WriterAgent agent;
    private IngestCounters counters;
    private int[] podNumbers;
    /** Per step (cycle position) and pod: the batch, step-major. */
    private UnsafeBuffer[] batches;
    private int next;

    /**
     * Builds the index, fills every pod with its live chains, and encodes one cycle of churn batches.
     *
     * @throws IOException on failure.
     */
    @Setup(Level.Trial)
    public void setUp() throws IOException {
        if (live % CHAINS_PER_BATCH != 0) {
            throw new IllegalArgumentException("live must be a multiple of CHAINS_PER_BATCH");
        }
        if (!parents.equals("none") && !parents.equals("chained")) {
            throw new IllegalArgumentException("parents must be none or chained: " + parents);
        }
        mediumOf(0);
        dir = Files.createTempDirectory(Path.of("/dev/shm"), "kvidx-bench-churn");
        index = IndexWriter.create(new IndexWriterContext().dir(dir).capacityBlocks(1L << 21)
            .deleteOnClose(true));
        final PodDirectory directory = new PodDirectory(pods * 2);
        podNumbers = new int[pods];
        for (int p = 0; p < pods; p++) {
            podNumbers[p] = directory.podNumber("churn-pod-" + p, "bench-model");
        }
        counters = IngestCounters.local();
        pool = new WriterPool(1, 1 << 24, index, directory, counters, new IngestErrors(),
            SystemEpochClock.INSTANCE, 0, BusySpinIdleStrategy::new, BusySpinIdleStrategy::new,
            EngineDecoders.standard());
        agent = pool.agents()[0];
        final int cycle = 2 * live;
        for (int c = 0; c < live; c += CHAINS_PER_BATCH) {
            for (int p = 0; p < pods; p++) {
                apply(p, batch(p, -1, c));
            }
        }
        final int steps = cycle / CHAINS_PER_BATCH;
        batches = new UnsafeBuffer[steps * pods];
        for (int s = 0; s < steps; s++) {
            final int removeFrom = s * CHAINS_PER_BATCH;
            final int storeFrom = (removeFrom + live) % cycle;
            for (int p = 0; p < pods; p++) {
                batches[s * pods + p] = new UnsafeBuffer(batch(p, removeFrom, storeFrom));
            }
        }
        // One whole cycle before JMH's warm-up: every block map and the index reach their steady size.
        for (int i = 0; i < batches.length; i++) {
            applyNext();
        }
        if (counters.get(CounterType.UNKNOWN_PARENTS).get() != 0 || counters.get(CounterType.EVENTS_DROPPED).get() != 0
            || counters.get(CounterType.UNKNOWN_REMOVALS).get() != 0) {
            throw new IllegalStateException("the churn was not applied as planned: " + counters.describe());
        }
        System.out.printf("%n[churn] index entries %,d, pods %d, blocks per pod %,d, batches per cycle %,d, medium %s,"
            + " parents %s, tier map entries %,d%n", index.entryCount(), pods, live * CHAIN, batches.length, medium,
            parents, tierEntries());
    }

    /** Closes the index and removes the cell. */
    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        System.out.printf("%n[churn] stored %,d removed %,d duplicates %,d unknown removals %,d entries %,d%n",
            counters.get(CounterType.BLOCKS_STORED).get(), counters.get(CounterType.BLOCKS_REMOVED).get(),
            counters.get(CounterType.DUPLICATE_BLOCKS).get(), counters.get(CounterType.UNKNOWN_REMOVALS).get(),
            index.entryCount());
        pool.close();
        index.close();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /**
     * Applies one pod's churn batch: {@code CHAINS_PER_BATCH x 32} blocks removed and as many stored.
     *
     * @return work count.
     */
    @Benchmark
    @OperationsPerInvocation(2 * CHAIN * CHAINS_PER_BATCH)
    public int churn() {
        return applyNext();
    }

    private int applyNext() {
        final int i = next;
        next = i + 1 == batches.length ? 0 : i + 1;
        return apply(i % pods, batches[i]);
    }

    private int apply(final int p, final byte[] payload) {
        return apply(p, new UnsafeBuffer(payload));
    }

    private int apply(final int p, final UnsafeBuffer b) {
        if (!pool.offer(podNumbers[p], WriterMessages.VLLM_BATCH, b, 0, b.capacity())) {
            throw new IllegalStateException("writer queue full");
        }
        int work = 0;
        while (!pool.isIdle()) {
            work += agent.doWork();
        }
        return work;
    }

    /**
     * The global identity of pod {@code p}'s chain number {@code c}: a quarter of the chain numbers are shared by
     * groups of {@value #SHARE} pods.
     */
    private long chainId(final int p, final int c) {
        final int holder = c % 4 == 0 ? p / SHARE : p;
        return (long) c << 20 | holder;
    }

    /**
     * @param removeFrom first chain removed, -1 for none.
     * @param storeFrom  first chain stored.
     */
    private byte[] batch(final int p, final int removeFrom, final int storeFrom) {
        try (MessageBufferPacker out = MessagePack.newDefaultBufferPacker()) {
            // One BlockRemoved per run of removed chains on the same medium (one event when all share it).
            final int removes = removeFrom < 0 ? 0 : removeRuns(removeFrom);
            final int storesPerChain = parents.equals("chained") ? EVENTS_PER_CHAIN : 1;
            out.packArrayHeader(3).packDouble(1.7e9).packArrayHeader(removes + CHAINS_PER_BATCH * storesPerChain);
            for (int c = removeFrom, end = removeFrom + CHAINS_PER_BATCH; removes > 0 && c < end; ) {
                int last = c + 1;
                while (last < end && mediumOf(last).equals(mediumOf(c))) {
                    last++;
                }
                out.packMapHeader(3);
                out.packString("type").packString("BlockRemoved");
                out.packString("block_hashes").packArrayHeader((last - c) * CHAIN);
                for (int r = c; r < last; r++) {
                    for (int b = 0; b < CHAIN; b++) {
                        VllmEventEncoder.packUint64(out, engineHash(chainId(p, r), b));
                    }
                }
                out.packString("medium").packString(mediumOf(c));
                c = last;
            }
            for (int c = storeFrom; c < storeFrom + CHAINS_PER_BATCH; c++) {
                final long id = chainId(p, c);
                final SplittableRandom tokens = new SplittableRandom(id);
                final int perEvent = CHAIN / storesPerChain;
                for (int e = 0; e < storesPerChain; e++) {
                    final int first = e * perEvent;
                    out.packMapHeader(6);
                    out.packString("type").packString("BlockStored");
                    out.packString("block_hashes").packArrayHeader(perEvent);
                    for (int b = first; b < first + perEvent; b++) {
                        VllmEventEncoder.packUint64(out, engineHash(id, b));
                    }
                    out.packString("parent_block_hash");
                    if (first == 0) {
                        out.packNil();
                    } else {
                        VllmEventEncoder.packUint64(out, engineHash(id, first - 1));
                    }
                    out.packString("token_ids").packArrayHeader(perEvent * BLOCK_SIZE);
                    for (int t = 0; t < perEvent * BLOCK_SIZE; t++) {
                        out.packInt(tokens.nextInt(151_000));
                    }
                    out.packString("block_size").packInt(BLOCK_SIZE);
                    out.packString("medium").packString(mediumOf(c));
                }
            }
            out.packNil();
            return out.toByteArray();
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** @return the tier map entries of the fleet's pods (offloaded blocks). */
    private long tierEntries() {
        long entries = 0;
        for (int p = 0; p < pods; p++) {
            entries += index.tiers().size(index.slotOf("churn-pod-" + p));
        }
        return entries;
    }

    /** @return the medium chain number {@code c} is stored on and removed from ({@link #medium}). */
    private String mediumOf(final int c) {
        return switch (medium) {
            case "GPU" -> "GPU";
            case "CPU" -> "CPU";
            case "mixed" -> c % 2 == 0 ? "GPU" : "CPU";
            default -> throw new IllegalArgumentException("medium must be GPU, CPU or mixed: " + medium);
        };
    }

    /** @return the BlockRemoved events of a batch removing chains from {@code removeFrom}: one per run of a medium. */
    private int removeRuns(final int removeFrom) {
        int runs = 1;
        for (int c = removeFrom + 1; c < removeFrom + CHAINS_PER_BATCH; c++) {
            if (!mediumOf(c).equals(mediumOf(c - 1))) {
                runs++;
            }
        }
        return runs;
    }

    private static long engineHash(final long chainId, final int block) {
        long z = chainId * 0x9E3779B97F4A7C15L + block * 0xBF58476D1CE4E5B9L + 1;
        z = (z ^ z >>> 30) * 0xBF58476D1CE4E5B9L;
        z = (z ^ z >>> 27) * 0x94D049BB133111EBL;
        return z ^ z >>> 31;
    }
}
