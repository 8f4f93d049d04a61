package io.kvidx.tools;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.tools.demo.RequestStream;
import io.kvidx.tools.demo.SyntheticFleet;
import io.kvidx.tools.demo.SyntheticWorkload;
import io.kvidx.tools.demo.TextWorkload;
import io.kvidx.daemon.index.IndexMaintenanceAgent;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.tokenize.HfTokenizer;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.SystemEpochClock;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code kvidx demo}: a writer fed by a synthetic fleet (pods storing and evicting blocks with shared prefixes)
 * in this process, and a router-side reader in a separate JVM mapping the same index read-only, which routes each
 * request through a cache-aware and a round-robin profile side by side; prints one line per second until Ctrl-C
 * or {@code --seconds} (counted from the reader's first report).
 *
 * <p>With {@code --tokenizer PATH} (a model's {@code tokenizer.json} or its directory) requests are text
 * ({@link TextWorkload}): the fleet tokenizes each prompt as an engine would and stores its blocks' router keys, and
 * the reader's cache-aware profile tokenizes the prompt in its Prepare stage ({@code type: tokenize}) and routes it.
 * The demo ships no tokenizer; the repository's Qwen3 test tokenizer works:
 * {@code ./kvidx demo --tokenizer tokenize/src/test/resources/qwen3}. Tokenizing bounds the rates in this mode.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = "Run a synthetic fleet into a fresh index and query it from a second JVM, live.")
public final class DemoCommand implements Callable<Integer> {
    @Option(names = "--seconds", defaultValue = "0", description = "Stop after N seconds (default: run until Ctrl-C).")
    private long seconds;

    @Option(names = "--pods", defaultValue = "16", description = "Simulated pods (1..256, default ${DEFAULT-VALUE}).")
    private int pods;

    @Option(names = "--budget", defaultValue = "20000",
        description = "Blocks each simulated pod caches before it evicts (default ${DEFAULT-VALUE}).")
    private int budget;

    @Option(names = "--rate", defaultValue = "1000000",
        description = "Block stores per second the fleet aims at (default ${DEFAULT-VALUE}).")
    private long rate;

    @Option(names = "--capacity", defaultValue = "1048576",
        description = "Index capacity in blocks (default ${DEFAULT-VALUE}).")
    private long capacity;

    @Option(names = "--dir", description = "Index directory (default /dev/shm/kvidx).")
    private Path dir;

    @Option(names = "--cell", defaultValue = "demo", description = "Cell name (default ${DEFAULT-VALUE}).")
    private String cell;

    @Option(names = "--seed", defaultValue = "42", description = "Workload seed (default ${DEFAULT-VALUE}).")
    private long seed;

    @Option(names = "--tokenizer", paramLabel = "PATH",
        description = "Route text prompts: a model's tokenizer.json or its directory (e.g. the repository's"
            + " tokenize/src/test/resources/qwen3). The fleet and the router both tokenize with it.")
    private Path tokenizer;

    private static final int GROUPS = 64;
    private static final int CONVERSATIONS = 20_000;
    private static final int MAX_CHAIN = 64;

    @Override
    public Integer call() throws Exception {
        if (rate < 1 || seconds < 0) {
            throw new IllegalArgumentException("--rate must be >= 1 and --seconds >= 0");
        }
        final Path indexDir = dir != null ? dir : IndexConfiguration.dir();
        // Load the tokenizer first: a bad path fails before any index or process is made.
        if (tokenizer != null) {
            TokenizerJar.require("--tokenizer");
        }
        final HfTokenizer fleetTokenizer = tokenizer == null ? null : HfTokenizer.load(tokenizer, true);
        final PrintStream out = System.out;
        final CountDownLatch stopped = new CountDownLatch(1);
        final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        final Thread hook = new Thread(() -> {
            stop.set(true);
            try {
                stopped.await(5, TimeUnit.SECONDS);
            } catch (final InterruptedException ignore) {
                Thread.currentThread().interrupt();
            }
        }, "kvidx-demo-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        // The cell is sized to the fleet: up to 64 pods get the direct layout (64-bit pod bitmaps).
        final IndexWriterContext ctx = new IndexWriterContext().dir(indexDir).cell(cell).capacityBlocks(capacity)
            .maxPods(Math.max(pods, io.kvidx.client.index.IndexDescriptor.DIRECT_MAX_PODS))
            .maxChainLength(Math.max(MAX_CHAIN, 8192)).deleteOnClose(true);
        Process child = null;
        try (IndexWriter writer = IndexWriter.create(ctx);
             AgentRunner maintenance = new AgentRunner(new SleepingMillisIdleStrategy(1),
                 ex -> System.err.println("kvidx demo: index maintenance failed: " + ex), null,
                 new IndexMaintenanceAgent(writer, SystemEpochClock.INSTANCE, 200))) {
            AgentRunner.startOnThread(maintenance);
            final RequestStream workload = fleetTokenizer == null
                ? new SyntheticWorkload(seed, seed, GROUPS, CONVERSATIONS, MAX_CHAIN)
                : new TextWorkload(seed, seed, GROUPS, CONVERSATIONS, fleetTokenizer, ctx.blockSize());
            final SyntheticFleet fleet = new SyntheticFleet(writer, workload, pods, budget, TextWorkload.MODEL);
            out.printf("kvidx demo: index %s (%d shards x %d entries, %,d blocks before eviction), %d pods%n",
                ctx.indexFile(), ctx.shardCount(), ctx.slotsPerShard(), writer.capacity(), pods);
            if (fleetTokenizer != null) {
                out.printf("kvidx demo: text prompts, tokenized with %s by the fleet and in the router's profile%n",
                    fleetTokenizer.file());
            }

            child = startReader(indexDir);
            final BufferedReader childOut = new BufferedReader(new InputStreamReader(child.getInputStream(),
                StandardCharsets.UTF_8));
            final java.util.concurrent.atomic.AtomicReference<String> lastStats =
                new java.util.concurrent.atomic.AtomicReference<>();
            final Thread pump = new Thread(() -> pumpStats(childOut, lastStats), "kvidx-demo-reader-out");
            pump.setDaemon(true);
            pump.start();
            out.printf("kvidx demo: reader pid %d maps the index read-only (no JVM flags); Ctrl-C to stop%n",
                child.pid());

            final long startNs = System.nanoTime();
            // --seconds counts from the reader's first report: on a loaded machine its JVM (and tokenizer) may take
            // a while to start, and a demo that ends before the reader reports would show nothing.
            final long readyDeadlineNs = startNs + READER_READY_TIMEOUT_NS;
            long endNs = Long.MAX_VALUE;
            long nextReport = startNs + 1_000_000_000L;
            long lastStored = 0;
            long lastRemoved = 0;
            long sliceStart = startNs;
            long sliceBlocks = 0;
            final long blocksPerMs = Math.max(1, rate / 1000);
            while (!stop.get() && System.nanoTime() < endNs) {
                if (seconds > 0 && endNs == Long.MAX_VALUE) {
                    if (lastStats.get() != null) {
                        endNs = System.nanoTime() + seconds * 1_000_000_000L;
                    } else if (System.nanoTime() > readyDeadlineNs || !child.isAlive()) {
                        out.printf("kvidx demo: the reader did not report within %d s%s; stopping%n",
                            TimeUnit.NANOSECONDS.toSeconds(READER_READY_TIMEOUT_NS),
                            child.isAlive() ? "" : " (it exited with " + child.exitValue() + ")");
                        return 1;
                    }
                }
                sliceBlocks += fleet.step();
                if (sliceBlocks >= blocksPerMs) {
                    final long wait = 1_000_000L - (System.nanoTime() - sliceStart);
                    if (wait > 0) {
                        Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
                    }
                    sliceStart = System.nanoTime();
                    sliceBlocks = 0;
                }
                final long now = System.nanoTime();
                if (now >= nextReport) {
                    final long elapsed = (now - startNs) / 1_000_000_000L;
                    out.printf("[%3ds] index %,10d blocks  stores/s %,10d  removes/s %,8d  evictions %,d | %s%n",
                        elapsed, writer.entryCount(), fleet.blocksStored() - lastStored,
                        fleet.blocksRemoved() - lastRemoved, writer.evictions(), describe(lastStats.get()));
                    lastStored = fleet.blocksStored();
                    lastRemoved = fleet.blocksRemoved();
                    nextReport += 1_000_000_000L;
                }
            }
            out.printf("kvidx demo: stopped after %,d requests, %,d block stores; index removed%n", fleet.requests(),
                fleet.blocksStored());
        } finally {
            if (fleetTokenizer != null) {
                fleetTokenizer.close();
            }
            if (child != null) {
                child.getOutputStream().close();
                if (!child.waitFor(3, TimeUnit.SECONDS)) {
                    child.destroyForcibly();
                }
            }
            stopped.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (final IllegalStateException ignore) {
                // already shutting down
            }
        }
        return 0;
    }

    /** How long the reader JVM may take to report its first second before the demo gives up. */
    static final long READER_READY_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(120);

    private Process startReader(final Path indexDir) throws java.io.IOException {
        final List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        if (tokenizer != null) {
            // The index's read path needs no JVM flag; the tokenizer's native library (JNI, JNA) needs native access.
            command.add("--enable-native-access=ALL-UNNAMED");
            // Where DJL extracts its native library, and its usage report switch, as this JVM has them.
            for (final String name : List.of("ENGINE_CACHE_DIR", "DJL_CACHE_DIR", "OPT_OUT_TRACKING")) {
                final String value = System.getProperty(name);
                if (value != null) {
                    command.add("-D" + name + "=" + value);
                }
            }
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(ToolsCli.class.getName());
        command.add("demo-reader");
        command.add("--dir=" + indexDir);
        command.add("--cell=" + cell);
        command.add("--seed=" + seed);
        command.add("--groups=" + GROUPS);
        command.add("--conversations=" + CONVERSATIONS);
        command.add("--max-chain=" + MAX_CHAIN);
        if (tokenizer != null) {
            command.add("--tokenizer=" + tokenizer.toAbsolutePath());
        }
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static void pumpStats(final BufferedReader in,
        final java.util.concurrent.atomic.AtomicReference<String> last) {
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith("STATS ")) {
                    last.set(line);
                } else {
                    System.out.println("reader: " + line);
                }
            }
        } catch (final java.io.IOException ignore) {
            // reader gone
        }
    }

    static String describe(final String stats) {
        if (stats == null) {
            return "reader: attaching...";
        }
        final long queries = field(stats, "queries");
        final long depth = field(stats, "depth");
        final long blocks = field(stats, "blocks");
        if (stats.contains(" tok=")) {
            return String.format("queries/s %,5d  %,5d tokens/request  p50 %,5d ns  held %3d%% | routed text:"
                    + " cache-aware %3d%% (tokenize + decide p50 %,6d us) round-robin %3d%%", queries,
                queries == 0 ? 0 : field(stats, "tok") / queries, field(stats, "p50"), percent(depth, blocks),
                percent(field(stats, "ca"), blocks), field(stats, "dp50") / 1_000, percent(field(stats, "rr"), blocks));
        }
        return String.format("queries/s %,7d  p50 %,5d ns  p99 %,6d ns  held %3d%% | routed: cache-aware %3d%%"
                + " (decision p50 %,5d ns) round-robin %3d%%", queries, field(stats, "p50"), field(stats, "p99"),
            percent(depth, blocks), percent(field(stats, "ca"), blocks), field(stats, "dp50"),
            percent(field(stats, "rr"), blocks));
    }

    private static long percent(final long part, final long whole) {
        return whole == 0 ? 0 : part * 100 / whole;
    }

    private static long field(final String line, final String name) {
        final int at = line.indexOf(" " + name + "=");
        if (at < 0) {
            return 0;
        }
        final int start = at + name.length() + 2;
        int end = line.indexOf(' ', start);
        if (end < 0) {
            end = line.length();
        }
        return Long.parseLong(line.substring(start, end));
    }
}
