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
 * every block applied. The first pass over the block pool stores new blocks; later passes re-store held blocks
 * (idempotent, same path minus the entry insert).
 *
 * <p>{@code java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --enable-native-access=ALL-UNNAMED
 * -cp bench/target/kvidx-bench.jar io.kvidx.bench.ingest.SbeIngestThroughput [seconds] [blocksPerEvent] [idle]
 * [writers]}
 */
public final class SbeIngestThroughput {
    private SbeIngestThroughput() {
    }

    /**
     * @param args [seconds (5)] [blocks per event (16)] [idle strategy (sleeping)] [writers (1)].
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception {
        final int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        final int blocksPerEvent = args.length > 1 ? Integer.parseInt(args[1]) : 16;
        final String idle = args.length > 2 ? args[2] : "sleeping";
        final int writers = args.length > 3 ? Integer.parseInt(args[3]) : 1;
        final int pods = 4;
        final int eventsPerPod = 8192;
        final int blockSize = 16;
        final String pid = Long.toString(ProcessHandle.current().pid());
        final Path dir = Path.of("/dev/shm/kvidx-bench-" + pid);
        final DaemonContext ctx = new DaemonContext().dir(dir).capacityBlocks(1L << 22).podTimeoutMs(0)
            .idleStrategy(idle).addAeronChannel("aeron:ipc").aeronDir("/dev/shm/kvidx-bench-aeron-" + pid)
            .aeronTermLength(16 << 20).writerQueueLength(32 << 20).writers(writers).deleteOnClose(true);

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
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx, System.err);
            Aeron client = Aeron.connect(new Aeron.Context().aeronDirectoryName(ctx.aeronDir()));
            Publication publication = client.addPublication("aeron:ipc", ctx.aeronStreamId())) {
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
            long blocks = 0;
            int e = 0;
            while (System.nanoTime() < deadline) {
                for (int p = 0; p < pods; p++) {
                    final boolean first = e % 4 == 0;
                    final long parent = first ? 0 : hashes[p][e - 1][blocksPerEvent - 1];
                    publishers[p].blockStored(hashes[p][e], blocksPerEvent, !first, parent, tokens[p][e], blockSize,
                        Medium.GPU, null, 0);
                    blocks += blocksPerEvent;
                }
                e = (e + 1) % eventsPerPod;
            }
            final long published = System.nanoTime();
            while (daemon.counters().value(CounterType.BLOCKS_STORED)
                + daemon.counters().value(CounterType.DUPLICATE_BLOCKS) < blocks) {
                Thread.onSpinWait();
                if (System.nanoTime() - published > 60_000_000_000L) {
                    throw new IllegalStateException("daemon did not apply everything: " + daemon.counters()
                        .describe());
                }
            }
            final long end = System.nanoTime();
            final double secs = (end - start) / 1e9;
            System.out.printf("SBE over Aeron IPC -> index (%d writer(s), idle %s): %d blocks (%d-block events, %d "
                    + "pods) in %.2f s = %.2f M blocks/s end to end (publishing took %.2f s); new stores %d, "
                    + "re-stores %d, evictions %d, "
                    + "unknown parents %d%n", writers, idle, blocks, blocksPerEvent, pods, secs, blocks / secs / 1e6,
                (published - start) / 1e9, daemon.counters().value(CounterType.BLOCKS_STORED),
                daemon.counters().value(CounterType.DUPLICATE_BLOCKS), daemon.index().evictions(),
                daemon.counters().value(CounterType.UNKNOWN_PARENTS));
        }
    }
}
