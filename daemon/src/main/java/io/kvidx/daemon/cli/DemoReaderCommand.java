package io.kvidx.daemon.cli;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.routing.IndexReaderPodIndex;
import io.kvidx.client.routing.PodRegistry;
import io.kvidx.client.routing.Router;
import io.kvidx.client.routing.RoutingContext;
import io.kvidx.client.routing.RoutingProfiles;
import io.kvidx.daemon.demo.SyntheticWorkload;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * The demo's router side, run by {@code kvidx demo} as a separate JVM (with no JVM flags: the read path needs
 * none). Maps the index read-only; for each request of the synthetic stream it times a bare prefix query, then
 * routes the request through a cache-aware profile and a round-robin profile side by side and records how much of
 * the prompt each picked pod already holds. Prints one {@code STATS} line per second; exits when its standard
 * input closes (its parent is gone) or after the given seconds.
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

    private volatile boolean running = true;

    @Override
    public Integer call() throws Exception {
        final Thread watcher = new Thread(this::watchStdin, "demo-reader-stdin");
        watcher.setDaemon(true);
        watcher.start();
        final SyntheticWorkload workload = new SyntheticWorkload(seed, seed ^ 0xABCDL, groups, conversations,
            maxChain);
        final long[] keys = new long[maxChain];
        final PrefixResult result = new PrefixResult();
        final Histogram histogram = new Histogram(10_000_000L, 3);
        final long end = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : Long.MAX_VALUE;
        final IndexReader.Context context = new IndexReader.Context().dir(dir).cell(cell).attachTimeoutMs(10_000);
        final Histogram decisions = new Histogram(10_000_000L, 3);
        try (IndexReader reader = IndexReader.attach(context);
             IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(context), 1_000)) {
            final PodRegistry registry = new PodRegistry();
            registry.registerFromIndex(index);
            final Router cacheAware = RoutingProfiles.single(
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
            while (running && System.nanoTime() < end) {
                final int length = workload.chain(workload.nextConversation(), keys);
                final long start = System.nanoTime();
                final int depth;
                try {
                    depth = reader.query(keys, length, null, result);
                } catch (final IndexBusyException ex) {
                    continue; // a shard stayed locked past the read bound: no answer for this one (a router falls back)
                }
                final long queried = System.nanoTime();
                histogram.recordValue(Math.min(queried - start, 10_000_000L));
                final int caSlot = cacheAware.routeKeys(caContext, keys, length);
                final long decided = System.nanoTime();
                decisions.recordValue(Math.min(decided - queried, 10_000_000L));
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
                            + " ca=%d rr=%d dp50=%d dp99=%d%n",
                        queries, histogram.getValueAtPercentile(50), histogram.getValueAtPercentile(99), hits,
                        depthSum, blocks, reader.entryCount(), caDepth, rrDepth, decisions.getValueAtPercentile(50),
                        decisions.getValueAtPercentile(99));
                    System.out.flush();
                    histogram.reset();
                    decisions.reset();
                    queries = 0;
                    hits = 0;
                    depthSum = 0;
                    blocks = 0;
                    caDepth = 0;
                    rrDepth = 0;
                    nextReport = now + 1_000_000_000L;
                }
            }
        }
        return 0;
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
