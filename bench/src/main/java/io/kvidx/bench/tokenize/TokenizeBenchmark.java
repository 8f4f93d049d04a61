package io.kvidx.bench.tokenize;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.routing.TokenIds;
import io.kvidx.tokenize.HfTokenizer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
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
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A router's Prepare stage for a text request: a prompt of 2,048 tokens ({@link BenchTexts}: mixed English, exact
 * count under the tokenizer) to token ids to 128 router keys (block size 16, chain seeded by the model), three ways:
 * <ul>
 *   <li>{@code kvidxTextToKeys}: kvidx's path, {@link HfTokenizer#encode(String, TokenIds)} (one native call to
 *   encode, one to read the ids, DJL's {@code Encoding} skipped) into a reused buffer, then the keys;</li>
 *   <li>{@code djlTextToKeys}: DJL's own default path, {@code HuggingFaceTokenizer.encode(text)} (which builds the
 *   whole {@code Encoding}: ids, type ids, token strings, word ids, masks, offsets) then {@code getIds()} as
 *   {@code long[]}, copied to a fresh {@code int[]}, then the keys. DJL's tokenizer is built with
 *   {@code truncation=false, padding=false}, as kvidx's: DJL's defaults would cut the prompt at 512 tokens;</li>
 *   <li>{@code routerKeysOnly}: the keys from the text's token ids, given (the share that is not tokenization).</li>
 * </ul>
 * Each invocation takes the next text of a pool of {@link #texts} distinct texts, so no cache answers a repeated
 * prompt (the Rust library's per-word BPE cache still helps with common words, as it does in production).
 *
 * <p>Run: {@code ./kvidx bench tokenize} (summary table and JSON), or
 * {@code ./kvidx bench TokenizeBenchmark -prof gc} (SampleTime gives the percentiles; {@code gc.alloc.rate.norm} the
 * bytes per request). Setup checks that both paths give every text exactly {@link #tokens} tokens and the same keys.
 *
 * <p><b>Note:</b> JMH state of one benchmark thread ({@code Scope.Thread}); not thread safe.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgs = {"--enable-native-access=ALL-UNNAMED"})
public class TokenizeBenchmark {
    /** Tokens per router key block. */
    public static final int BLOCK = 16;
    /** Seed of the text pool. */
    public static final long TEXT_SEED = 2048;

    /** A tokenizer.json or its directory; empty for the bundled Qwen3 tokenizer ({@link BundledTokenizer}). */
    @Param("")
    public String tokenizer;

    /** Tokens per prompt. */
    @Param("2048")
    public int tokens;

    /** Distinct texts in the pool (a power of two). */
    @Param("64")
    public int texts;

    private HfTokenizer kvidx;
    private HuggingFaceTokenizer djl;
    private BenchTexts pool;
    private RouterKeyHasher hasher;
    private long seed;
    private final TokenIds ids = new TokenIds();
    private long[] keys;
    private int mask;
    private int next;

    /**
     * Loads both tokenizers, builds the pool and checks both paths against each other.
     */
    @Setup(Level.Trial)
    public void setUp() {
        if (Integer.bitCount(texts) != 1) {
            throw new IllegalArgumentException("texts must be a power of two: " + texts);
        }
        final Path path = BundledTokenizer.resolve(tokenizer);
        kvidx = HfTokenizer.load(path, true);
        final Path file = Files.isDirectory(path) ? path.resolve(HfTokenizer.TOKENIZER_FILE) : path;
        try {
            djl = HuggingFaceTokenizer.newInstance(file, Map.of("addSpecialTokens", "true", "truncation", "false",
                "padding", "false"));
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
        pool = BenchTexts.generate(kvidx, texts, tokens, TEXT_SEED);
        hasher = new RouterKeyHasher(BLOCK);
        seed = RouterKeyHasher.chainSeed(BundledTokenizer.MODEL, null, null);
        keys = new long[tokens / BLOCK];
        mask = texts - 1;
        for (int i = 0; i < texts; i++) {
            next = i;
            kvidxTextToKeys();
            final long[] viaKvidx = keys.clone();
            final int kvidxTokens = ids.length();
            next = i;
            djlTextToKeys();
            final int djlTokens = djl.encode(pool.text(i)).getIds().length;
            if (kvidxTokens != tokens || djlTokens != tokens || !Arrays.equals(viaKvidx, keys)) {
                throw new IllegalStateException("text " + i + ": kvidx (" + kvidxTokens + " tokens) and DJL ("
                    + djlTokens + " tokens) disagree");
            }
        }
        next = 0;
    }

    /**
     * Frees the native tokenizers.
     */
    @TearDown(Level.Trial)
    public void tearDown() {
        kvidx.close();
        djl.close();
    }

    /**
     * kvidx's path: text to ids in a reused buffer, then router keys.
     *
     * @return the last key.
     */
    @Benchmark
    public long kvidxTextToKeys() {
        final String text = pool.text(next++ & mask);
        final int n = kvidx.encode(text, ids);
        return keys[hasher.keys(seed, ids.ids(), n, keys) - 1];
    }

    /**
     * DJL's default path: {@code encode(text).getIds()} to a fresh {@code int[]}, then router keys.
     *
     * @return the last key.
     */
    @Benchmark
    public long djlTextToKeys() {
        final String text = pool.text(next++ & mask);
        final long[] longs = djl.encode(text).getIds();
        final int[] t = new int[longs.length];
        for (int i = 0; i < t.length; i++) {
            t[i] = (int) longs[i];
        }
        return keys[hasher.keys(seed, t, t.length, keys) - 1];
    }

    /**
     * Router keys alone, from the text's token ids.
     *
     * @return the last key.
     */
    @Benchmark
    public long routerKeysOnly() {
        final int[] t = pool.ids(next++ & mask);
        return keys[hasher.keys(seed, t, t.length, keys) - 1];
    }

    /**
     * @return the text pool (after setup).
     */
    BenchTexts pool() {
        return pool;
    }

    /**
     * @return the keys of the last invocation.
     */
    long[] lastKeys() {
        return keys.clone();
    }

    /**
     * @return token ids of the last text {@code kvidxTextToKeys} tokenized.
     */
    int[] lastTokens() {
        return Arrays.copyOf(ids.ids(), ids.length());
    }

    /**
     * @param i the text the next invocation takes.
     */
    void position(final int i) {
        next = i;
    }
}
