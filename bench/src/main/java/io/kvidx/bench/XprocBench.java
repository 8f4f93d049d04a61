package io.kvidx.bench;

import io.kvidx.client.index.PrefixResult;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code kvidx bench xproc}: this process loads the workload into a kvidx index and then churns it (store/remove
 * on a bounded key set, one writer thread) while a second JVM, started with the same java and class path, attaches
 * read-only and times prefix queries ({@link XprocReader}). Reports the reader's p50/p99, its allocation per query,
 * answer mismatches (must be 0) and the store and remove rates the writer achieved during the reader's measurement
 * window (each counted from the writer's own answers: keys made new, keys taken away).
 */
public final class XprocBench {
    private static final int QUERY_COUNT = 1 << 16;
    private static final int QUERY_KEYS = 1 << 22;
    private static final long CHILD_SLACK_MS = 60_000;

    private XprocBench() {
    }

    /**
     * Runs the cross-process measurement.
     *
     * @param o   options (warmup/measure are the reader's; writer rate 0 = unpaced).
     * @param out where the table and JSON go.
     * @return the JSON report.
     */
    public static Json run(final BenchOptions o, final PrintStream out) {
        final long t0 = System.nanoTime();
        out.printf("kvidx bench xproc: %s workload, pods=%d chain=%d%s, churn window %d chains of %d blocks, writer"
            + " rate %s, %d CPUs%n", o.traceWorkload() ? "Mooncake trace" : "synthetic", o.pods(), o.chain(),
            o.traceWorkload() ? " at most" : String.format(" holders=%.1f blocks=%d", o.holders(), o.blocks()),
            o.churnWindow(), o.churnChain(), o.writerRate() == 0 ? "unpaced" : o.writerRate() + " blocks/s",
            Runtime.getRuntime().availableProcessors());
        final Workload w = o.buildWorkload();
        try (KvidxStore kvidx = KvidxStore.load(w, ChurnDriver.spareBlocks(o.churnWindow(), o.churnChain()),
            o.indexDir())) {
            final Path queryFile = kvidx.dir().resolve("queries.bin");
            writeQueries(w, kvidx, queryFile);
            out.printf("index: %d blocks loaded in %.1f s; %s; %s; starting the reader JVM%n",
                w.blocks(), (System.nanoTime() - t0) / 1e9, w.chains(), CacheFit.describe(kvidx.footprintBytes()));
            final Process child = startReader(kvidx, queryFile, o);
            try {
                return drive(o, w, kvidx, child, out);
            } finally {
                child.destroy();
                try {
                    if (!child.waitFor(5, TimeUnit.SECONDS)) {
                        child.destroyForcibly();
                    }
                } catch (final InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    child.destroyForcibly();
                }
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private static Json drive(final BenchOptions o, final Workload w, final KvidxStore kvidx, final Process child,
        final PrintStream out) throws IOException {
        final ChildWatcher watcher = new ChildWatcher(child);
        watcher.start();
        final long attachDeadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CHILD_SLACK_MS);
        while (!watcher.attached && watcher.running() && System.nanoTime() < attachDeadline) {
            // The writer beats while the reader JVM starts and reads its queries (long chains take seconds).
            kvidx.writer().heartbeat(System.currentTimeMillis());
            LockSupport.parkNanos(1_000_000);
        }
        if (!watcher.attached) {
            throw new IllegalStateException("reader JVM did not attach: " + watcher.transcript());
        }
        final ChurnDriver churn = new ChurnDriver(kvidx.writer(), Math.min(o.pods(), 64), o.churnChain(),
            o.churnWindow(), o.seed() ^ 0x5DEECE66DL);
        final long deadline = System.nanoTime()
            + TimeUnit.MILLISECONDS.toNanos(o.warmupMs() + o.measureMs() + CHILD_SLACK_MS);
        final AtomicLong stored = watcher.stored;
        final AtomicLong removed = watcher.removed;
        final long rate = o.writerRate();
        final long start = System.nanoTime();
        long lastBeat = 0;
        long local = 0;
        long steps = 0;
        while (watcher.running() && watcher.result == null) {
            local += churn.step();
            // Removed first: a sample that sees this step's stores sees its removes too.
            removed.setRelease(churn.removed());
            stored.setRelease(local);
            if ((++steps & 255) == 0) {
                final long now = System.nanoTime();
                if (now > deadline) {
                    throw new IllegalStateException("reader JVM did not finish in time");
                }
                if (now - lastBeat > 100_000_000L) {
                    kvidx.writer().heartbeat(System.currentTimeMillis());
                    lastBeat = now;
                }
                if (rate > 0) {
                    while (local * 1e9 / rate > System.nanoTime() - start) {
                        LockSupport.parkNanos(20_000);
                    }
                }
            }
        }
        try {
            watcher.join(10_000);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        if (watcher.result == null) {
            throw new IllegalStateException("reader JVM ended without a result: " + watcher.transcript());
        }
        final double seconds = (watcher.endNanos - watcher.startNanos) / 1e9;
        final double storesPerSecond = (watcher.storedAtEnd - watcher.storedAtStart) / seconds;
        final double removesPerSecond = (watcher.removedAtEnd - watcher.removedAtStart) / seconds;
        final String childJson = watcher.result;
        final Json json = new Json()
            .putRaw("xproc", childJson.substring(0, childJson.length() - 1)
                + ", \"writer_stores_per_s\": " + Math.round(storesPerSecond)
                + ", \"writer_removes_per_s\": " + Math.round(removesPerSecond)
                + ", \"writer_stores\": " + churn.stored()
                + ", \"writer_removes\": " + churn.removed()
                + ", \"writer_evictions\": " + kvidx.writer().evictions() + "}")
            .put("workload", new Json().put("kind", o.traceWorkload() ? BenchOptions.TRACE : BenchOptions.SYNTHETIC)
                .put("chains_queried", w.chains()).put("pods", w.pods()).put("chain", w.chainLength())
                .put("holders", w.meanHolders()).put("out_of_cache", CacheFit.outOfCache(kvidx.footprintBytes()))
                .put("blocks", w.blocks())
                .put("churn_window_chains", o.churnWindow()).put("evict_mib_per_query", o.evictMib())
                .put("churn_chain_blocks", o.churnChain()).put("writer_rate_target", rate));
        if (kvidx.writer().evictions() != 0) {
            out.println("WARNING: the index evicted " + kvidx.writer().evictions() + " entries: answers changed"
                + " legitimately and are counted as mismatches; raise the capacity");
        }
        out.println();
        out.println("reader (second JVM, pid " + watcher.childPid + "): " + childJson);
        out.printf("writer: %.2f M stores/s and %.2f M removes/s during the reader's %.1f s measurement (%d stores"
            + " and %d removes in all)%n", storesPerSecond / 1e6, removesPerSecond / 1e6, seconds, churn.stored(),
            churn.removed());
        if (o.json()) {
            out.println(json);
        }
        return json;
    }

    private static void writeQueries(final Workload w, final KvidxStore kvidx, final Path file) throws IOException {
        // At most QUERY_KEYS keys in the file (32 MiB): 65,536 chains of 32 blocks, 5,592 of 750; 256 chains at least.
        final int[] order = w.queryOrder();
        int n = 0;
        long keys = 0;
        while (n < Math.min(QUERY_COUNT, order.length) && (n < 256 || keys + w.chain(order[n]).length <= QUERY_KEYS)) {
            keys += w.chain(order[n]).length;
            n++;
        }
        final long[][] chains = new long[n][];
        final int[] max = new int[n];
        final long[] sums = new long[n];
        final PrefixResult result = new PrefixResult();
        for (int i = 0; i < n; i++) {
            chains[i] = w.chain(w.queryOrder()[i]);
            max[i] = kvidx.reader().query(chains[i], chains[i].length, null, result);
            sums[i] = XprocReader.checksum(result);
        }
        new XprocReader.Queries(chains, max, sums).write(file);
    }

    private static Process startReader(final KvidxStore kvidx, final Path queryFile, final BenchOptions o)
        throws IOException {
        final List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (final String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (!arg.startsWith("-agentlib") && !arg.startsWith("-javaagent") && !arg.startsWith("-Xrunjdwp")) {
                cmd.add(arg);
            }
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(BenchMain.class.getName());
        cmd.add(XprocReader.COMMAND);
        cmd.add(kvidx.dir().toString());
        cmd.add("bench");
        cmd.add(queryFile.toString());
        cmd.add(Long.toString(o.warmupMs()));
        cmd.add(Long.toString(o.measureMs()));
        cmd.add(Integer.toString(o.evictMib()));
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    /**
     * Reads the reader JVM's protocol lines and samples the writer's store counter at its measurement bounds.
     */
    private static final class ChildWatcher extends Thread {
        final Process child;
        final AtomicLong stored = new AtomicLong();
        final AtomicLong removed = new AtomicLong();
        final List<String> lines = new ArrayList<>();
        final long childPid;
        volatile boolean attached;
        volatile String result;
        volatile long startNanos;
        volatile long endNanos;
        volatile long storedAtStart;
        volatile long storedAtEnd;
        volatile long removedAtStart;
        volatile long removedAtEnd;

        ChildWatcher(final Process child) {
            super("xproc-child-watcher");
            setDaemon(true);
            this.child = child;
            this.childPid = child.pid();
        }

        @Override
        public void run() {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(child.getInputStream(),
                StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    synchronized (lines) {
                        lines.add(line);
                    }
                    if (line.equals("ATTACHED")) {
                        attached = true;
                    } else if (line.equals("MEASURE_START")) {
                        storedAtStart = stored.getAcquire();
                        removedAtStart = removed.getAcquire();
                        startNanos = System.nanoTime();
                    } else if (line.equals("MEASURE_END")) {
                        storedAtEnd = stored.getAcquire();
                        removedAtEnd = removed.getAcquire();
                        endNanos = System.nanoTime();
                    } else if (line.startsWith("RESULT ")) {
                        result = line.substring("RESULT ".length());
                    }
                }
            } catch (final IOException ex) {
                synchronized (lines) {
                    lines.add("read failed: " + ex);
                }
            }
        }

        boolean running() {
            return child.isAlive() || isAlive();
        }

        String transcript() {
            synchronized (lines) {
                return String.join(" | ", lines);
            }
        }
    }
}
