package io.kvidx.daemon.cli;

import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.List;

/**
 * The options of {@code kvidx daemon} that say where events come from (a picocli mixin): the ZeroMQ endpoints,
 * their replay, sequencing and threads ({@code ZmqSettings}), and the Aeron channels and media driver
 * ({@code AeronSettings}). Unset options leave the context as the config file made it; lists add up.
 */
final class TransportOptions {
    @Option(names = "--replay-timeout-ms", paramLabel = "MS", description = "Wait for each replay reply (default "
        + DaemonConfiguration.REPLAY_TIMEOUT_MS_DEFAULT + ").")
    private Integer replayTimeoutMs;

    @Option(names = "--zmq-handshake-timeout-ms", paramLabel = "MS", description = "Drop and redo a ZeroMQ "
        + "connection whose handshake has not finished by then (default "
        + DaemonConfiguration.ZMQ_HANDSHAKE_TIMEOUT_MS_DEFAULT + ").")
    private Integer zmqHandshakeTimeoutMs;

    @Option(names = "--zmq-io-threads", paramLabel = "N", description = "ZeroMQ I/O threads reading the engines' "
        + "streams (default " + DaemonConfiguration.ZMQ_IO_THREADS_DEFAULT + "; more for many busy engines).")
    private Integer zmqIoThreads;

    @Option(names = "--zmq-ingest-threads", paramLabel = "N", description = "ZeroMQ ingest threads sharing the "
        + "engines by endpoint (default " + DaemonConfiguration.ZMQ_INGEST_THREADS_DEFAULT + ").")
    private Integer zmqIngestThreads;

    @Option(names = "--replay-gap-policy", paramLabel = "clear|keep", description = "When an engine no longer "
        + "buffers the batches a restart or gap missed: clear the pod and rebuild it from the replay, or "
        + "keep its blocks and mark it suspect (default " + DaemonConfiguration.REPLAY_GAP_POLICY_DEFAULT + ").")
    private String replayGapPolicy;

    @Option(names = {"--checkpoint-interval-ms", "--checkpoint-ms"}, paramLabel = "MS", description = "How often each "
        + "publisher's applied sequence is recorded for a restart (default "
        + DaemonConfiguration.CHECKPOINT_INTERVAL_MS_DEFAULT + ").")
    private Long checkpointMs;

    @Option(names = "--zmq-bind", paramLabel = "ENDPOINT", description = "Bind one ZeroMQ SUB socket that engines "
        + "connect to (e.g. tcp://127.0.0.1:5557; llm-d's centralized mode); pods are named by each message's topic "
        + "kv@POD@MODEL, and each topic's sequence is tracked on its own. Anyone who reaches it can write the index: "
        + "bind a private interface and set --zmq-topic-pod.")
    private String zmqBind;

    @Option(names = "--zmq-topic-pod", paramLabel = "PATTERN", description = "Pod id or glob (* and ?) accepted "
        + "from a topic kv@POD@MODEL (the --zmq-bind socket's, and --zmq endpoints with pod '*'); repeatable. Once "
        + "any is given, messages naming other pods are dropped and counted (default: every pod).")
    private List<String> zmqTopicPods = new ArrayList<>();

    @Option(names = "--zmq", paramLabel = "POD[@MODEL]=ENDPOINT",
        description = "vLLM or SGLang ZeroMQ publisher; POD '*' takes pod and model from the topic "
            + "kv@<pod>@<model>.")
    private List<String> zmq = new ArrayList<>();

    @Option(names = "--engine", paramLabel = "POD|ENDPOINT=ENGINE", description = "Event format of a pod's --zmq "
        + "endpoint(s), or of the --zmq endpoint at ENDPOINT: vllm (default) or sglang.")
    private List<String> engine = new ArrayList<>();

    @Option(names = "--replay", paramLabel = "POD=ENDPOINT", description = "Replay (ROUTER) endpoint of a pod.")
    private List<String> replay = new ArrayList<>();

    @Option(names = "--aeron", paramLabel = "CHANNEL",
        description = "Aeron channel for kvidx SBE events (aeron:ipc, aeron:udp?endpoint=127.0.0.1:PORT); starts "
            + "Aeron. UDP must bind loopback unless --aeron-allow-remote.")
    private List<String> aeron = new ArrayList<>();

    @Option(names = "--aeron-allow-remote", negatable = true, description = "Accept --aeron UDP channels on a "
        + "wildcard or non-loopback address: anyone who reaches them can write the index, so set --aeron-pod too "
        + "(default " + DaemonConfiguration.AERON_ALLOW_REMOTE_DEFAULT + ").")
    private Boolean aeronAllowRemote;

    @Option(names = "--aeron-pod", paramLabel = "PATTERN", description = "Pod id or glob (* and ?) whose Aeron "
        + "messages are accepted; repeatable. Once any is given, messages of other pods are dropped and counted "
        + "(default: every pod).")
    private List<String> aeronPods = new ArrayList<>();

    @Option(names = "--aeron-stream-id", paramLabel = "ID", description = "Aeron stream id of the events (default "
        + DaemonConfiguration.AERON_STREAM_ID_DEFAULT + ").")
    private Integer aeronStreamId;

    @Option(names = "--aeron-dir", paramLabel = "D", description = "Aeron directory (default "
        + "/dev/shm/kvidx-aeron-<cell>).")
    private String aeronDir;

    @Option(names = "--embedded-driver", negatable = true, description = "Run an embedded Aeron media driver; "
        + "--no-embedded-driver uses an external one in --aeron-dir (default "
        + DaemonConfiguration.EMBEDDED_DRIVER_DEFAULT + ").")
    private Boolean embeddedDriver;

    @Option(names = "--aeron-term-length", paramLabel = "BYTES", description = "Term buffer length of the embedded "
        + "driver's publications, a power of two (default " + DaemonConfiguration.AERON_TERM_LENGTH_DEFAULT + ").")
    private Integer aeronTermLength;

    /**
     * Sets the ZeroMQ options given, except the endpoints ({@link #applyEndpointsTo}).
     *
     * @param context the daemon's context.
     */
    void applyZmqSettingsTo(final DaemonContext context) {
        if (replayTimeoutMs != null) {
            context.zmq().replayTimeoutMs(replayTimeoutMs);
        }
        if (zmqIoThreads != null) {
            context.zmq().ioThreads(zmqIoThreads);
        }
        if (zmqIngestThreads != null) {
            context.zmq().ingestThreads(zmqIngestThreads);
        }
        if (zmqHandshakeTimeoutMs != null) {
            context.zmq().handshakeTimeoutMs(zmqHandshakeTimeoutMs);
        }
        if (replayGapPolicy != null) {
            context.zmq().replayGapPolicy(replayGapPolicy);
        }
        if (checkpointMs != null) {
            context.zmq().checkpointIntervalMs(checkpointMs);
        }
        if (zmqBind != null) {
            context.zmq().bind(zmqBind);
        }
        zmqTopicPods.forEach(context.zmq()::addTopicPod);
    }

    /**
     * Adds the ZeroMQ endpoints given (then their replay endpoints and engines, which name them) and sets the Aeron
     * options given.
     *
     * @param context the daemon's context.
     * @throws IllegalArgumentException for a {@code --zmq}, {@code --replay} or {@code --engine} of the wrong shape.
     */
    void applyEndpointsTo(final DaemonContext context) {
        for (final String z : zmq) {
            context.zmq().addEndpoint(parseZmq(z));
        }
        for (final String r : replay) {
            final int eq = r.indexOf('=');
            if (eq <= 0 || eq == r.length() - 1) {
                throw new IllegalArgumentException("--replay must be POD=ENDPOINT: " + r);
            }
            context.zmq().replay(r.substring(0, eq), r.substring(eq + 1));
        }
        for (final String e : engine) {
            final int eq = e.lastIndexOf('=');
            if (eq <= 0 || eq == e.length() - 1) {
                throw new IllegalArgumentException("--engine must be POD=ENGINE or ENDPOINT=ENGINE: " + e);
            }
            context.zmq().engine(e.substring(0, eq), e.substring(eq + 1));
        }
        aeron.forEach(context.aeron()::addChannel);
        if (aeronStreamId != null) {
            context.aeron().streamId(aeronStreamId);
        }
        if (aeronDir != null) {
            context.aeron().dir(aeronDir);
        }
        if (embeddedDriver != null) {
            context.aeron().embeddedDriver(embeddedDriver);
        }
        if (aeronTermLength != null) {
            context.aeron().termLength(aeronTermLength);
        }
        if (aeronAllowRemote != null) {
            context.aeron().allowRemote(aeronAllowRemote);
        }
        aeronPods.forEach(context.aeron()::addPod);
    }

    /**
     * @param spec {@code POD[@MODEL]=ENDPOINT}; POD {@code *} takes pod and model from the topic.
     * @return the subscription.
     * @throws IllegalArgumentException when it has another shape.
     */
    static ZmqEndpoint parseZmq(final String spec) {
        final int eq = spec.indexOf('=');
        if (eq <= 0 || eq == spec.length() - 1) {
            throw new IllegalArgumentException("--zmq must be POD[@MODEL]=ENDPOINT: " + spec);
        }
        final String left = spec.substring(0, eq);
        final String endpoint = spec.substring(eq + 1);
        final int at = left.indexOf('@');
        final String pod = at < 0 ? left : left.substring(0, at);
        final String model = at < 0 ? null : left.substring(at + 1);
        final String invalid = "*".equals(pod) ? null : io.kvidx.client.index.PodIds.checkPodId(pod);
        if (invalid != null) {
            throw new IllegalArgumentException("--zmq " + spec + ": " + invalid);
        }
        return new ZmqEndpoint(endpoint, "*".equals(pod) ? null : pod, model == null || model.isEmpty() ? null : model,
            null);
    }
}
