package io.kvidx.bench.ingest;

import io.aeron.Aeron;
import io.aeron.Publication;
import io.kvidx.client.publish.KvEventPublisher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.sbe.events.Medium;
import org.agrona.concurrent.SleepingIdleStrategy;

import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * End-to-end throughput of SBE events over Aeron IPC into the index: a publisher thread sends BlockStored events
 * ({@code --blocks} blocks of 16 tokens each, chains of 4 events) for several pods through one IPC publication;
 * the daemon (embedded media driver, writer agents, router-key recomputation, engine-hash maps, index stores)
 * applies them. Reports blocks applied per second, measured from the first offer until the daemon's counters show
 * every block applied. Two modes:
 * <ul>
 *   <li>{@code churn} (default): steady state of a cache that is full. Each pod stores its events in a loop over a
 *   pool of 8,192 events and, after each store, removes the event stored 4,096 events earlier (BlockRemoved), so
 *   every store is a new block for the pod and the index stays the same size. Stores and removals are counted;
 *   the figure is block stores per second with the removals applied too;</li>
 *   <li>{@code restore}: no removals; after the first pass over the pool every store re-stores a block the pod
 *   already holds (idempotent, same path minus the entry insert).</li>
 * </ul>
 *
 * <p>{@code java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --enable-native-access=ALL-UNNAMED
 * -cp bench/target/kvidx-bench.jar io.kvidx.bench.ingest.SbeIngestThroughput [seconds] [blocksPerEvent] [idle]
 * [writers] [churn|restore]}
 */
public final class SbeIngestThroughput {
    private SbeIngestThroughput() {
    }

    /**
     * @param args [seconds (5)] [blocks per event (16)] [idle strategy (sleeping)] [writers (1)] [mode (churn)].
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception {
        final int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        final int blocksPerEvent = args.length > 1 ? Integer.parseInt(args[1]) : 16;
        final String idle = args.length > 2 ? args[2] : "sleeping";
        final int writers = args.length > 3 ? Integer.parseInt(args[3]) : 1;
        final String mode = args.length > 4 ? args[4] : "churn";
        if (!"churn".equals(mode) && !"restore".equals(mode)) {
            throw new IllegalArgumentException("mode must be churn or restore: " + mode);
        }
        final boolean churn = "churn".equals(mode);
        final int pods = 4;
        final int eventsPerPod = 8192;
        final int blockSize = 16;
        final String pid = Long.toString(ProcessHandle.current().pid());
        final Path dir = Path.of("/dev/shm/kvidx-bench-" + pid);
        final DaemonContext ctx = new DaemonContext().dir(dir).capacityBlocks(1L << 22).podTimeoutMs(0)
            .idleStrategy(idle).writerQueueLength(32 << 20).writers(writers).deleteOnClose(true);
        ctx.aeron().addChannel("aeron:ipc").dir("/dev/shm/kvidx-bench-aeron-" + pid).termLength(16 << 20);

        final SplittableRandom random = new SplittableRandom(7);
        final long[][][] hashes = new long[pods][eventsPerPod][blocksPerEvent];
        final int[][][] tokens = new int[pods][eventsPerPod][blocksPerEvent * blockSize];
        for (int p = 0; p < pods; p++) {
            for (int e = 0; e < eventsPerPod; e++) {
                for (int b = 0; b < blocksPerEvent; b++) {
                    hashes[p][e][b] = random.nextLong();
                }
                for (int t = 0; t < tokens[p][e].length; t++) {
                    tokens[p][e][t] = random.nextInt(151_000);
                }
            }
        }
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
            Aeron client = Aeron.connect(new Aeron.Context().aeronDirectoryName(ctx.aeron().dir()));
            Publication publication = client.addPublication("aeron:ipc", ctx.aeron().streamId())) {
            while (!publication.isConnected()) {
                Thread.sleep(1);
            }
            final KvEventPublisher[] publishers = new KvEventPublisher[pods];
            for (int p = 0; p < pods; p++) {
                publishers[p] = new KvEventPublisher(publication, "bench-pod-" + p, "bench-model",
                    new SleepingIdleStrategy(1_000));
                publishers[p].register();
            }
            final long start = System.nanoTime();
            final long deadline = start + seconds * 1_000_000_000L;
            final int window = eventsPerPod / 2;
            long blocks = 0;
            long removedBlocks = 0;
            long pass = 0;
            int e = 0;
            while (System.nanoTime() < deadline) {
                for (int p = 0; p < pods; p++) {
                    final boolean first = e % 4 == 0;
                    final long parent = first ? 0 : hashes[p][e - 1][blocksPerEvent - 1];
                    publishers[p].blockStored(hashes[p][e], blocksPerEvent, !first, parent, tokens[p][e], blockSize,
                        Medium.GPU, null, 0);
                    blocks += blocksPerEvent;
                    if (churn && (pass > 0 || e >= window)) {
                        publishers[p].blockRemoved(hashes[p][(e + eventsPerPod - window) % eventsPerPod],
                            blocksPerEvent, Medium.GPU);
                        removedBlocks += blocksPerEvent;
                    }
                }
                if (++e == eventsPerPod) {
                    e = 0;
                    pass++;
                }
            }
            final long published = System.nanoTime();
            while (daemon.counters().value(CounterType.BLOCKS_STORED)
                + daemon.counters().value(CounterType.DUPLICATE_BLOCKS) < blocks
                || daemon.counters().value(CounterType.BLOCKS_REMOVED)
                + daemon.counters().value(CounterType.UNKNOWN_REMOVALS) < removedBlocks) {
                Thread.onSpinWait();
                if (System.nanoTime() - published > 60_000_000_000L) {
                    throw new IllegalStateException("daemon did not apply everything: " + daemon.counters()
                        .describe());
                }
            }
            final long end = System.nanoTime();
            final double secs = (end - start) / 1e9;
            System.out.printf("SBE over Aeron IPC -> index (%s, %d writer(s), idle %s): %d blocks stored (%d-block "
                    + "events, %d pods) and %d removed in %.2f s = %.2f M block stores/s end to end (publishing took "
                    + "%.2f s); new stores %d, re-stores %d, removed %d, evictions %d, unknown parents %d%n",
                churn ? "churn" : "restore", writers, idle, blocks, blocksPerEvent, pods, removedBlocks, secs,
                blocks / secs / 1e6, (published - start) / 1e9, daemon.counters().value(CounterType.BLOCKS_STORED),
                daemon.counters().value(CounterType.DUPLICATE_BLOCKS),
                daemon.counters().value(CounterType.BLOCKS_REMOVED), daemon.index().evictions(),
                daemon.counters().value(CounterType.UNKNOWN_PARENTS));
        }
        // The daemon deleted its index on close; the cell keeps its lock file by design: remove the run's directory.
        io.kvidx.bench.KvidxStore.deleteTree(dir);
    }
}
