package io.kvidx.daemon.lifecycle;

import io.kvidx.daemon.config.AgentSettings;
import io.kvidx.daemon.config.IdleStrategies;
import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.zmq.IoThreadPins;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.ingest.zmq.SocketWaitBackoff;
import io.kvidx.daemon.ingest.zmq.ZmqIngestAgent;
import io.kvidx.daemon.jetstream.StreamConsumer;
import io.kvidx.daemon.membership.Engine;
import io.kvidx.daemon.membership.Membership;
import io.kvidx.daemon.state.ProgressLog;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.IdleStrategy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The daemon's ZeroMQ transport: one {@link ZmqIngestAgent} per ingest thread ({@code zmqIngestThreads}), each with
 * its share of the subscriptions (by endpoint, {@link ZmqIngestAgent#partOf}) and of the progress file, and each
 * with its replay agent. Agent 0 also holds the bound socket ({@code zmqBind}) and is the one pinned to
 * {@code zmqIngestCpu}; the threads of every agent's ZeroMQ context (JeroMQ's I/O threads) pin themselves to the
 * CPUs of {@code zmqIoCpus} in turn ({@link IoThreadPins}). Subscriptions added and dropped at runtime ({@link Membership.Subscriptions}) go to the
 * agent that owns their endpoint.
 *
 * <p><b>Note:</b> made and started by the thread that starts the daemon; {@link #subscribe} and {@link #unsubscribe}
 * from any thread (the membership's).
 */
final class ZmqTransport implements Membership.Subscriptions {
    /** How long a subscription change waits for room in an ingest agent's queue of changes. */
    private static final long CHANGE_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(5);

    private final ZmqIngestAgent[] agents;
    private final WriterPool writers;

    /** Starts an agent on a thread of its own. */
    @FunctionalInterface
    interface Runner {
        /**
         * @param agent the agent.
         * @param cpu   its CPU, or {@link AgentSettings#NO_CPU}.
         * @param idle  its idle strategy.
         */
        void run(Agent agent, int cpu, IdleStrategy idle);
    }

    /**
     * @param context       the daemon's configuration.
     * @param subscriptions the engines subscribed to at start.
     * @param shares        each ingest agent's share of the publishers' recorded sequences
     *                      ({@link #progressShares}).
     * @param directory     pod ids.
     * @param writers       the writer agents.
     * @param counters      counters.
     * @param errors        error log.
     * @param clock         clock.
     * @param registered    a pod id's registered subscription, for the bound socket (its replay endpoint and event
     *                      format), or null.
     */
    ZmqTransport(final DaemonContext context, final List<ZmqEndpoint> subscriptions, final ProgressLog[] shares,
        final PodDirectory directory, final WriterPool writers, final IngestCounters counters,
        final IngestErrors errors, final EpochClock clock,
        final java.util.function.Function<String, ZmqEndpoint> registered) {
        final int parts = context.zmq().ingestThreads();
        this.writers = writers;
        agents = new ZmqIngestAgent[parts];
        final int[] ioCpus = context.agents().zmqIoCpus();
        final IoThreadPins ioPins = ioCpus.length == 0 ? null
            : new IoThreadPins(ioCpus, errors, counters.get(CounterType.PIN_FAILURES));
        for (int i = 0; i < parts; i++) {
            final int part = i;
            agents[i] = new ZmqIngestAgent(subscriptions.stream()
                    .filter(e -> ZmqIngestAgent.partOf(e.endpoint(), parts) == part).toList(), directory, writers,
                counters, errors, clock, context.heartbeatIntervalMs(), context.zmq().replayTimeoutMs(),
                context.zmq().handshakeTimeoutMs(), new ZmqIngestAgent.Recovery(shares[i],
                context.zmq().checkpointIntervalMs(), "clear".equals(context.zmq().replayGapPolicy())))
                .topicPods(DaemonConfiguration.ZMQ_TOPIC_PODS_PROP_NAME, context.zmq().topicPods())
                .ioThreads(context.zmq().ioThreads());
            if (parts > 1) {
                agents[i].part(i);
            }
            if (ioPins != null) {
                agents[i].ioPins(ioPins);
            }
        }
        if (context.zmq().bind() != null) {
            // Engines that connect name their pods by topic; a registration of the same pod gives its replay.
            agents[0].bind(context.zmq().bind(), registered);
        }
    }

    /**
     * Starts every ingest agent, each followed by its replay agent (so the replay agent is closed first: runners
     * close in reverse order).
     *
     * @param agentSettings each agent's CPU and idle strategy.
     * @param runner        starts one agent.
     */
    void start(final AgentSettings agentSettings, final Runner runner) {
        // A backoff that parks up to 1 ms or more waits on the agent's sockets instead of parking, so a message that
        // arrives meanwhile is read at once (SocketWaitBackoff); other strategies are taken as configured.
        final long[] backoff = IdleStrategies.backoff(agentSettings.zmqIngestIdle());
        for (int i = 0; i < agents.length; i++) {
            runner.run(agents[i], i == 0 ? agentSettings.zmqIngestCpu() : AgentSettings.NO_CPU,
                SocketWaitBackoff.suits(backoff) ? new SocketWaitBackoff(agents[i], backoff)
                    : IdleStrategies.supplier(agentSettings.zmqIngestIdle()).get());
            runner.run(agents[i].replayAgent(), agentSettings.zmqReplayCpu(),
                IdleStrategies.supplier(agentSettings.zmqReplayIdle()).get());
        }
    }

    @Override
    public CompletableFuture<Void> subscribe(final ZmqEndpoint endpoint) {
        final CompletableFuture<Void> subscribed = new CompletableFuture<>();
        final ZmqIngestAgent agent = agentOf(endpoint);
        change(() -> agent.subscribe(endpoint, subscribed), subscribed);
        return subscribed;
    }

    /**
     * {@inheritDoc} Completes once the pods' writers have applied their takedowns: the ingest thread queues them
     * behind every batch of the endpoint it had queued, and the writers' tasks ({@link WriterPool#applied}) say when
     * the queues are read past them. No thread waits meanwhile.
     */
    @Override
    public CompletableFuture<Void> unsubscribe(final ZmqEndpoint endpoint) {
        final CompletableFuture<long[]> queued = new CompletableFuture<>();
        final ZmqIngestAgent agent = agentOf(endpoint);
        change(() -> agent.unsubscribe(endpoint, queued), queued);
        return queued.thenCompose(writers::applied);
    }

    private ZmqIngestAgent agentOf(final ZmqEndpoint endpoint) {
        return agents[ZmqIngestAgent.partOf(endpoint.endpoint(), agents.length)];
    }

    /** Queues a change, waiting (bounded) for room in the agent's queue; fails the change's future otherwise. */
    private static void change(final java.util.function.BooleanSupplier offer, final CompletableFuture<?> done) {
        final long deadline = System.nanoTime() + CHANGE_TIMEOUT_NS;
        while (!offer.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                done.completeExceptionally(new IllegalStateException("the ZeroMQ transport takes no more "
                    + "subscription changes (its queue stayed full for " + TimeUnit.NANOSECONDS.toSeconds(
                    CHANGE_TIMEOUT_NS) + " s)"));
                return;
            }
            LockSupport.parkNanos(1_000_000);
        }
    }

    /**
     * @return each publisher's last dispatched sequence, over every agent (once they have stopped and the writers
     * have drained their queues: then also the last applied one).
     */
    List<PublisherProgress.Entry> dispatched() {
        final List<PublisherProgress.Entry> all = new ArrayList<>();
        for (final ZmqIngestAgent agent : agents) {
            all.addAll(agent.dispatched());
        }
        return all;
    }

    /**
     * Splits {@code state/publishers} between its writers: one share per ZeroMQ ingest agent (the file itself when
     * there is one agent and nothing else records), and a last share for a JetStream consumer's record.
     *
     * @param progress    the cell's publisher progress.
     * @param parts       ZeroMQ ingest agents.
     * @param streamShare true to add a share for a JetStream consumer.
     * @return {@code parts} shares, plus one when streamShare.
     */
    static ProgressLog[] progressShares(final PublisherProgress progress, final int parts, final boolean streamShare) {
        if (!streamShare) {
            return parts == 1 ? new ProgressLog[] {progress}
                : progress.shares(parts, endpoint -> ZmqIngestAgent.partOf(endpoint, parts));
        }
        return progress.shares(parts + 1, endpoint -> endpoint.startsWith(StreamConsumer.PROGRESS_PREFIX) ? parts
            : ZmqIngestAgent.partOf(endpoint, parts));
    }

    /**
     * @param endpoints configured subscriptions.
     * @return them as configured engines.
     */
    static List<Engine> configuredEngines(final List<ZmqEndpoint> endpoints) {
        final List<Engine> engines = new ArrayList<>(endpoints.size());
        for (final ZmqEndpoint e : endpoints) {
            engines.add(Engine.configured(e));
        }
        return engines;
    }
}
