package io.kvidx.tools;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.routing.Slots;
import io.kvidx.routing.yaml.YamlRouting;
import io.kvidx.tools.demo.SyntheticWorkload;
import io.kvidx.tools.demo.TextWorkload;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * The demo's router side, run by {@code kvidx demo} as a separate JVM (with no JVM flags: the read path needs
 * none). Maps the index read-only; for each request of the synthetic stream it times a bare prefix query, then
 * routes the request through a cache-aware profile and a round-robin profile side by side and records how much of
 * the prompt each picked pod already holds. Prints one {@code STATS} line per second; exits when its standard
 * input closes (its parent is gone) or after the given seconds.
 *
 * <p>With {@code --tokenizer}, requests are text ({@link TextWorkload}) and the cache-aware profile is the YAML
 * profile of {@link #textProfile(Path)}: its Prepare stage tokenizes the prompt ({@code type: tokenize}), keys its
 * blocks and queries the index; the round-robin profile routes the keys that profile made, and the bare query is
 * timed on them. The {@code STATS} line then also gives the tokens routed ({@code tok}); its decision times
 * include the tokenization.
 */
@Command(name = "demo-reader", hidden = true, description = "Query side of the demo (started by 'kvidx demo').")
public final class DemoReaderCommand implements Callable<Integer> {
    @Option(names = "--dir", required = true, description = "Index directory.")
    private Path dir;

    @Option(names = "--cell", required = true, description = "Cell name.")
    private String cell;

    @Option(names = "--seed", defaultValue = "42", description = "Workload seed shared with the fleet.")
    private long seed;

    @Option(names = "--groups", defaultValue = "64")
    private int groups;

    @Option(names = "--conversations", defaultValue = "20000")
    private int conversations;

    @Option(names = "--max-chain", defaultValue = "64")
    private int maxChain;

    @Option(names = "--seconds", defaultValue = "0", description = "Stop after this many seconds (0: on EOF).")
    private long seconds;

    @Option(names = "--tokenizer", description = "Route text prompts, tokenized with this tokenizer.json (or its"
        + " directory) in the profile's Prepare stage.")
    private Path tokenizer;

    /** Longest decision recorded: text decisions include tokenizing, milliseconds on a long prompt. */
    private static final long MAX_NS = TimeUnit.SECONDS.toNanos(1);

    private volatile boolean running = true;

    @Override
    public Integer call() throws Exception {
        final Thread watcher = new Thread(this::watchStdin, "demo-reader-stdin");
        watcher.setDaemon(true);
        watcher.start();
        final SyntheticWorkload workload = new SyntheticWorkload(seed, seed ^ 0xABCDL, groups, conversations,
            maxChain);
        final TextWorkload texts = tokenizer == null ? null
            : new TextWorkload(seed, seed ^ 0xABCDL, groups, conversations, null, 16);
        final long[] chain = new long[maxChain];
        final PrefixResult result = new PrefixResult();
        final Histogram histogram = new Histogram(10_000_000L, 3);
        final long end = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : Long.MAX_VALUE;
        final IndexReaderContext context = new IndexReaderContext().dir(dir).cell(cell).attachTimeoutMs(10_000);
        final Histogram decisions = new Histogram(MAX_NS, 3);
        try (IndexReader reader = IndexReader.attach(context);
             IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(context), 1_000)) {
            final PodRegistry registry = new PodRegistry();
            registry.registerFromIndex(index);
            final YamlRouting.Loaded text = tokenizer == null ? null : YamlRouting.parse(textProfile(tokenizer),
                new YamlRouting.Environment().index(index).registry(registry).blockSize(reader.blockSize()));
            final Router cacheAware = text != null ? text.router() : RoutingProfiles.single(
                RoutingProfiles.cacheAware("cache-aware", index, registry, null, reader.blockSize(), null),
                registry, index);
            final Router roundRobin = RoutingProfiles.single(
                RoutingProfiles.roundRobin("round-robin", index, registry, true), registry, index);
            final RoutingContext caContext = cacheAware.newContext();
            final RoutingContext rrContext = roundRobin.newContext();
            long nextReport = System.nanoTime() + 1_000_000_000L;
            long queries = 0;
            long hits = 0;
            long depthSum = 0;
            long blocks = 0;
            long caDepth = 0;
            long rrDepth = 0;
            long tokens = 0;
            while (running && System.nanoTime() < end) {
                final long[] keys;
                final int length;
                int caSlot = -1;
                if (texts != null) {
                    // Text: the profile tokenizes the prompt, keys it and routes; the keys it made are the chain.
                    final String prompt = texts.prompt(texts.nextConversation());
                    final long t0 = System.nanoTime();
                    caContext.reset().request().model(TextWorkload.MODEL).prompt(prompt);
                    caSlot = cacheAware.plan(caContext).slot();
                    decisions.recordValue(Math.min(System.nanoTime() - t0, MAX_NS));
                    keys = caContext.get(Slots.BLOCK_KEYS).keys();
                    length = caContext.get(Slots.BLOCK_KEYS).length();
                    tokens += caContext.get(Slots.TOKENS).length();
                } else {
                    keys = chain;
                    length = workload.chain(workload.nextConversation(), keys);
                }
                final long start = System.nanoTime();
                final int depth;
                try {
                    depth = reader.query(keys, length, null, result);
                } catch (final IndexBusyException ex) {
                    continue; // a shard stayed locked past the read bound: no answer for this one (a router falls back)
                }
                final long queried = System.nanoTime();
                histogram.recordValue(Math.min(queried - start, 10_000_000L));
                if (texts == null) {
                    caSlot = cacheAware.routeKeys(caContext, keys, length);
                    decisions.recordValue(Math.min(System.nanoTime() - queried, MAX_NS));
                }
                final int rrSlot = roundRobin.routeKeys(rrContext, keys, length);
                caDepth += Math.max(0, cacheAware.heldDepth(caContext, caSlot));
                rrDepth += Math.max(0, roundRobin.heldDepth(rrContext, rrSlot));
                queries++;
                blocks += length;
                depthSum += depth;
                if (depth > 0) {
                    hits++;
                }
                final long now = System.nanoTime();
                if (now >= nextReport) {
                    System.out.printf("STATS queries=%d p50=%d p99=%d hits=%d depth=%d blocks=%d entries=%d"
                            + " ca=%d rr=%d dp50=%d dp99=%d%s%n",
                        queries, histogram.getValueAtPercentile(50), histogram.getValueAtPercentile(99), hits,
                        depthSum, blocks, reader.entryCount(), caDepth, rrDepth, decisions.getValueAtPercentile(50),
                        decisions.getValueAtPercentile(99), texts == null ? "" : " tok=" + tokens);
                    System.out.flush();
                    histogram.reset();
                    decisions.reset();
                    queries = 0;
                    hits = 0;
                    depthSum = 0;
                    blocks = 0;
                    caDepth = 0;
                    rrDepth = 0;
                    tokens = 0;
                    nextReport = now + 1_000_000_000L;
                }
            }
            if (text != null) {
                closeTokenizers(text);
            }
        }
        return 0;
    }

    /**
     * The text mode's cache-aware profile, as a router that receives text writes it: tokenize, router keys, prefix
     * query, then the stages of {@link RoutingProfiles#cacheAware}.
     *
     * @param tokenizer the tokenizer for any model.
     * @return the YAML document.
     */
    static String textProfile(final Path tokenizer) {
        final String path = tokenizer.toAbsolutePath().toString().replace("\\", "\\\\").replace("\"", "\\\"");
        return """
            profiles:
              cache-aware-text:
                prepare:
                  - {type: tokenize, tokenizer: "%s", add-special-tokens: true}
                  - router-keys
                  - prefix-query
                filter: [alive]
                score:
                  - {type: cache-affinity, weight: 2}
                  - {type: least-load, weight: 1, metric: requests}
                pick: max-score
            workflow: {type: single, profile: cache-aware-text}
            """.formatted(path);
    }

    private static void closeTokenizers(final YamlRouting.Loaded loaded) throws Exception {
        for (final io.kvidx.routing.Profile profile : loaded.profiles().values()) {
            for (final io.kvidx.routing.Preparer p : profile.preparers()) {
                if (p instanceof AutoCloseable closeable) {
                    closeable.close();
                }
            }
        }
    }

    private void watchStdin() {
        try {
            final InputStream in = System.in;
            while (in.read() >= 0) {
                Thread.onSpinWait();
            }
        } catch (final IOException ignore) {
            // treat as EOF
        }
        running = false;
    }
}
