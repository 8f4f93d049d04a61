package io.kvidx.bench.ingest;

import io.kvidx.daemon.ingest.vllm.BatchRankReader;
import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.ingest.vllm.VllmEventDecoder;
import io.kvidx.daemon.event.BlockEventListener;
import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Decoding vLLM msgpack batches (a BlockStored map event of 25 blocks x 16 tokens, uint64 hashes, like the real
 * capture): blocks decoded per second, and bytes allocated per block with {@code -prof gc} (expected 0); and the
 * data-parallel rank read the ZeroMQ transport does on every batch before it is queued ({@code readRank}, in
 * batches per second).
 *
 * <p>{@code java -cp bench/target/kvidx-bench.jar org.openjdk.jmh.Main VllmDecodeBenchmark -prof gc}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED"})
public class VllmDecodeBenchmark {
    private static final int BLOCKS = 25;

    private final VllmEventDecoder decoder = new VllmEventDecoder();
    private final Sink sink = new Sink();
    private final BatchRankReader rankReader = new BatchRankReader();
    private UnsafeBuffer payload;
    private int length;

    /** Builds the payload. */
    @Setup
    public void setUp() {
        final byte[] bytes = VllmBatches.stored(new SplittableRandom(42), BLOCKS, 16, new long[BLOCKS],
            new int[BLOCKS * 16]);
        payload = new UnsafeBuffer(bytes);
        length = bytes.length;
    }

    /**
     * @return the batch's rank.
     */
    @Benchmark
    public int readRank() {
        return rankReader.read(payload, 0, length);
    }

    /**
     * @return a value depending on every hash (so the work cannot be dropped).
     */
    @Benchmark
    @OperationsPerInvocation(BLOCKS)
    public long decodeBlocks() {
        decoder.decode(payload, 0, length, sink);
        return sink.last;
    }

    static final class Sink implements BlockEventListener {
        long last;

        @Override
        public void onBlockStored(final BlockEvent event) {
            long x = 0;
            final long[] h = event.hashes();
            for (int i = 0; i < event.hashCount(); i++) {
                x ^= h[i];
            }
            last = x + event.tokens()[event.tokenCount() - 1];
        }

        @Override
        public void onBlockRemoved(final BlockEvent event) {
        }

        @Override
        public void onAllBlocksCleared(final BlockEvent event) {
        }

        @Override
        public void onDropped(final BlockEvent event) {
        }
    }
}
