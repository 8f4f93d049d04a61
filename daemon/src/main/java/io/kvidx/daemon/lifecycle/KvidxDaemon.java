package io.kvidx.daemon.lifecycle;

import io.aeron.Aeron;
import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.ProtocolFaults;
import io.kvidx.daemon.agent.AgentThreads;
import io.kvidx.daemon.config.AgentSettings;
import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.IdleStrategies;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.CellLock;
import io.kvidx.daemon.index.CellLockedException;
import io.kvidx.daemon.index.IndexMaintenanceAgent;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.ops.CountersFile;
import io.kvidx.daemon.ops.ErrorLogFile;
import io.kvidx.daemon.ingest.EngineDecoders;
import io.kvidx.daemon.ingest.aeron.AeronIngestAgent;
import io.kvidx.daemon.metrics.DaemonMetrics;
import io.kvidx.daemon.ops.PodStatsFile;
import io.kvidx.daemon.state.PodBlockMaps;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.membership.Engine;
import io.kvidx.daemon.membership.EngineFile;
import io.kvidx.daemon.membership.Membership;
import io.kvidx.daemon.serve.IndexHttpServer;
import io.kvidx.daemon.writer.ApplyObserver;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import io.kvidx.ffm.PosixNative;
import io.kvidx.daemon.snapshot.SnapshotException;
import io.kvidx.daemon.snapshot.SnapshotLoader;
import io.kvidx.daemon.snapshot.SnapshotService;
import org.agrona.CloseHelper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.IdleStrategy;
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
    /** The ZeroMQ ingest agents ({@code --zmq-ingest-threads}), or null without the ZeroMQ transport. */
    private ZmqTransport zmq;
    private final Membership membership;
    private IndexHttpServer http;
    private ConfigWatcher configWatcher;
    private DiscoveryFeed discovery;
    private final CellLock lock;
    private final PodStatsFile podStats;
    private final DaemonMetrics metrics;
    private static final Logger LOG = LoggerFactory.getLogger(KvidxDaemon.class);
    private final AgentThreads threads;
    private final FatalError fatal = new FatalError();
    private final PodBlockMaps blockMaps;
    private final SnapshotService snapshots;
    private SnapshotLoader.Loaded catchUp;
    /** The daemon's part in a JetStream topology, or null without {@code jetstream.url} (ADR 0024). */
    private JetStreamRole jetstream;

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
        this.index = PeerCatchUp.openIndex(context, lock);
        LOG.info("{} {} ({}; epoch {}); repair: {}", index.attached() ? "re-attached to" : "created",
            context.indexContext().indexFile(), index.openReason(), index.epoch(), index.repairSummary());
        if (ProtocolFaults.OMITTED != null) {
            LOG.warn("-D{}={}: a publication protocol step is LEFT OUT, readers may see torn entries (jcstress proofs "
                + "only, never in production)", ProtocolFaults.OMIT_PROP_NAME, ProtocolFaults.OMITTED.stepName());
        }
        if (context.mlockIndex()) {
            mlockIndex();
        }
        this.threads = new AgentThreads(errors, counters, fatal::report);
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
        this.blockMaps = new PodBlockMaps(stateDir, context.podMaxBlocks());
        this.writers = new WriterPool(context.writers(), context.writerQueueLength(), index,
            blockMaps, directory, counters, errors, clock,
            context.podTimeoutMs(), IdleStrategies.supplier(context.agents().writerIdle()),
            IdleStrategies.supplier(IdleStrategies.BACKOFF), EngineDecoders.standard());
        this.podStats = PodStatsFile.create(context.sharedFiles(), cellDirectory, index.context().maxPods());
        this.metrics = context.serving().metrics() != null || context.serving().http() != null ? new DaemonMetrics()
            : null;
        this.membership = new Membership(new EngineFile(stateDir), new Membership.Subscriptions() {
            @Override
            public java.util.concurrent.CompletableFuture<Void> subscribe(final ZmqEndpoint endpoint) {
                return zmq().subscribe(endpoint);
            }

            @Override
            public java.util.concurrent.CompletableFuture<Void> unsubscribe(final ZmqEndpoint endpoint) {
                return zmq().unsubscribe(endpoint);
            }
        });
        writers.observe(podStats, metrics != null ? metrics.observer() : ApplyObserver.NONE);
        this.snapshots = new SnapshotService(index, writers, progress, context.snapshots().snapshotMaxBytes(),
            context.snapshots().snapshotTimeoutMs());
        // A snapshot names the engines registered through the API, so that a replica subscribes to them too.
        snapshots.membership(() -> {
            final List<Engine> registered = new ArrayList<>();
            for (final Engine e : membership.engines().values()) {
                if (e.source() == Engine.Source.API) {
                    registered.add(e);
                }
            }
            return EngineFile.encode(registered);
        });
        this.evictions = new EvictionMirror(index, counters);
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
        // A peer's /dump needs its admin token when it has one, else its token: replicas share them.
        catchUp = PeerCatchUp.load(context.snapshots(), index, blockMaps, progress, stateDir,
            context.serving().httpAdminTokenFile() != null ? context.serving().httpAdminTokenFile()
                : context.serving().httpTokenFile());
        final boolean streamConsumer = context.jetstream().consumer();
        if (context.jetstream().enabled()) {
            jetstream = JetStreamRole.connect(context, counters, errors);
            if (streamConsumer && catchUp == null && !index.attached()) {
                catchUp = jetstream.loadNewestSnapshot(index, blockMaps, progress, stateDir);
            }
        }
        final AgentSettings agents = context.agents();
        // A backoff writer is unparked by the threads that queue it a batch (WakeableBackoff).
        final long[] writerBackoff = IdleStrategies.backoff(agents.writerIdle());
        writers.start((i, agent) -> threads.runner(agent, agents.writerCpu(i), writerBackoff != null
            ? writers.wakeableBackoff(i, writerBackoff) : IdleStrategies.supplier(agents.writerIdle()).get()));
        final EpochClock clock = SystemEpochClock.INSTANCE;
        if (context.jetstream().relay()) {
            // Before any transport offers a message: the relay sees them all. Closed after the transports.
            run(jetstream.relay(directory, writers, clock), AgentSettings.NO_CPU, IdleStrategies.BACKOFF);
        }
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
        run(new IndexMaintenanceAgent(index, clock, context.heartbeatIntervalMs(), writers.dutyCycles()),
            agents.maintenanceCpu(), agents.maintenanceIdle());
        run(evictions, agents.maintenanceCpu(), agents.maintenanceIdle());
        if (catchUp != null && catchUp.membership().length > 0) {
            // The peer's registered engines: this replica subscribes to them too, and asks them to replay from the
            // snapshot's sequences.
            try {
                new EngineFile(stateDir).merge(EngineFile.decode(catchUp.membership()));
            } catch (final java.io.IOException | RuntimeException ex) {
                errors.report(0, -3, () -> "the peer's registered engines cannot be read: " + ex.getMessage());
            }
        }
        final int zmqParts = context.zmq().ingestThreads();
        final io.kvidx.daemon.state.ProgressLog[] shares = ZmqTransport.progressShares(progress, zmqParts,
            streamConsumer);
        final List<ZmqEndpoint> subscriptions = new ArrayList<>();
        for (final Engine e : membership.start(ZmqTransport.configuredEngines(context.zmq().endpoints()))) {
            subscriptions.add(e.toEndpoint());
        }
        if (!subscriptions.isEmpty() || context.serving().http() != null || context.zmq().bind() != null
            || context.discovery().context() != null) {
            zmq = new ZmqTransport(context, subscriptions, java.util.Arrays.copyOf(shares, zmqParts), directory,
                writers, counters, errors, clock,
                podId -> {
                    final Engine e = membership.engines().get(podId);
                    return e == null ? null : e.toEndpoint();
                });
            zmq.start(agents, this::run);
        }
        if (context.discovery().context() != null) {
            discovery = new DiscoveryFeed(context.discovery(), membership, errors,
                context.indexContext().indexFile().getParent());
            if (metrics != null) {
                metrics.discovery(discovery::status);
            }
        }
        if (metrics != null) {
            final java.net.InetSocketAddress address = context.serving().metrics() == null ? null
                : DaemonMetrics.parseAddress(context.serving().metrics());
            metrics.start(address, IndexReader.attach(new IndexReaderContext().dir(context.dir())
                .cell(context.cell()).attachTimeoutMs(0).heartbeatTimeoutMs(0)), context.cell(), writers);
            if (address != null) {
                LOG.info("metrics at http://{}:{}/metrics", address.getHostString(), metrics.port());
            }
        }
        if (context.serving().http() != null) {
            startHttp();
        }
        if (context.configReload() != null) {
            configWatcher = new ConfigWatcher(context.configReload().file(), () -> {
                final List<Engine> engines = ZmqTransport.configuredEngines(context.configReload().endpoints().get());
                membership.reconfigure(engines).whenComplete((n, ex) -> {
                    if (ex != null) {
                        errors.report(0, -3, () -> "config reload failed: " + ex);
                    } else {
                        LOG.info("config {} reloaded: {} subscription(s) changed", context.configReload().file(), n);
                    }
                });
            }, ex -> errors.report(0, -3, () -> "config reload failed: " + ex.getMessage()));
        }
        if (aeron != null) {
            run(new AeronIngestAgent(aeron, context.aeron().channels(), context.aeron().streamId(), directory, writers,
                counters, errors, context.aeron().pods(), DaemonConfiguration.AERON_PODS_PROP_NAME),
                agents.aeronIngestCpu(), agents.aeronIngestIdle());
        }
        if (streamConsumer) {
            run(jetstream.consumer(directory, writers, shares[zmqParts], clock, stateDir, fatal::report),
                AgentSettings.NO_CPU, agents.zmqIngestIdle());
            final Agent snapshotAgent = jetstream.snapshots(this::snapshot, clock);
            if (snapshotAgent != null) {
                run(snapshotAgent, AgentSettings.NO_CPU, agents.maintenanceIdle());
            }
        }
    }

    /**
     * @return the ZeroMQ transport, for the membership's subscription changes.
     * @throws IllegalStateException when the daemon runs without one.
     */
    private ZmqTransport zmq() {
        final ZmqTransport transport = zmq;
        if (transport == null) {
            throw new IllegalStateException("no ZeroMQ transport: start the daemon with --http or --zmq");
        }
        return transport;
    }

    private void startHttp() {
        http = HttpApiStart.start(context, new HttpApiStart.Daemon(membership, this::snapshot, metrics,
            this::discoveryStatus, () -> {
                final JetStreamRole role = jetstream;
                return role == null ? null : role.problem();
            }));
    }

    /**
     * @return what pod discovery knows now, or null when discovery is off.
     */
    public io.kvidx.discovery.DiscoveryStatus discoveryStatus() {
        final DiscoveryFeed feed = discovery;
        return feed == null ? null : feed.status();
    }

    /**
     * @return the indexer HTTP API's port, or -1 when it is off.
     */
    public int httpPort() {
        return http == null ? -1 : http.port();
    }

    /**
     * @return the table of engines (registered through the API or configured).
     */
    public Membership membership() {
        return membership;
    }

    private void run(final Agent agent, final int cpu, final String idle) {
        run(agent, cpu, IdleStrategies.supplier(idle).get());
    }

    private void run(final Agent agent, final int cpu, final IdleStrategy idle) {
        final AgentRunner runner = threads.runner(agent, cpu, idle);
        runners.add(runner);
        AgentRunner.startOnThread(runner);
    }

    /**
     * Takes a snapshot of the daemon for a replica to catch up from ({@code GET /dump?format=kvidx},
     * docs/snapshot-format.md): each publisher's applied sequence, then every registered pod's engine-hash map, read
     * on its writer's thread; concurrent calls share the snapshot in flight.
     *
     * @return the snapshot; completed exceptionally with a {@link SnapshotException} when a writer does not answer in
     * time, it exceeds {@code snapshotMaxBytes}, or the daemon closes. Never blocks the caller.
     */
    public java.util.concurrent.CompletableFuture<byte[]> snapshot() {
        return snapshots.snapshot();
    }

    /**
     * @param encoded the registered engines, encoded by their owner, for each snapshot's opaque membership section
     *                (called on the snapshot thread once per snapshot); null for none (an empty section).
     */
    public void snapshotMembership(final java.util.function.Supplier<byte[]> encoded) {
        snapshots.membership(encoded);
    }

    /**
     * @return what this daemon loaded from its {@code --peer} at start (with the snapshot's membership section), or
     * null when it loaded nothing.
     */
    public SnapshotLoader.Loaded catchUp() {
        return catchUp;
    }

    /**
     * @return the stream consumer's last applied (recorded) stream sequence, or -1 when the daemon consumes no stream.
     */
    public long jetstreamAppliedSequence() {
        final JetStreamRole role = jetstream;
        return role == null || role.streamConsumer() == null ? -1 : role.streamConsumer().appliedSequence();
    }

    /**
     * @return the metrics endpoint's port, or -1 when there is none.
     */
    public int metricsPort() {
        return metrics == null ? -1 : metrics.port();
    }

    /**
     * @param listener told once, on any thread, when a fatal error stops the daemon (at once if one already did).
     */
    public void onFatal(final java.util.function.Consumer<String> listener) {
        fatal.listen(listener);
    }

    /**
     * @return the fatal error that stopped the daemon, or null.
     */
    public String fatalError() {
        return fatal.message();
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
        CloseHelper.closeAll(discovery, configWatcher, http, metrics, snapshots);
        CloseHelper.closeAll(reversed);
        membership.close();
        // Let the writers apply what the transports queued (bounded), then record how far each publisher got.
        final long deadline = System.nanoTime() + CLOSE_DRAIN_NS;
        while (!writers.isIdle() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        final boolean drained = writers.isIdle();
        CloseHelper.closeAll(writers);
        if (jetstream != null) {
            jetstream.recordProgress(progress, drained, zmq == null ? null : zmq::dispatched);
        } else if (zmq != null && drained) {
            progress.write(zmq.dispatched());
        }
        // The counters and the error log stay mapped: callers may read them after close (their files stay in the
        // cell for the tools too); the mappings go with the process.
        CloseHelper.closeAll(jetstream, index, counters, aeron, driver, podStats, lock);
    }

    /** How long close waits for the writers to drain their queues. */
    private static final long CLOSE_DRAIN_NS = java.util.concurrent.TimeUnit.SECONDS.toNanos(5);


}
