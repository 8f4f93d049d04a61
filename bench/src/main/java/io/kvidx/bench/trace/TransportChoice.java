package io.kvidx.bench.trace;

import io.kvidx.daemon.config.DaemonConfiguration;

import java.nio.file.Path;
import java.util.List;

/**
 * The transport a replay uses ({@code --transport}, {@code --sockets}, {@code --aeron-channel}): which encoder the
 * plan is built with and which {@link EventTransport} each point opens; {@link #INPROC}: none, the plan's vLLM
 * batches go straight to a writer pool in the bench's own process ({@link InprocReplay}).
 *
 * @param kind         {@link #ZMQ}, {@link #AERON} or {@link #INPROC}.
 * @param sockets      ZeroMQ PUB sockets the pods are spread over.
 * @param aeronChannel Aeron channel of the SBE events.
 */
record TransportChoice(String kind, int sockets, String aeronChannel) {
    /** vLLM's transport (the default): msgpack batches on JeroMQ PUB sockets. */
    static final String ZMQ = "zmq";
    /** kvidx's own: SBE messages on an Aeron publication. */
    static final String AERON = "aeron";
    /** No transport: vLLM batches offered to a writer pool in the bench's process (no daemon, no router). */
    static final String INPROC = "inproc";
    /** Transports {@code --transport} takes. */
    static final List<String> KINDS = List.of(ZMQ, AERON, INPROC);
    /** Default Aeron channel. */
    static final String AERON_CHANNEL_DEFAULT = "aeron:ipc";

    TransportChoice {
        if (!KINDS.contains(kind)) {
            throw new IllegalArgumentException("--transport must be one of " + KINDS + ": " + kind);
        }
        if (sockets < 1) {
            throw new IllegalArgumentException("--sockets must be >= 1: " + sockets);
        }
        if (!aeronChannel.startsWith("aeron:ipc") && !aeronChannel.startsWith("aeron:udp?")) {
            throw new IllegalArgumentException("--aeron-channel must be aeron:ipc or aeron:udp?endpoint=HOST:PORT: "
                + aeronChannel);
        }
    }

    /** @return a new encoder of the batches the transport sends. */
    BatchEncoder encoder() {
        return AERON.equals(kind) ? new SbeBatchEncoder() : new VllmEventEncoder();
    }

    /**
     * @param runDir the point's directory (the daemon's Aeron directory goes there).
     * @return the transport, ready for the daemon to start.
     */
    EventTransport open(final Path runDir) {
        if (inproc()) {
            throw new IllegalStateException("--transport inproc has no event transport");
        }
        return AERON.equals(kind) ? new AeronTransport(aeronChannel, runDir.resolve("aeron"),
            DaemonConfiguration.AERON_STREAM_ID_DEFAULT) : new ZmqTransport(sockets);
    }

    /** @return true when the plan is applied in-process, with no transport, daemon or router process. */
    boolean inproc() {
        return INPROC.equals(kind);
    }

    /** @return how the output names it. */
    String describe() {
        if (inproc()) {
            return "vLLM msgpack applied in-process (no transport, no daemon or router process)";
        }
        return AERON.equals(kind) ? "SBE over Aeron (" + aeronChannel + ")" : "vLLM msgpack over ZeroMQ (" + sockets
            + " PUB sockets)";
    }
}
