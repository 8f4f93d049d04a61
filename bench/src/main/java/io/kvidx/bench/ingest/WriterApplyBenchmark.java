package io.kvidx.bench.ingest;

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
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The writer's share of ingestion on one thread, no transport: queue a vLLM batch (BlockStored of 16 blocks of
 * 16 tokens), then let the writer agent decode it, recompute the router keys, update the engine-hash map and store
 * into a real index. A pool of 4096 distinct batches is cycled, so after the first pass the stores are re-stores
 * of held blocks. Blocks per second = the ceiling of one writer thread.
 *
 * <p>{@code java -cp bench/target/kvidx-bench.jar org.openjdk.jmh.Main WriterApplyBenchmark -prof gc}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED"})
public class WriterApplyBenchmark {
    private static final int BLOCKS = 16;
    private static final int BATCHES = 4096;

    /** Payload format. */
    @Param({"vllm"})
    public String format;

    private Path dir;
    private IndexWriter index;
    private WriterPool pool;
    private WriterAgent agent;
    private int pod;
    private final UnsafeBuffer[] batches = new UnsafeBuffer[BATCHES];
    private int next;

    /**
     * @throws IOException on failure.
     */
    @Setup(Level.Trial)
    public void setUp() throws IOException {
        dir = Files.createTempDirectory(Path.of("/dev/shm"), "kvidx-bench-writer");
        index = IndexWriter.create(new IndexWriterContext().dir(dir).capacityBlocks(1L << 21).deleteOnClose(true));
        final PodDirectory directory = new PodDirectory(16);
        pod = directory.podNumber("bench-pod", "bench-model");
        pool = new WriterPool(1, 1 << 22, index, directory, IngestCounters.local(), new IngestErrors(),
            SystemEpochClock.INSTANCE, 0, BusySpinIdleStrategy::new, BusySpinIdleStrategy::new,
            EngineDecoders.standard());
        agent = pool.agents()[0];
        final SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < BATCHES; i++) {
            batches[i] = new UnsafeBuffer(VllmBatches.stored(random, BLOCKS, 16, new long[BLOCKS],
                new int[BLOCKS * 16]));
        }
    }

    /** Closes the index. */
    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        pool.close();
        index.close();
        // The pods' engine-hash maps live in the cell's state directory.
        try (java.util.stream.Stream<Path> files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /**
     * @return work count.
     */
    @Benchmark
    @OperationsPerInvocation(BLOCKS)
    public int applyBatch() {
        final UnsafeBuffer b = batches[next];
        next = (next + 1) & (BATCHES - 1);
        pool.offer(pod, WriterMessages.VLLM_BATCH, b, 0, b.capacity());
        return agent.doWork();
    }
}
