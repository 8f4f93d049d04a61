package io.kvidx.bench.keys;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import io.kvidx.client.json.TokenIdsFastPath;
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
 * Reading a prompt's token ids out of a request body, the part of a {@code kvidx router} or {@code /query} request
 * that grows with the prompt: {@link TokenIdsFastPath#read} (a word at a time where it can) against the same scan
 * written a byte at a time ({@link #byteScan}, what the fast path was before it read words, and what anyone would
 * write first). The body is the router bench's: {@code {"model":...,"prompt":[...]}} with ids drawn from a
 * 65,536-token vocabulary (1 to 5 digits), compact ({@code ,}) or spaced ({@code , }) as Python's json.dumps writes
 * it. Report ns per body; divide by {@code tokens} for ns per id.
 *
 * <p>{@code java -cp bench/target/kvidx-bench.jar org.openjdk.jmh.Main TokenIdsBenchmark}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class TokenIdsBenchmark {
    @Param({"2500"})
    int tokens;

    @Param({"65536", "151936"})
    int vocabulary;

    @Param({"compact", "spaced"})
    String separator;

    private final TokenIdsFastPath fastPath = new TokenIdsFastPath("prompt");
    private byte[] body;
    private int open;
    private int[] out;

    /** Builds the body. */
    @Setup
    public void setUp() {
        final SplittableRandom random = new SplittableRandom(42L);
        final StringBuilder sb = new StringBuilder("{\"model\":\"m\",\"max_tokens\":1,\"prompt\":[");
        for (int k = 0; k < tokens; k++) {
            sb.append(k == 0 ? "" : "compact".equals(separator) ? "," : ", ").append(random.nextInt(vocabulary));
        }
        body = sb.append("]}").toString().getBytes(StandardCharsets.US_ASCII);
        open = fastPath.find(body, body.length);
        out = new int[tokens + 1];
        if (fastPath.read(body, open, body.length, out) < 0 || byteScan(body, open, body.length, out) < 0) {
            throw new IllegalStateException("the body is not read");
        }
    }

    /** @return the end of the array, so that the work cannot be dropped. */
    @Benchmark
    public int wordAtATime() {
        return fastPath.read(body, open, body.length, out) + out[tokens - 1];
    }

    /** @return the end of the array, so that the work cannot be dropped. */
    @Benchmark
    public int byteAtATime() {
        return byteScan(body, open, body.length, out) + out[tokens - 1];
    }

    /** The baseline: the same contract as {@link TokenIdsFastPath#read}, one byte at a time. */
    static int byteScan(final byte[] b, final int open, final int len, final int[] out) {
        int i = skip(b, open + 1, len);
        int n = 0;
        if (i < len && b[i] == ']') {
            return i + 1;
        }
        while (i < len) {
            final int first = i;
            long v = 0;
            while (i < len && b[i] >= '0' && b[i] <= '9') {
                v = v * 10 + (b[i] - '0');
                if (v > Integer.MAX_VALUE) {
                    return -1;
                }
                i++;
            }
            if (i == first || (b[first] == '0' && i - first > 1) || n == out.length) {
                return -1;
            }
            out[n++] = (int) v;
            i = skip(b, i, len);
            if (i >= len) {
                return -1;
            }
            if (b[i] == ']') {
                return i + 1;
            }
            if (b[i] != ',') {
                return -1;
            }
            i = skip(b, i + 1, len);
        }
        return -1;
    }

    private static int skip(final byte[] b, final int from, final int len) {
        int i = from;
        while (i < len && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')) {
            i++;
        }
        return i;
    }
}
