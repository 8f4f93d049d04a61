package io.kvidx.daemon.agent;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.ShardRepairException;
import org.agrona.ErrorHandler;
import org.agrona.concurrent.AgentTerminationException;
import org.agrona.concurrent.status.AtomicCounter;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.function.Consumer;

/**
 * What an agent runner does with an exception that escapes an agent's duty cycle: counts it
 * ({@link CounterType#AGENT_ERRORS}) and records it, with its stack trace, in the daemon's distinct error log (once
 * per agent and exception class). The agent keeps running; the index writer has already repaired a shard it was
 * changing when the exception was thrown (see {@code EntryTable}). When that repair failed too, the writer agent
 * throws an {@link org.agrona.concurrent.AgentTerminationException} instead: its runner stops it after this
 * handler has logged why, and the index heartbeat stops with its duty cycle ({@code IndexMaintenanceAgent}); the
 * handler also tells the daemon ({@code fatal}), which stops with that message and a non-zero exit status rather
 * than run on with a shard no writer will unlock.
 *
 * <p><b>Note:</b> thread safe: each runner's thread calls its own handler; the counter and the log are shared.
 */
public final class AgentErrorHandler implements ErrorHandler {
    private final String role;
    private final IngestErrors errors;
    private final AtomicCounter counter;
    private final Consumer<String> fatal;

    private AgentErrorHandler(final String role, final IngestErrors errors, final AtomicCounter counter,
        final Consumer<String> fatal) {
        this.role = role;
        this.errors = errors;
        this.counter = counter;
        this.fatal = fatal;
    }

    /**
     * @param role    the agent's role name.
     * @param errors  the distinct error log.
     * @param counter the agent errors counter.
     * @return the handler.
     */
    public static AgentErrorHandler of(final String role, final IngestErrors errors, final AtomicCounter counter) {
        return new AgentErrorHandler(role, errors, counter, null);
    }

    /**
     * @param role    the agent's role name.
     * @param errors  the distinct error log.
     * @param counter the agent errors counter.
     * @param fatal   told (with a message) when the agent stops because a shard was left locked, or null.
     * @return the handler.
     */
    public static AgentErrorHandler of(final String role, final IngestErrors errors, final AtomicCounter counter,
        final Consumer<String> fatal) {
        return new AgentErrorHandler(role, errors, counter, fatal);
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
        if (fatal != null && throwable instanceof AgentTerminationException
            && throwable.getCause() instanceof ShardRepairException repair) {
            fatal.accept(role + " stopped: " + repair.getMessage() + " (a restart repairs the shard)");
        }
    }
}
