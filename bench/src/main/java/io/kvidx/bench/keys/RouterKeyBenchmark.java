package io.kvidx.bench.keys;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.client.keys.vllm.VllmBlockHasher;
import io.kvidx.client.keys.vllm.VllmExtraKeys;
import io.kvidx.client.keys.vllm.VllmHashAlgorithm;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Router keys for one prompt: 2,048 tokens at block size 16 give 128 chained keys. Goal: under 2 us/op and
 * 0 B/op (run with {@code -prof gc}). For comparison, vLLM's own hashes of the same prompt (what kvidx pays when it
 * recomputes an engine's block hashes).
 *
 * <p>{@code ./kvidx bench RouterKeyBenchmark -prof gc} or
 * {@code java -cp bench/target/kvidx-bench.jar org.openjdk.jmh.Main RouterKeyBenchmark -prof gc}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RouterKeyBenchmark {
    @Param({"2048"})
    int tokenCount;

    @Param({"16"})
    int blockSize;

    private RouterKeyHasher hasher;
    private long seed;
    private int[] tokens;
    private long[] keys;

    /** Builds a random prompt. */
    @Setup
    public void setUp() {
        hasher = new RouterKeyHasher(blockSize);
        seed = RouterKeyHasher.chainSeed("Qwen/Qwen3-0.6B", null, null);
        tokens = new SplittableRandom(42L).ints(tokenCount, 0, 151_936).toArray();
        keys = new long[tokenCount / blockSize];
    }

    /**
     * @return last key (so that the work cannot be dropped).
     */
    @Benchmark
    public long keysOfPrompt() {
        final int n = hasher.keys(seed, tokens, tokenCount, keys);
        return keys[n - 1];
    }

    /** State for the vLLM comparison: one hasher per algorithm. */
    @State(Scope.Thread)
    public static class VllmState {
        @Param({"sha256", "sha256_cbor", "xxhash"})
        String algo;

        VllmBlockHasher hasher;
        byte[] noneHash;
        long[] values;

        /** Builds the hasher. */
        @Setup
        public void setUp() {
            hasher = new VllmBlockHasher(VllmHashAlgorithm.fromName(algo), 16);
            noneHash = hasher.noneHash("42");
            values = new long[128];
        }
    }

    /**
     * @param state vLLM hasher.
     * @return last event value.
     */
    @Benchmark
    public long vllmHashesOfPrompt(final VllmState state) {
        final int n = state.hasher.hashRequest(state.noneHash, tokens, tokenCount, VllmExtraKeys.NONE, null,
            state.values);
        return state.values[n - 1];
    }

    /**
     * @return key of one block (the per-block cost).
     */
    @Benchmark
    public long oneBlockKey() {
        return hasher.blockKey(seed, tokens, 0);
    }
}
