package io.kvidx.bench.trace;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.util.ArrayList;
import java.util.List;

/**
 * vLLM's transport: pods spread over a few JeroMQ PUB sockets bound on loopback, three frames per batch (topic
 * {@code kv@<pod>@<model>}, 8-byte big-endian sequence per socket, msgpack batch), no high-water mark (nothing is
 * dropped by the sender; a slow daemon shows as writer lag).
 */
public final class ZmqTransport implements EventTransport {
    private final ZContext zmq = new ZContext(1);
    private final ZMQ.Socket[] pubs;
    private final long[] seq;

    /** @param sockets PUB sockets the pods are spread over. */
    public ZmqTransport(final int sockets) {
        pubs = new ZMQ.Socket[sockets];
        seq = new long[sockets];
        for (int s = 0; s < sockets; s++) {
            pubs[s] = zmq.createSocket(SocketType.PUB);
            pubs[s].setSndHWM(0);
            pubs[s].bind("tcp://127.0.0.1:*");
        }
    }

    @Override
    public List<String> daemonArgs() {
        final List<String> args = new ArrayList<>();
        for (final ZMQ.Socket pub : pubs) {
            args.add("--zmq");
            args.add("*=" + pub.getLastEndpoint());
        }
        return args;
    }

    /** @return the PUB sockets' endpoints ({@code tcp://127.0.0.1:PORT}), socket by socket. */
    public List<String> endpoints() {
        final List<String> endpoints = new ArrayList<>();
        for (final ZMQ.Socket pub : pubs) {
            endpoints.add(pub.getLastEndpoint());
        }
        return endpoints;
    }

    @Override
    public void connect(final long deadlineNs) {
        // The daemon connects to the bound sockets; the warm-up markers show when its subscriptions are up.
    }

    @Override
    public int[] warmUpPods(final int pods) {
        final int[] first = new int[Math.min(pods, pubs.length)];
        for (int s = 0; s < first.length; s++) {
            first[s] = s;
        }
        return first;
    }

    @Override
    public void send(final int pod, final byte[] payload) {
        final int s = pod % pubs.length;
        final long v = seq[s]++;
        // A new array per send: JeroMQ queues the frame without copying it, so a reused array would be overwritten
        // before the I/O thread writes it (seen as sequence gaps and restarts in the daemon).
        final byte[] seqBytes = new byte[8];
        for (int k = 0; k < 8; k++) {
            seqBytes[k] = (byte) (v >>> (56 - 8 * k));
        }
        pubs[s].sendMore("kv@" + BatchEncoder.podId(pod) + "@" + TraceBlocks.MODEL);
        pubs[s].sendMore(seqBytes);
        pubs[s].send(payload, 0);
    }

    @Override
    public void close() {
        zmq.close();
    }
}
