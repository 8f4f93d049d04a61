package io.kvidx.daemon.lifecycle;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestErrors;
import org.agrona.ErrorHandler;
import org.agrona.concurrent.status.AtomicCounter;

import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * What an agent runner does with an exception that escapes an agent's duty cycle: counts it
 * ({@link CounterType#AGENT_ERRORS}) and records it, with its stack trace, in the daemon's distinct error log (once
 * per agent and exception class). The agent keeps running; the index writer has already repaired a shard it was
 * changing when the exception was thrown (see {@code EntryTable}). When that repair failed too, the writer agent
 * throws an {@link org.agrona.concurrent.AgentTerminationException} instead: its runner stops it after this
 * handler has logged why, and the index heartbeat stops with its duty cycle ({@code IndexMaintenanceAgent}).
 *
 * <p><b>Note:</b> thread safe: each runner's thread calls its own handler; the counter and the log are shared.
 */
public final class AgentErrorHandler implements ErrorHandler {
    private final String role;
    private final IngestErrors errors;
    private final AtomicCounter counter;

    private AgentErrorHandler(final String role, final IngestErrors errors, final AtomicCounter counter) {
        this.role = role;
        this.errors = errors;
        this.counter = counter;
    }

    /**
     * @param role    the agent's role name.
     * @param errors  the distinct error log.
     * @param counter the agent errors counter.
     * @return the handler.
     */
    public static AgentErrorHandler of(final String role, final IngestErrors errors, final AtomicCounter counter) {
        return new AgentErrorHandler(role, errors, counter);
    }

    @Override
    public void onError(final Throwable throwable) {
        counter.increment();
        errors.report(CounterType.AGENT_ERRORS.typeId() * 64 + (throwable.getClass().getName().hashCode() & 63),
            role.hashCode(), () -> {
                final StringWriter trace = new StringWriter();
                throwable.printStackTrace(new PrintWriter(trace));
                return "agent " + role + " failed: " + trace;
            });
    }
}
