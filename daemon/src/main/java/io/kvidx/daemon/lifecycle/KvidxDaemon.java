package io.kvidx.daemon.lifecycle;

import io.aeron.Aeron;
import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.AgentSettings;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.IdleStrategies;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexMaintenanceAgent;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.ops.CountersFile;
import io.kvidx.daemon.ops.ErrorLogFile;
import io.kvidx.daemon.ingest.aeron.AeronIngestAgent;
import io.kvidx.daemon.ingest.zmq.ZmqIngestAgent;
import io.kvidx.daemon.ops.DaemonMetrics;
import io.kvidx.daemon.ops.PodStatsFile;
import io.kvidx.daemon.state.PodBlockMaps;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.ApplyObserver;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import io.kvidx.ffm.PosixNative;
import org.agrona.CloseHelper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.SystemEpochClock;

import java.util.ArrayList;
import java.util.List;

/**
 * The running daemon: takes the cell's {@link CellLock}, creates the index, starts the writer agents, the transports
 * and the index maintenance agent, and stops them in reverse order on {@link #close()}.
 *
 * <pre>
 *  ZmqIngestAgent (JeroMQ SUB, seq, replay) --\
 *                                              +--> WriterPool: queue per writer --> WriterAgent --> IndexWriter
 *  (other transports)  -----------------------/      (pod -> writer, sticky)
 *  IndexMaintenanceAgent: index heartbeat + bounded sweep of pods taken down
 * </pre>
 *
 * <p><b>Note:</b> start and close from one thread.
 */
public final class KvidxDaemon implements AutoCloseable {
    private final DaemonContext context;
    private final IndexWriter index;
    private final IngestCounters counters;
    private final IngestErrors errors;
    private final PodDirectory directory;
    private final WriterPool writers;
    private final List<AgentRunner> runners = new ArrayList<>();
    private final EvictionMirror evictions;
    private final MediaDriver driver;
    private final Aeron aeron;
    private final java.nio.file.Path stateDir;
    private final PublisherProgress progress;
    private ZmqIngestAgent zmq;
    private final CellLock lock;
    private final PodStatsFile podStats;
    private final DaemonMetrics metrics;
    private static final Logger LOG = LoggerFactory.getLogger(KvidxDaemon.class);
    private final AgentThreads threads;

    private KvidxDaemon(final DaemonContext context, final CellLock lock) {
        this.context = context.conclude();
        this.lock = lock;
        final EpochClock clock = SystemEpochClock.INSTANCE;
        final java.nio.file.Path cellDirectory = context.indexContext().indexFile().getParent();
        this.errors = new IngestErrors(ErrorLogFile.create(context.sharedFiles(), cellDirectory,
            ErrorLogFile.LOG_LENGTH_DEFAULT).buffer());
        if (!context.aeron().channels().isEmpty()) {
            driver = context.aeron().embeddedDriver() ? MediaDriver.launch(new MediaDriver.Context()
                .aeronDirectoryName(context.aeron().dir())
                .dirDeleteOnStart(true)
                .dirDeleteOnShutdown(true)
                .threadingMode(ThreadingMode.SHARED)
                .sharedIdleStrategy(IdleStrategies.supplier(context.agents().aeronIngestIdle()).get())
                .ipcTermBufferLength(context.aeron().termLength())
                .publicationTermBufferLength(context.aeron().termLength())
                .termBufferSparseFile(true)) : null;
            aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(context.aeron().dir())
                .errorHandler(ex -> errors.report(0, -1, () -> "Aeron client: " + ex)));
            this.counters = IngestCounters.of(aeron::addCounter, aeron.countersReader());
            CountersFile.createAeronPointer(context.sharedFiles(), cellDirectory, context.aeron().dir()).close();
        } else {
            driver = null;
            aeron = null;
            this.counters = IngestCounters.in(CountersFile.createLocal(context.sharedFiles(), cellDirectory,
                CountersFile.MAX_COUNTERS_DEFAULT).manager());
        }
        this.index = IndexWriter.open(context.indexContext());
        LOG.info("{} {} ({}; epoch {}); repair: {}", index.attached() ? "re-attached to" : "created",
            context.indexContext().indexFile(), index.openReason(), index.epoch(), index.repairSummary());
        if (context.mlockIndex()) {
            mlockIndex();
        }
        this.threads = new AgentThreads(errors, counters);
        if (index.attached()) {
            counters.get(CounterType.WARM_RESTARTS).increment();
        }
        this.stateDir = context.indexContext().indexFile().resolveSibling(PodBlockMaps.STATE_DIR_NAME);
        this.progress = new PublisherProgress(stateDir);
        if (!index.attached()) {
            // A new index holds no blocks: what the previous daemon recorded about the engines does not apply.
            progress.write(List.of());
        }
        this.directory = new PodDirectory(PodDirectory.MAX_PODS_DEFAULT);
        this.writers = new WriterPool(context.writers(), context.writerQueueLength(), index,
            new PodBlockMaps(stateDir, context.podMaxBlocks()), directory, counters, errors, clock,
            context.podTimeoutMs(), IdleStrategies.supplier(context.agents().writerIdle()),
            IdleStrategies.supplier(IdleStrategies.BACKOFF));
        this.podStats = PodStatsFile.create(context.sharedFiles(), cellDirectory, index.context().maxPods());
        this.metrics = context.metrics() != null ? new DaemonMetrics() : null;
        writers.observe(podStats, metrics != null ? metrics.observer() : ApplyObserver.NONE);
        this.evictions = new EvictionMirror();
    }

    /**
     * Starts a daemon.
     *
     * @param context configuration.
     * @return the running daemon.
     * @throws CellLockedException when another daemon writes the same cell.
     */
    public static KvidxDaemon start(final DaemonContext context) {
        // The cell's lock comes first: a second daemon must not touch the Aeron directory or the index.
        final CellLock lock = CellLock.acquire(context.conclude().dir(), context.cell(), context.sharedFiles());
        final KvidxDaemon daemon;
        try {
            daemon = new KvidxDaemon(context, lock);
        } catch (final RuntimeException ex) {
            CloseHelper.quietClose(lock);
            throw ex;
        }
        try {
            daemon.startAgents();
        } catch (final RuntimeException ex) {
            daemon.close();
            throw ex;
        }
        return daemon;
    }

    private void mlockIndex() {
        final int errno = index.mlock();
        if (errno == 0) {
            LOG.info("index locked into RAM (mlock, {} bytes)", index.mappedBytes());
        } else {
            errors.report(0, -2, () -> "cannot lock the index into RAM: mlock of " + index.mappedBytes()
                + " bytes failed with " + PosixNative.errnoName(errno) + " (raise RLIMIT_MEMLOCK, "
                + "LimitMEMLOCK= in the unit); running without");
        }
    }

    private void startAgents() {
        final AgentSettings agents = context.agents();
        writers.start((i, agent) -> threads.runner(agent, agents.writerCpu(i), agents.writerIdle()));
        // Pods alive in a re-attached index go back to their writers, which take them down if they stay silent.
        // Their model comes from the pod table: it seeds their chains' router keys, and a pod's writer state keeps
        // the model it was created with (a pod known from a topic only would otherwise key its new chains without).
        for (int slot = 0; slot < index.context().maxPods(); slot++) {
            if (index.isAlive(slot)) {
                final int pod = directory.podNumber(index.podId(slot), index.model(slot));
                if (pod >= 0) {
                    writers.offer(pod, WriterMessages.REGISTER);
                }
            }
        }
        final EpochClock clock = SystemEpochClock.INSTANCE;
        run(new IndexMaintenanceAgent(index, clock, context.heartbeatIntervalMs()), agents.maintenanceCpu(),
            agents.maintenanceIdle());
        run(evictions, agents.maintenanceCpu(), agents.maintenanceIdle());
        if (!context.zmq().endpoints().isEmpty()) {
            zmq = new ZmqIngestAgent(context.zmq().endpoints(), directory, writers, counters, errors, clock,
                context.heartbeatIntervalMs(), context.zmq().replayTimeoutMs(), context.zmq().handshakeTimeoutMs(),
                new ZmqIngestAgent.Recovery(progress, context.zmq().checkpointIntervalMs(),
                    "clear".equals(context.zmq().replayGapPolicy())));
            run(zmq, agents.zmqIngestCpu(), agents.zmqIngestIdle());
        }
        if (metrics != null) {
            final java.net.InetSocketAddress address = DaemonMetrics.parseAddress(context.metrics());
            metrics.start(address, IndexReader.attach(new IndexReaderContext().dir(context.dir())
                .cell(context.cell()).attachTimeoutMs(0).heartbeatTimeoutMs(0)), context.cell(), writers);
            LOG.info("metrics at http://{}:{}/metrics", address.getHostString(), metrics.port());
        }
        if (aeron != null) {
            run(new AeronIngestAgent(aeron, context.aeron().channels(), context.aeron().streamId(), directory, writers,
                counters, errors), agents.aeronIngestCpu(), agents.aeronIngestIdle());
        }
    }

    private void run(final Agent agent, final int cpu, final String idle) {
        final AgentRunner runner = threads.runner(agent, cpu, idle);
        runners.add(runner);
        AgentRunner.startOnThread(runner);
    }

    /**
     * @return the metrics endpoint's port, or -1 when there is none.
     */
    public int metricsPort() {
        return metrics == null ? -1 : metrics.port();
    }

    /**
     * @return the index writer.
     */
    public IndexWriter index() {
        return index;
    }

    /**
     * @return the Aeron client, or null when no Aeron channel is configured.
     */
    public Aeron aeron() {
        return aeron;
    }

    /**
     * @return the counters.
     */
    public IngestCounters counters() {
        return counters;
    }

    /**
     * @return the error log.
     */
    public IngestErrors errors() {
        return errors;
    }

    /**
     * @return the writer pool (transports offer events to it).
     */
    public WriterPool writers() {
        return writers;
    }

    /**
     * @return the pod directory.
     */
    public PodDirectory directory() {
        return directory;
    }

    /**
     * Stops the transports first, then the writers, then maintenance; leaves the index file in place (readers see
     * its heartbeat stop) unless the context says to delete it; releases the cell's lock last.
     */
    @Override
    public void close() {
        final List<AgentRunner> reversed = new ArrayList<>(runners);
        java.util.Collections.reverse(reversed);
        CloseHelper.closeAll(metrics);
        CloseHelper.closeAll(reversed);
        // Let the writers apply what the transports queued (bounded), then record how far each publisher got.
        final long deadline = System.nanoTime() + CLOSE_DRAIN_NS;
        while (!writers.isIdle() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        final boolean drained = writers.isIdle();
        CloseHelper.closeAll(writers);
        if (zmq != null && drained) {
            progress.write(zmq.dispatched());
        }
        // The counters and the error log stay mapped: callers may read them after close (their files stay in the
        // cell for the tools too); the mappings go with the process.
        CloseHelper.closeAll(index, counters, aeron, driver, podStats, lock);
    }

    /** How long close waits for the writers to drain their queues. */
    private static final long CLOSE_DRAIN_NS = java.util.concurrent.TimeUnit.SECONDS.toNanos(5);

    /** Mirrors the index's and the tier map's eviction counts into their counters once a second. */
    private final class EvictionMirror implements Agent {
        private long next;

        @Override
        public int doWork() {
            final long now = System.currentTimeMillis();
            if (now < next) {
                return 0;
            }
            next = now + 1000;
            counters.get(CounterType.EVICTIONS).setRelease(index.evictions());
            counters.get(CounterType.TIER_MAP_EVICTIONS).setRelease(index.tiers().evictions());
            return 1;
        }

        @Override
        public String roleName() {
            return "kvidx-eviction-mirror";
        }
    }
}
