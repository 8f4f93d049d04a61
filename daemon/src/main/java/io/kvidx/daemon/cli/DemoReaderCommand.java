package io.kvidx.daemon.cli;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PrefixResult;
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
 * none). Maps the index read-only, queries the synthetic request stream as fast as it can and prints one
 * {@code STATS} line per second; exits when its standard input closes (its parent is gone) or after the
 * given seconds.
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
        try (IndexReader reader = IndexReader.attach(new IndexReader.Context().dir(dir).cell(cell)
            .attachTimeoutMs(10_000))) {
            long nextReport = System.nanoTime() + 1_000_000_000L;
            long queries = 0;
            long hits = 0;
            long depthSum = 0;
            long blocks = 0;
            while (running && System.nanoTime() < end) {
                final int length = workload.chain(workload.nextConversation(), keys);
                final long start = System.nanoTime();
                final int depth = reader.query(keys, length, null, result);
                final long now = System.nanoTime();
                histogram.recordValue(Math.min(now - start, 10_000_000L));
                queries++;
                blocks += length;
                depthSum += depth;
                if (depth > 0) {
                    hits++;
                }
                if (now >= nextReport) {
                    System.out.printf("STATS queries=%d p50=%d p99=%d hits=%d depth=%d blocks=%d entries=%d%n",
                        queries, histogram.getValueAtPercentile(50), histogram.getValueAtPercentile(99), hits,
                        depthSum, blocks, reader.entryCount());
                    System.out.flush();
                    histogram.reset();
                    queries = 0;
                    hits = 0;
                    depthSum = 0;
                    blocks = 0;
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
