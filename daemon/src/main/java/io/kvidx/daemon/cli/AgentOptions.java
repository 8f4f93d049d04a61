package io.kvidx.daemon.cli;

import io.kvidx.daemon.config.AgentSettings;
import io.kvidx.daemon.config.ConfigException;
import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.IdleStrategies;
import picocli.CommandLine.Option;

import java.util.List;

import static io.kvidx.daemon.config.AgentSettings.NONE;
import static io.kvidx.daemon.config.AgentSettings.parseCpu;

/**
 * The options of {@code kvidx daemon} that place its agent threads (a picocli mixin): each agent's CPU and idle
 * strategy, the keys of {@link AgentSettings}. Unset options leave the context as the config file made it.
 */
final class AgentOptions {
    private static final String IDLE = "IDLE";
    private static final String IDLE_HELP = " Idle strategies: " + IdleStrategies.ACCEPTED + ".";
    private static final String CPU = "CPU|none";

    @Option(names = {"--idle-strategy", "--idle"}, paramLabel = IDLE, description = "Idle strategy of the ingest and "
        + "writer agents that name none of their own (default " + DaemonConfiguration.IDLE_STRATEGY_DEFAULT + ")."
        + IDLE_HELP)
    private String idle;

    @Option(names = "--zmq-ingest-cpu", paramLabel = CPU, description = "CPU the ZeroMQ ingest thread pins itself to "
        + "(default " + NONE + ").")
    private String zmqIngestCpu;

    @Option(names = "--zmq-ingest-idle", paramLabel = IDLE, description = "Idle strategy of the ZeroMQ ingest agent "
        + "(default: --idle-strategy).")
    private String zmqIngestIdle;

    @Option(names = "--zmq-replay-cpu", paramLabel = CPU, description = "CPU the ZeroMQ replay threads (one per "
        + "ingest thread) pin themselves to (default " + NONE + ").")
    private String zmqReplayCpu;

    @Option(names = "--zmq-replay-idle", paramLabel = IDLE, description = "Idle strategy of the ZeroMQ replay agents "
        + "(default " + DaemonConfiguration.ZMQ_REPLAY_IDLE_DEFAULT + ").")
    private String zmqReplayIdle;

    @Option(names = "--zmq-io-cpus", paramLabel = "CPU,...|none", split = ",", description = "CPUs of JeroMQ's I/O "
        + "threads (--zmq-io-threads per ingest thread, and one per replay thread), each pinned to one in turn "
        + "(default " + NONE + "): CPUs other than the writers' keep frame decoding off their cores.")
    private List<String> zmqIoCpus;

    @Option(names = "--aeron-ingest-cpu", paramLabel = CPU, description = "CPU the Aeron ingest thread pins itself "
        + "to (default " + NONE + ").")
    private String aeronIngestCpu;

    @Option(names = "--aeron-ingest-idle", paramLabel = IDLE, description = "Idle strategy of the Aeron ingest agent "
        + "and the embedded media driver (default: --idle-strategy).")
    private String aeronIngestIdle;

    @Option(names = "--writer-cpus", paramLabel = "CPU,...|none", split = ",", description = "CPUs of the writer "
        + "threads, one per writer in writer order (default " + NONE + ").")
    private List<String> writerCpus;

    @Option(names = "--writer-idle", paramLabel = IDLE, description = "Idle strategy of the writer agents (default: "
        + "--idle-strategy).")
    private String writerIdle;

    @Option(names = "--maintenance-cpu", paramLabel = CPU, description = "CPU the maintenance thread (index "
        + "heartbeat, sweeps) pins itself to (default " + NONE + ").")
    private String maintenanceCpu;

    @Option(names = "--maintenance-idle", paramLabel = IDLE, description = "Idle strategy of the maintenance agent "
        + "(default " + DaemonConfiguration.MAINTENANCE_IDLE_DEFAULT + ").")
    private String maintenanceIdle;

    /**
     * Sets the options given in the context's agent settings.
     *
     * @param context the daemon's context.
     * @throws ConfigException naming the key of a CPU that is neither {@code none} nor a number.
     */
    void applyTo(final DaemonContext context) {
        final AgentSettings agents = context.agents();
        if (idle != null) {
            agents.idleStrategy(idle);
        }
        if (zmqIngestCpu != null) {
            agents.zmqIngestCpu(parseCpu(DaemonConfiguration.ZMQ_INGEST_CPU_PROP_NAME, zmqIngestCpu));
        }
        if (zmqIngestIdle != null) {
            agents.zmqIngestIdle(zmqIngestIdle);
        }
        if (zmqReplayCpu != null) {
            agents.zmqReplayCpu(parseCpu(DaemonConfiguration.ZMQ_REPLAY_CPU_PROP_NAME, zmqReplayCpu));
        }
        if (zmqReplayIdle != null) {
            agents.zmqReplayIdle(zmqReplayIdle);
        }
        if (zmqIoCpus != null) {
            final boolean none = zmqIoCpus.size() == 1 && NONE.equals(zmqIoCpus.get(0));
            agents.zmqIoCpus(none ? new int[0] : zmqIoCpus.stream()
                .mapToInt(c -> cpuOfList(DaemonConfiguration.ZMQ_IO_CPUS_PROP_NAME, c)).toArray());
        }
        if (aeronIngestCpu != null) {
            agents.aeronIngestCpu(parseCpu(DaemonConfiguration.AERON_INGEST_CPU_PROP_NAME, aeronIngestCpu));
        }
        if (aeronIngestIdle != null) {
            agents.aeronIngestIdle(aeronIngestIdle);
        }
        if (writerCpus != null) {
            final boolean none = writerCpus.size() == 1 && NONE.equals(writerCpus.get(0));
            agents.writerCpus(none ? new int[0] : writerCpus.stream()
                .mapToInt(c -> cpuOfList(DaemonConfiguration.WRITER_CPUS_PROP_NAME, c)).toArray());
        }
        if (writerIdle != null) {
            agents.writerIdle(writerIdle);
        }
        if (maintenanceCpu != null) {
            agents.maintenanceCpu(parseCpu(DaemonConfiguration.MAINTENANCE_CPU_PROP_NAME, maintenanceCpu));
        }
        if (maintenanceIdle != null) {
            agents.maintenanceIdle(maintenanceIdle);
        }
    }

    private static int cpuOfList(final String key, final String text) {
        int cpu;
        try {
            cpu = parseCpu(key, text);
        } catch (final ConfigException ex) {
            cpu = -1;
        }
        if (cpu < 0) {
            throw new ConfigException(key, "must be " + NONE + " or a list of CPU numbers in "
                + AgentSettings.CPU_RANGE + ": " + text);
        }
        return cpu;
    }
}
