package io.kvidx.bench.tokenize;

import io.kvidx.bench.BenchOptions;
import io.kvidx.bench.Json;
import io.kvidx.bench.trace.TraceFile;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.tokenize.HfTokenizer;
import io.kvidx.tokenize.TokenizePreparer;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.format.OutputFormatFactory;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;
import org.openjdk.jmh.util.Statistics;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code kvidx bench tokenize}: runs {@link TokenizeBenchmark} under JMH (SampleTime, with JMH's gc profiler) and
 * prints one table of p50 / p90 / p99 and bytes allocated per request for kvidx's path, DJL's default path and the
 * router keys alone, then (with {@code --json}) one JSON line last. Before JMH runs, this process builds the text
 * pool and checks it as each fork does, and reports its token and key counts.
 *
 * <p><b>Note:</b> not thread safe; one run at a time.
 */
public final class TokenizeBench {
    /** Rows, as JMH names the benchmark methods, and as the report names them. */
    static final List<String[]> ROWS = List.of(
        new String[] {"kvidxTextToKeys", "kvidx_text_to_keys"},
        new String[] {"djlTextToKeys", "djl_text_to_keys"},
        new String[] {"routerKeysOnly", "router_keys_only"});

    private static final String ALLOC_NORM = "gc.alloc.rate.norm";
    /** What the texts are, for the report. */
    static final String TEXT_KIND = "mixed: English prose with numbers, inline code, non-Latin and made-up words";

    private TokenizeBench() {
    }

    /**
     * @return usage text.
     */
    public static String usage() {
        return """
            usage: kvidx bench tokenize [--quick] [--json] [--tokenizer PATH] [--texts N] [--forks N] [--replay N]
                                        [--warmup-iterations N] [--iterations N] [--time-ms MS]
              text of 2,048 tokens -> token ids -> 128 router keys (block 16): kvidx's path, DJL's default path,
              and the keys alone; JMH SampleTime percentiles and gc.alloc.rate.norm bytes per request.
              --quick               1 warmup and 2 measured iterations of 1 s (default 3 x 2 s and 5 x 2 s)
              --tokenizer PATH      tokenizer.json or its directory (default: Qwen3's, bundled in the jar)
              --texts N             distinct texts taken in turn (power of two, default 64)
              --forks N             JMH forks (default 1; 0 runs in this JVM)
              --json                print one JSON line last
              --replay N            instead: replay the first N requests of the Mooncake conversation trace as
                                    multi-turn chats, without and with the prefix cache (p50/p99 per request,
                                    hit rate, tokens saved); --cache-entries N (default 4096) and
                                    --cache-tokens N (default 1048576) bound the cache""";
    }

    /** Parsed options (picocli; {@link #usage()} lists them); null: JMH's setting for the mode. */
    @Command(name = "tokenize")
    static final class Options {
        @Option(names = "--json")
        boolean json;
        @Option(names = "--quick")
        boolean quick;
        @Option(names = "--tokenizer")
        String tokenizer = "";
        @Option(names = "--texts")
        int texts = 64;
        @Option(names = "--forks")
        Integer forks;
        @Option(names = "--warmup-iterations")
        Integer warmups;
        @Option(names = "--iterations")
        Integer iterations;
        @Option(names = "--time-ms")
        Long timeMs;
        @Option(names = "--replay")
        int replay;
        @Option(names = "--cache-entries")
        int cacheEntries = TokenizePreparer.Builder.DEFAULT_PREFIX_CACHE_ENTRIES;
        @Option(names = "--cache-tokens")
        long cacheTokens = TokenizePreparer.Builder.DEFAULT_PREFIX_CACHE_TOKENS;
        @Option(names = {"-h", "--help"})
        boolean help;
    }

    /**
     * Runs the benchmark.
     *
     * @param args command arguments (after {@code tokenize}).
     * @param out  where JMH's progress, the table and the JSON go.
     * @return the JSON report.
     * @throws IllegalArgumentException on a bad option.
     * @throws RunnerException          when JMH fails.
     */
    public static Json run(final String[] args, final PrintStream out) throws RunnerException {
        final Options o = BenchOptions.parseInto(new Options(), args);
        if (o.help) {
            throw new IllegalArgumentException("options");
        }
        final boolean json = o.json;
        final boolean quick = o.quick;
        final String tokenizer = o.tokenizer;
        final int texts = o.texts;
        final Integer forks = o.forks;
        final Integer warmups = o.warmups;
        final Integer iterations = o.iterations;
        final Long timeMs = o.timeMs;
        final int replay = o.replay;
        final int cacheEntries = o.cacheEntries;
        final long cacheTokens = o.cacheTokens;
        if (texts < 1 || Integer.bitCount(texts) != 1 || (forks != null && forks < 0)
            || (warmups != null && warmups < 0) || (iterations != null && iterations < 1)
            || (timeMs != null && timeMs < 1)) {
            throw new IllegalArgumentException("texts must be a power of two, forks and warmup iterations >= 0,"
                + " iterations >= 1, time >= 1 ms");
        }
        final String tokenizerPath = BundledTokenizer.resolve(tokenizer).toAbsolutePath().toString();
        if (replay != 0) {
            if (replay < 1 || cacheEntries < 1 || cacheTokens < 1) {
                throw new IllegalArgumentException("replay, cache entries and cache tokens must be >= 1");
            }
            final Json report;
            try (HfTokenizer t = HfTokenizer.load(Path.of(tokenizerPath), false)) {
                report = ConversationReplay.run(t, TraceFile.loadDefault(), replay, cacheEntries, cacheTokens, out);
            } catch (final IOException ex) {
                throw new UncheckedIOException(ex);
            }
            report.put("tokenizer", tokenizerPath);
            if (json) {
                out.println(report);
            }
            return report;
        }

        // This process builds and checks the pool as each fork will, and reports what it holds.
        final TokenizeBenchmark probe = new TokenizeBenchmark();
        probe.tokenizer = tokenizerPath;
        probe.texts = texts;
        probe.tokens = 2048;
        probe.setUp();
        final int tokenCount;
        final int keyCount;
        final double meanChars;
        try {
            tokenCount = probe.pool().ids(0).length;
            keyCount = new RouterKeyHasher(TokenizeBenchmark.BLOCK).keys(
                RouterKeyHasher.chainSeed(BundledTokenizer.MODEL, null, null), probe.pool().ids(0), tokenCount,
                new long[tokenCount]);
            meanChars = probe.pool().meanChars();
        } finally {
            probe.tearDown();
        }
        final double load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        out.printf("kvidx bench tokenize: %d texts of %d tokens (%s; mean %.0f chars), %d router keys each"
                + " (block %d, model %s); tokenizer %s; %d CPUs, load average %.2f, java %s%n", texts, tokenCount,
            TEXT_KIND, meanChars, keyCount, TokenizeBenchmark.BLOCK, BundledTokenizer.MODEL, tokenizerPath,
            Runtime.getRuntime().availableProcessors(), load, Runtime.version());

        final ChainedOptionsBuilder options = new OptionsBuilder()
            .include(TokenizeBenchmark.class.getName() + "\\.")
            .addProfiler(GCProfiler.class)
            .param("tokenizer", tokenizerPath)
            .param("texts", Integer.toString(texts))
            .shouldFailOnError(true);
        if (quick) {
            options.warmupIterations(1).warmupTime(TimeValue.seconds(1)).measurementIterations(2)
                .measurementTime(TimeValue.seconds(1));
        }
        if (forks != null) {
            options.forks(forks);
        }
        if (warmups != null) {
            options.warmupIterations(warmups);
        }
        if (iterations != null) {
            options.measurementIterations(iterations);
        }
        if (timeMs != null) {
            options.warmupTime(TimeValue.milliseconds(timeMs)).measurementTime(TimeValue.milliseconds(timeMs));
        }
        final Collection<RunResult> results = new Runner(options.build(),
            OutputFormatFactory.createFormatInstance(out, VerboseMode.NORMAL)).run();
        final Map<String, RunResult> byMethod = new HashMap<>();
        for (final RunResult r : results) {
            final BenchmarkParams p = r.getParams();
            byMethod.put(p.getBenchmark().substring(p.getBenchmark().lastIndexOf('.') + 1), r);
        }

        final double loadAfter = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        final Json report = new Json();
        out.println();
        out.printf("%-20s %10s %10s %10s %10s %12s %9s%n", "path", "p50 us", "p90 us", "p99 us", "mean us",
            "alloc B/op", "samples");
        for (final String[] row : ROWS) {
            final RunResult r = byMethod.get(row[0]);
            if (r == null) {
                throw new IllegalStateException("JMH returned no result for " + row[0]);
            }
            final Statistics s = r.getPrimaryResult().getStatistics();
            final Result<?> alloc = r.getSecondaryResults().get(ALLOC_NORM);
            final double bytes = alloc == null ? Double.NaN : alloc.getScore();
            out.printf("%-20s %10.1f %10.1f %10.1f %10.1f %12.0f %9d%n", row[1], s.getPercentile(50) / 1e3,
                s.getPercentile(90) / 1e3, s.getPercentile(99) / 1e3, s.getMean() / 1e3, bytes, s.getN());
            report.put(row[1], new Json()
                .put("p50_ns", s.getPercentile(50))
                .put("p90_ns", s.getPercentile(90))
                .put("p99_ns", s.getPercentile(99))
                .put("mean_ns", s.getMean())
                .put("alloc_bytes_per_op", bytes)
                .put("samples", s.getN()));
        }
        final double kvidx50 = byMethod.get("kvidxTextToKeys").getPrimaryResult().getStatistics().getPercentile(50);
        final double djl50 = byMethod.get("djlTextToKeys").getPrimaryResult().getStatistics().getPercentile(50);
        final double keys50 = byMethod.get("routerKeysOnly").getPrimaryResult().getStatistics().getPercentile(50);
        final double share = kvidx50 <= 0 ? Double.NaN : (kvidx50 - keys50) / kvidx50;
        out.printf("tokenization is %.2f %% of kvidx's path at p50; DJL's default path takes %.2f x kvidx's at p50;"
            + " load average %.2f before, %.2f after%n", share * 100, djl50 / kvidx50, load, loadAfter);
        report.put("tokenization_share_p50", share)
            .put("djl_over_kvidx_p50", djl50 / kvidx50)
            .put("workload", new Json()
                .put("texts", texts)
                .put("tokens", tokenCount)
                .put("keys", keyCount)
                .put("block_size", TokenizeBenchmark.BLOCK)
                .put("mean_chars", meanChars)
                .put("text", TEXT_KIND)
                .put("model", BundledTokenizer.MODEL)
                .put("tokenizer", tokenizerPath))
            .put("machine", new Json()
                .put("cpus", Runtime.getRuntime().availableProcessors())
                .put("load_average_before", load)
                .put("load_average_after", loadAfter)
                .put("java", Runtime.version().toString()));
        if (json) {
            out.println(report);
        }
        return report;
    }
}
