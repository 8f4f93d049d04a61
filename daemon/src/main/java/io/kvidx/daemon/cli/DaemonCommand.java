package io.kvidx.daemon.cli;

import io.kvidx.daemon.config.DaemonConfigFile;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.agrona.concurrent.ShutdownSignalBarrier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code kvidx daemon}: runs the daemon in the foreground until SIGINT or SIGTERM, then shuts down cleanly.
 */
@Command(name = "daemon", mixinStandardHelpOptions = true,
    description = "Run the index daemon: ingest engines' KV events into the shared-memory index until SIGINT/SIGTERM.")
public final class DaemonCommand implements Callable<Integer> {
    @Option(names = "--config", paramLabel = "FILE", description = "YAML config file (options given here win).")
    private Path config;

    @Option(names = "--dir", paramLabel = "D", description = "Index directory (default /dev/shm/kvidx).")
    private Path dir;

    @Option(names = "--cell", description = "Cell name (default 'default').")
    private String cell;

    @Option(names = "--group", paramLabel = "NAME", description = "Group of the cell directory (0750) and index file "
        + "(0640); routers in it can read the index (default: the daemon user's primary group).")
    private String group;

    @Option(names = "--block-size", paramLabel = "B", description = "Router block size in tokens (default 16); "
        + "engines must use the same.")
    private Integer blockSize;

    @Option(names = "--capacity", paramLabel = "BLOCKS", description = "Blocks held before evicting.")
    private Long capacity;

    @Option(names = "--max-pods", paramLabel = "P", description = "Pod slots of the cell, 1..256 (default 256). A cell "
        + "of at most 64 pods stores plain 64-bit pod bitmaps: a smaller, faster index.")
    private Integer maxPods;

    @Option(names = "--writers", description = "Writer threads (default 1).")
    private Integer writers;

    @Option(names = "--pod-timeout-ms", description = "Silence after which a pod is taken down; 0 = never.")
    private Long podTimeoutMs;

    @Option(names = "--idle", description = "Idle strategy: busy, yielding, backoff (default), sleeping.")
    private String idle;

    @Option(names = "--zmq", paramLabel = "POD[@MODEL]=ENDPOINT",
        description = "vLLM or SGLang ZeroMQ publisher; POD '*' takes pod and model from the topic "
            + "kv@<pod>@<model>.")
    private List<String> zmq = new ArrayList<>();

    @Option(names = "--engine", paramLabel = "POD|ENDPOINT=ENGINE", description = "Event format of a pod's --zmq "
        + "endpoint(s), or of the --zmq endpoint at ENDPOINT: vllm (default) or sglang.")
    private List<String> engine = new ArrayList<>();

    @Option(names = "--replay", paramLabel = "POD=ENDPOINT", description = "Replay (ROUTER) endpoint of a pod.")
    private List<String> replay = new ArrayList<>();

    @Option(names = "--aeron", paramLabel = "CHANNEL",
        description = "Aeron channel for kvidx SBE events (aeron:ipc, aeron:udp?endpoint=host:port); starts Aeron.")
    private List<String> aeron = new ArrayList<>();

    @Option(names = "--aeron-dir", description = "Aeron directory (default /dev/shm/kvidx-aeron-<cell>).")
    private String aeronDir;

    @Option(names = "--external-driver", description = "Use an external media driver instead of an embedded one.")
    private boolean externalDriver;

    @Option(names = "--stats-ms", description = "Print counters every N ms (0 = only at exit).")
    private long statsMs;

    @Option(names = "--pod-max-blocks", paramLabel = "N", description = "Most blocks per pod the daemon tracks "
        + "(each pod's engine-hash map; default 131072). A pod holding more loses its least recently stored blocks.")
    private Integer podMaxBlocks;

    @Option(names = "--tier-map-blocks", paramLabel = "N", description = "Most blocks per pod whose storage tier "
        + "(GPU, CPU, disk; local or remote) the host tier map keeps for routers (default 8192: 256 KiB per pod). "
        + "A pod holding more loses the tiers of its least recently updated blocks, which then score as GPU.")
    private Integer tierMapBlocks;

    @Option(names = "--replay-gap-policy", paramLabel = "clear|keep", description = "When an engine no longer "
        + "buffers the batches a restart or gap missed: clear the pod and rebuild it from the replay (default), or "
        + "keep its blocks and mark it suspect.")
    private String replayGapPolicy;

    @Option(names = "--checkpoint-ms", paramLabel = "MS", description = "How often each publisher's applied "
        + "sequence is recorded for a restart (default 200).")
    private Long checkpointMs;

    @Option(names = "--metrics", paramLabel = "HOST:PORT", description = "Serve Prometheus metrics at "
        + "http://HOST:PORT/metrics (default: off).")
    private String metrics;

    @Override
    public Integer call() {
        final DaemonContext context = new DaemonContext();
        if (config != null) {
            DaemonConfigFile.load(config, context);
        }
        if (dir != null) {
            context.dir(dir);
        }
        if (cell != null) {
            context.cell(cell);
        }
        if (group != null) {
            context.group(group);
        }
        if (blockSize != null) {
            context.blockSize(blockSize);
        }
        if (maxPods != null) {
            context.maxPods(maxPods);
        }
        if (capacity != null) {
            context.capacityBlocks(capacity);
        }
        if (writers != null) {
            context.writers(writers);
        }
        if (podTimeoutMs != null) {
            context.podTimeoutMs(podTimeoutMs);
        }
        if (idle != null) {
            context.idleStrategy(idle);
        }
        if (tierMapBlocks != null) {
            context.tierMapBlocks(tierMapBlocks);
        }
        if (podMaxBlocks != null) {
            context.podMaxBlocks(podMaxBlocks);
        }
        if (replayGapPolicy != null) {
            context.replayGapPolicy(replayGapPolicy);
        }
        if (checkpointMs != null) {
            context.checkpointIntervalMs(checkpointMs);
        }
        if (metrics != null) {
            context.metrics(metrics);
        }
        for (final String z : zmq) {
            context.addZmq(parseZmq(z));
        }
        aeron.forEach(context::addAeronChannel);
        if (aeronDir != null) {
            context.aeronDir(aeronDir);
        }
        if (externalDriver) {
            context.embeddedDriver(false);
        }
        for (final String r : replay) {
            final int eq = r.indexOf('=');
            if (eq <= 0 || eq == r.length() - 1) {
                throw new IllegalArgumentException("--replay must be POD=ENDPOINT: " + r);
            }
            context.replay(r.substring(0, eq), r.substring(eq + 1));
        }
        for (final String e : engine) {
            final int eq = e.lastIndexOf('=');
            if (eq <= 0 || eq == e.length() - 1) {
                throw new IllegalArgumentException("--engine must be POD=ENGINE or ENDPOINT=ENGINE: " + e);
            }
            context.engine(e.substring(0, eq), e.substring(eq + 1));
        }
        // Closing the barrier (last) lets the JVM's shutdown hook finish once the daemon has stopped.
        try (ShutdownSignalBarrier barrier = new ShutdownSignalBarrier();
            KvidxDaemon daemon = KvidxDaemon.start(context, System.err)) {
            System.out.println("kvidx daemon: index " + context.indexContext().indexFile() + ", block size "
                + context.blockSize() + ", " + context.zmqEndpoints().size() + " ZeroMQ endpoint(s), "
                + context.aeronChannels().size() + " Aeron channel(s)"
                + (context.aeronChannels().isEmpty() ? "" : " in " + context.aeronDir()) + "; Ctrl-C to stop");
            System.out.flush();
            if (statsMs > 0) {
                final Thread stats = Thread.ofPlatform().daemon().name("kvidx-stats").start(() -> {
                    try {
                        while (true) {
                            Thread.sleep(statsMs);
                            System.out.print(daemon.counters().describe());
                            System.out.flush();
                        }
                    } catch (final InterruptedException ex) {
                        Thread.currentThread().interrupt();
                    }
                });
                barrier.await();
                stats.interrupt();
            } else {
                barrier.await();
            }
            System.out.println("kvidx daemon: stopping");
            System.out.print(daemon.counters().describe());
            System.out.flush();
        }
        return 0;
    }

    static ZmqEndpoint parseZmq(final String spec) {
        final int eq = spec.indexOf('=');
        if (eq <= 0 || eq == spec.length() - 1) {
            throw new IllegalArgumentException("--zmq must be POD[@MODEL]=ENDPOINT: " + spec);
        }
        final String left = spec.substring(0, eq);
        final String endpoint = spec.substring(eq + 1);
        final int at = left.indexOf('@');
        final String pod = at < 0 ? left : left.substring(0, at);
        final String model = at < 0 ? null : left.substring(at + 1);
        return new ZmqEndpoint(endpoint, "*".equals(pod) ? null : pod, model == null || model.isEmpty() ? null : model,
            null);
    }
}
