package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.agent.PinnedAgent;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestErrors;
import org.agrona.concurrent.status.AtomicCounter;
import org.zeromq.ZContext;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads of the ZeroMQ contexts of the daemon's ZeroMQ transport ({@code zmqIoCpus}): JeroMQ's I/O threads
 * (which read the engines' sockets and decode their frames) and each context's reaper. Each thread is named
 * {@code kvidx-zmq-io-N} and pins itself, from inside, before JeroMQ's loop runs, to the next of the configured CPUs
 * in turn, so that with CPUs other than the writers' the transport's work stays off the writers' cores. A pin that
 * fails is counted ({@link CounterType#PIN_FAILURES}) and logged once, as an agent's is, and the thread runs unpinned.
 * Threads are daemon threads with the context's uncaught-exception handler, as JeroMQ's own factory makes them.
 *
 * <p><b>Note:</b> thread safe: JeroMQ calls the factory from whichever thread starts a context (the ingest and
 * replay agents' threads); the turn is an atomic counter shared by every context of the transport.
 */
public final class IoThreadPins {
    private static final AtomicInteger NUMBER = new AtomicInteger();

    private final int[] cpus;
    private final IngestErrors errors;
    private final AtomicCounter failures;
    private final AtomicInteger turn = new AtomicInteger();

    /**
     * @param cpus     the CPUs, at least one.
     * @param errors   where a failed pin is logged.
     * @param failures the {@link CounterType#PIN_FAILURES} counter.
     */
    public IoThreadPins(final int[] cpus, final IngestErrors errors, final AtomicCounter failures) {
        if (cpus.length == 0) {
            throw new IllegalArgumentException("I/O thread pins need at least one CPU");
        }
        this.cpus = cpus.clone();
        this.errors = errors;
        this.failures = failures;
    }

    /**
     * Makes the context's threads pin themselves; call before the context's first socket (JeroMQ starts its threads
     * then).
     *
     * @param context a new context.
     * @return the context.
     */
    ZContext install(final ZContext context) {
        final Thread.UncaughtExceptionHandler handler = context.getContext().getUncaughtExceptionHandler();
        context.getContext().setThreadFactor((runnable, jeromqName) -> {
            final String name = "kvidx-zmq-io-" + NUMBER.incrementAndGet();
            final int cpu = cpus[Math.floorMod(turn.getAndIncrement(), cpus.length)];
            final Thread thread = new Thread(() -> {
                PinnedAgent.pinCurrentThread(name + " (" + jeromqName + ")", cpu, errors, failures);
                runnable.run();
            }, name);
            thread.setDaemon(true);
            thread.setUncaughtExceptionHandler(handler);
            return thread;
        });
        return context;
    }
}
