package io.kvidx.daemon.agent;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.ffm.PosixNative;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.status.AtomicCounter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;


/**
 * An agent whose thread pins itself to a CPU in {@link #onStart()}, before the wrapped agent's own
 * {@code onStart}: the pin is made from inside the thread ({@code sched_setaffinity} on the calling thread through
 * {@link PosixNative#pinCurrentThread(int)}), so it applies to the agent's thread and nothing else. A failure (a
 * CPU the machine does not have, one outside the process's cpuset, no native access) is counted
 * ({@link CounterType#PIN_FAILURES}), logged once with its errno in the distinct error log, and the agent runs
 * unpinned.
 *
 * <p><b>Note:</b> like any agent, run by one thread.
 */
public final class PinnedAgent implements Agent {
    /** No CPU: the thread keeps the CPU mask it inherited. */
    public static final int NO_CPU = -1;

    private final Agent agent;
    private final int cpu;
    private final IngestErrors errors;
    private final AtomicCounter failures;

    private static final Logger LOG = LoggerFactory.getLogger(PinnedAgent.class);

    private PinnedAgent(final Agent agent, final int cpu, final IngestErrors errors, final AtomicCounter failures) {
        this.agent = agent;
        this.cpu = cpu;
        this.errors = errors;
        this.failures = failures;
    }

    /**
     * @param agent    the agent.
     * @param cpu      its CPU, or {@link #NO_CPU} to leave the thread's mask alone.
     * @param errors   where a failure is logged.
     * @param failures the {@link CounterType#PIN_FAILURES} counter.
     * @return the agent itself when there is no CPU, else one that pins its thread first.
     */
    public static Agent of(final Agent agent, final int cpu, final IngestErrors errors,
        final AtomicCounter failures) {
        return cpu == NO_CPU ? agent : new PinnedAgent(agent, cpu, errors, failures);
    }

    /**
     * Pins the calling thread; reports a failure and returns.
     *
     * @param role     role name, for the log.
     * @param cpu      the CPU.
     * @param errors   where a failure is logged.
     * @param failures counted on failure.
     * @return true when the thread is pinned.
     */
    public static boolean pinCurrentThread(final String role, final int cpu, final IngestErrors errors,
        final AtomicCounter failures) {
        final int errno = PosixNative.pinCurrentThread(cpu);
        if (errno != 0) {
            failures.increment();
            errors.report(CounterType.PIN_FAILURES.typeId(), role.hashCode(), () -> "agent " + role
                + " could not pin its thread to CPU " + cpu + ": sched_setaffinity failed with "
                + PosixNative.errnoName(errno) + "; it runs unpinned");
            return false;
        }
        LOG.info("agent {} pinned to CPU {}", role, cpu);
        return true;
    }

    @Override
    public void onStart() {
        pinCurrentThread(agent.roleName(), cpu, errors, failures);
        agent.onStart();
    }

    @Override
    public int doWork() throws Exception {
        return agent.doWork();
    }

    @Override
    public void onClose() {
        agent.onClose();
    }

    @Override
    public String roleName() {
        return agent.roleName();
    }
}
