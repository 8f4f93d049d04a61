package io.kvidx.daemon.agent;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.IdleStrategy;


/**
 * Makes the runner of each of the daemon's agents: its configured idle strategy, its thread pinned to its
 * configured CPU from inside ({@link PinnedAgent}), exceptions counted and logged ({@link AgentErrorHandler}).
 *
 * <p><b>Note:</b> used by the thread that starts the daemon.
 */
public final class AgentThreads {
    private final IngestErrors errors;
    private final IngestCounters counters;
    private final java.util.function.Consumer<String> fatal;

    /**
     * @param errors   the distinct error log.
     * @param counters the counters (agent errors, pin failures).
     */
    public AgentThreads(final IngestErrors errors, final IngestCounters counters) {
        this(errors, counters, null);
    }

    /**
     * @param errors   the daemon's distinct error log.
     * @param counters its counters (agent errors, pin failures).
     * @param fatal    told when an agent stops because it left a shard locked (the daemon stops), or null.
     */
    public AgentThreads(final IngestErrors errors, final IngestCounters counters,
        final java.util.function.Consumer<String> fatal) {
        this.errors = errors;
        this.counters = counters;
        this.fatal = fatal;
    }

    /**
     * @param agent the agent.
     * @param cpu   its CPU, or {@link PinnedAgent#NO_CPU}.
     * @param idle  its idle strategy (its own instance: the runner's thread keeps state in it).
     * @return its runner, not started.
     */
    public AgentRunner runner(final Agent agent, final int cpu, final IdleStrategy idle) {
        return new AgentRunner(idle, AgentErrorHandler.of(agent.roleName(), errors,
            counters.get(CounterType.AGENT_ERRORS), fatal), null, PinnedAgent.of(agent, cpu, errors,
            counters.get(CounterType.PIN_FAILURES)));
    }
}
