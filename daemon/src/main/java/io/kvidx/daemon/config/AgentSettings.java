package io.kvidx.daemon.config;

import io.kvidx.daemon.agent.PinnedAgent;
import io.kvidx.ffm.PosixNative;

import java.util.Arrays;

import static io.kvidx.daemon.config.DaemonConfiguration.AERON_INGEST_CPU_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.AERON_INGEST_IDLE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.CPU_DEFAULT;
import static io.kvidx.daemon.config.DaemonConfiguration.IDLE_STRATEGY_DEFAULT;
import static io.kvidx.daemon.config.DaemonConfiguration.IDLE_STRATEGY_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.MAINTENANCE_CPU_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.MAINTENANCE_IDLE_DEFAULT;
import static io.kvidx.daemon.config.DaemonConfiguration.MAINTENANCE_IDLE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.WRITER_CPUS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.WRITER_IDLE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_INGEST_CPU_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_INGEST_IDLE_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_IO_CPUS_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_REPLAY_CPU_PROP_NAME;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_REPLAY_IDLE_DEFAULT;
import static io.kvidx.daemon.config.DaemonConfiguration.ZMQ_REPLAY_IDLE_PROP_NAME;

/**
 * Where each of the daemon's agent threads runs and how it idles: a CPU to pin to (or {@link #NO_CPU}) and an idle
 * strategy ({@link IdleStrategies}) for the ZeroMQ ingest agent, the ZeroMQ replay agents, the Aeron ingest agent
 * (also the embedded media driver's idle strategy), each writer agent and the maintenance agent. Each thread pins
 * itself when it starts.
 *
 * <p>Writers take a list of CPUs, one per writer in writer order ({@code writerCpus: [2, 3]}: writer 0 on CPU 2,
 * writer 1 on CPU 3), or none. An agent without its own idle strategy gets {@code idleStrategy}, except the
 * maintenance agent (heartbeat and sweeps, never latency critical), which sleeps by default, and the replay agents
 * (rare, not latency critical), which back off by default.
 *
 * <p><b>Note:</b> part of a {@link DaemonContext}: not thread safe; filled in on one thread, read after
 * {@link #conclude(int)}.
 */
public final class AgentSettings {
    /** No pinning: the thread keeps the CPU mask it inherited. */
    public static final int NO_CPU = PinnedAgent.NO_CPU;
    /** How "no CPU" is written in the YAML file and on the command line. */
    public static final String NONE = "none";
    /** The CPU numbers accepted, for messages. */
    public static final String CPU_RANGE = "[0, " + (PosixNative.MAX_CPUS - 1) + "]";

    private String idleStrategy = IDLE_STRATEGY_DEFAULT;
    private int zmqIngestCpu = CPU_DEFAULT;
    private String zmqIngestIdle;
    private int zmqReplayCpu = CPU_DEFAULT;
    private String zmqReplayIdle = ZMQ_REPLAY_IDLE_DEFAULT;
    private int aeronIngestCpu = CPU_DEFAULT;
    private String aeronIngestIdle;
    private int[] writerCpus = new int[0];
    private int[] zmqIoCpus = new int[0];
    private String writerIdle;
    private int maintenanceCpu = CPU_DEFAULT;
    private String maintenanceIdle = MAINTENANCE_IDLE_DEFAULT;

    /**
     * Canonicalises the idle strategy names, gives agents without one {@code idleStrategy}, checks the CPUs.
     *
     * @param writers number of writers (the length {@code writerCpus} must have unless empty).
     * @throws ConfigException naming the first bad key.
     */
    void conclude(final int writers) {
        idleStrategy = IdleStrategies.canonical(IDLE_STRATEGY_PROP_NAME, idleStrategy);
        zmqIngestIdle = zmqIngestIdle == null ? idleStrategy
            : IdleStrategies.canonical(ZMQ_INGEST_IDLE_PROP_NAME, zmqIngestIdle);
        zmqReplayIdle = IdleStrategies.canonical(ZMQ_REPLAY_IDLE_PROP_NAME, zmqReplayIdle);
        aeronIngestIdle = aeronIngestIdle == null ? idleStrategy
            : IdleStrategies.canonical(AERON_INGEST_IDLE_PROP_NAME, aeronIngestIdle);
        writerIdle = writerIdle == null ? idleStrategy : IdleStrategies.canonical(WRITER_IDLE_PROP_NAME, writerIdle);
        maintenanceIdle = IdleStrategies.canonical(MAINTENANCE_IDLE_PROP_NAME, maintenanceIdle);
        checkCpu(ZMQ_INGEST_CPU_PROP_NAME, zmqIngestCpu);
        checkCpu(ZMQ_REPLAY_CPU_PROP_NAME, zmqReplayCpu);
        checkCpu(AERON_INGEST_CPU_PROP_NAME, aeronIngestCpu);
        checkCpu(MAINTENANCE_CPU_PROP_NAME, maintenanceCpu);
        if (writerCpus.length != 0 && writerCpus.length != writers) {
            throw new ConfigException(WRITER_CPUS_PROP_NAME, "must name one CPU per writer (" + writers
                + ") or be " + NONE + ": " + Arrays.toString(writerCpus));
        }
        checkCpuList(WRITER_CPUS_PROP_NAME, writerCpus);
        checkCpuList(ZMQ_IO_CPUS_PROP_NAME, zmqIoCpus);
    }

    private static void checkCpuList(final String key, final int[] cpus) {
        for (final int cpu : cpus) {
            if (cpu < 0 || cpu >= PosixNative.MAX_CPUS) {
                throw new ConfigException(key, "must be " + NONE + " or a list of CPU numbers in " + CPU_RANGE + ": "
                    + Arrays.toString(cpus));
            }
        }
    }

    private static void checkCpu(final String key, final int cpu) {
        if (cpu != NO_CPU && (cpu < 0 || cpu >= PosixNative.MAX_CPUS)) {
            throw new ConfigException(key, "must be " + NONE + " or a CPU number in " + CPU_RANGE + ": " + cpu);
        }
    }

    /**
     * Parses a CPU as written on the command line or in YAML: {@code none} or a number.
     *
     * @param key  YAML key, for the error.
     * @param text the text.
     * @return the CPU, or {@link #NO_CPU}.
     * @throws ConfigException when it is neither.
     */
    public static int parseCpu(final String key, final String text) {
        if (text == null || NONE.equals(text)) {
            return NO_CPU;
        }
        try {
            return Integer.parseInt(text.trim());
        } catch (final NumberFormatException ex) {
            throw new ConfigException(key, "must be " + NONE + " or a CPU number in " + CPU_RANGE + ": " + text);
        }
    }

    /**
     * @param name idle strategy of the ingest and writer agents that name none of their own.
     * @return this.
     */
    public AgentSettings idleStrategy(final String name) {
        this.idleStrategy = name;
        return this;
    }

    /**
     * @return idle strategy of the agents that name none of their own.
     */
    public String idleStrategy() {
        return idleStrategy;
    }

    /**
     * @param cpu CPU of the ZeroMQ ingest agent, or {@link #NO_CPU}.
     * @return this.
     */
    public AgentSettings zmqIngestCpu(final int cpu) {
        this.zmqIngestCpu = cpu;
        return this;
    }

    /**
     * @return CPU of the ZeroMQ ingest agent, or {@link #NO_CPU}.
     */
    public int zmqIngestCpu() {
        return zmqIngestCpu;
    }

    /**
     * @param name idle strategy of the ZeroMQ ingest agent; null for {@code idleStrategy}.
     * @return this.
     */
    public AgentSettings zmqIngestIdle(final String name) {
        this.zmqIngestIdle = name;
        return this;
    }

    /**
     * @return idle strategy of the ZeroMQ ingest agent (after conclude: never null).
     */
    public String zmqIngestIdle() {
        return zmqIngestIdle;
    }

    /**
     * @param cpu CPU of the ZeroMQ replay agents (one per ZeroMQ ingest agent, all on this CPU), or {@link #NO_CPU}.
     * @return this.
     */
    public AgentSettings zmqReplayCpu(final int cpu) {
        this.zmqReplayCpu = cpu;
        return this;
    }

    /**
     * @return CPU of the ZeroMQ replay agents, or {@link #NO_CPU}.
     */
    public int zmqReplayCpu() {
        return zmqReplayCpu;
    }

    /**
     * @param name idle strategy of the ZeroMQ replay agents.
     * @return this.
     */
    public AgentSettings zmqReplayIdle(final String name) {
        this.zmqReplayIdle = name;
        return this;
    }

    /**
     * @return idle strategy of the ZeroMQ replay agents.
     */
    public String zmqReplayIdle() {
        return zmqReplayIdle;
    }

    /**
     * @param cpu CPU of the Aeron ingest agent, or {@link #NO_CPU}.
     * @return this.
     */
    public AgentSettings aeronIngestCpu(final int cpu) {
        this.aeronIngestCpu = cpu;
        return this;
    }

    /**
     * @return CPU of the Aeron ingest agent, or {@link #NO_CPU}.
     */
    public int aeronIngestCpu() {
        return aeronIngestCpu;
    }

    /**
     * @param name idle strategy of the Aeron ingest agent and the embedded media driver; null for
     *             {@code idleStrategy}.
     * @return this.
     */
    public AgentSettings aeronIngestIdle(final String name) {
        this.aeronIngestIdle = name;
        return this;
    }

    /**
     * @return idle strategy of the Aeron ingest agent (after conclude: never null).
     */
    public String aeronIngestIdle() {
        return aeronIngestIdle;
    }

    /**
     * @param cpus one CPU per writer, in writer order; empty for none.
     * @return this.
     */
    public AgentSettings writerCpus(final int... cpus) {
        this.writerCpus = cpus.clone();
        return this;
    }

    /**
     * @return one CPU per writer, or empty.
     */
    public int[] writerCpus() {
        return writerCpus.clone();
    }

    /**
     * @param cpus the CPUs of JeroMQ's I/O threads (every ZeroMQ context of the daemon's ZeroMQ transport), each
     *             thread pinned to one of them in turn; empty for none. Give CPUs other than the writers' to keep
     *             the decoding of the engines' frames off the writers' cores.
     * @return this.
     */
    public AgentSettings zmqIoCpus(final int... cpus) {
        this.zmqIoCpus = cpus.clone();
        return this;
    }

    /**
     * @return the CPUs of JeroMQ's I/O threads, or empty.
     */
    public int[] zmqIoCpus() {
        return zmqIoCpus.clone();
    }

    /**
     * @param writer a writer's index.
     * @return its CPU, or {@link #NO_CPU}.
     */
    public int writerCpu(final int writer) {
        return writerCpus.length == 0 ? NO_CPU : writerCpus[writer];
    }

    /**
     * @param name idle strategy of every writer agent; null for {@code idleStrategy}.
     * @return this.
     */
    public AgentSettings writerIdle(final String name) {
        this.writerIdle = name;
        return this;
    }

    /**
     * @return idle strategy of the writer agents (after conclude: never null).
     */
    public String writerIdle() {
        return writerIdle;
    }

    /**
     * @param cpu CPU of the maintenance agent, or {@link #NO_CPU}.
     * @return this.
     */
    public AgentSettings maintenanceCpu(final int cpu) {
        this.maintenanceCpu = cpu;
        return this;
    }

    /**
     * @return CPU of the maintenance agent, or {@link #NO_CPU}.
     */
    public int maintenanceCpu() {
        return maintenanceCpu;
    }

    /**
     * @param name idle strategy of the maintenance agent.
     * @return this.
     */
    public AgentSettings maintenanceIdle(final String name) {
        this.maintenanceIdle = name;
        return this;
    }

    /**
     * @return idle strategy of the maintenance agent.
     */
    public String maintenanceIdle() {
        return maintenanceIdle;
    }
}
