package io.kvidx.bench.trace;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * vLLM's transport: pods spread over a few JeroMQ PUB sockets bound on loopback, three frames per batch (topic
 * {@code kv@<pod>@<model>}, 8-byte big-endian sequence per socket, msgpack batch), no high-water mark (nothing is
 * dropped by the sender; a slow daemon shows as writer lag). Made with {@code replay}, each PUB socket also has a
 * replay ROUTER, as a vLLM engine's: it keeps the socket's last {@value #REPLAY_BUFFER} batches (vLLM's buffer) and
 * answers a request {@code ["", seq8]} with {@code ["", topic, seq, payload]} per kept batch from that sequence on,
 * then {@code ["", ff x 8, ""]}, on a thread of its own.
 */
public final class ZmqTransport implements EventTransport {
    /** Batches a replay socket keeps (vLLM's replay buffer). */
    public static final int REPLAY_BUFFER = 10_000;
    private static final byte[] END_OF_REPLAY = {-1, -1, -1, -1, -1, -1, -1, -1};

    private final ZContext zmq = new ZContext(1);
    private final ZMQ.Socket[] pubs;
    private final long[] seq;
    /** Per socket, its last batches (topic, sequence, payload), or null without replay; guarded by each deque. */
    private final List<ArrayDeque<byte[][]>> kept;
    private final ZMQ.Socket[] routers;
    private final Thread replayThread;
    private volatile boolean closing;

    /** @param sockets PUB sockets the pods are spread over. */
    public ZmqTransport(final int sockets) {
        this(sockets, false);
    }

    /**
     * @param sockets PUB sockets the pods are spread over.
     * @param replay  true to give each a replay ROUTER.
     */
    public ZmqTransport(final int sockets, final boolean replay) {
        pubs = new ZMQ.Socket[sockets];
        seq = new long[sockets];
        for (int s = 0; s < sockets; s++) {
            pubs[s] = zmq.createSocket(SocketType.PUB);
            pubs[s].setSndHWM(0);
            pubs[s].bind("tcp://127.0.0.1:*");
        }
        kept = replay ? new ArrayList<>() : null;
        routers = replay ? new ZMQ.Socket[sockets] : null;
        if (replay) {
            for (int s = 0; s < sockets; s++) {
                kept.add(new ArrayDeque<>());
                routers[s] = zmq.createSocket(SocketType.ROUTER);
                routers[s].setSndHWM(0);
                routers[s].bind("tcp://127.0.0.1:*");
            }
            replayThread = new Thread(this::serveReplays, "bench-engine-replay");
            replayThread.setDaemon(true);
            replayThread.start();
        } else {
            replayThread = null;
        }
    }

    /** @return the replay ROUTERs' endpoints, socket by socket (empty without replay). */
    public List<String> replayEndpoints() {
        final List<String> endpoints = new ArrayList<>();
        if (routers != null) {
            for (final ZMQ.Socket router : routers) {
                endpoints.add(router.getLastEndpoint());
            }
        }
        return endpoints;
    }

    private void serveReplays() {
        try (ZMQ.Poller poller = zmq.createPoller(routers.length)) {
            for (final ZMQ.Socket router : routers) {
                poller.register(router, ZMQ.Poller.POLLIN);
            }
            while (!closing) {
                if (poller.poll(100) <= 0) {
                    continue;
                }
                for (int s = 0; s < routers.length; s++) {
                    if (poller.pollin(s)) {
                        answer(s);
                    }
                }
            }
        } catch (final org.zeromq.ZMQException ex) {
            if (!closing) {
                throw ex;
            }
        }
    }

    /** Answers one replay request on socket {@code s}: every kept batch from the asked sequence, then the end. */
    private void answer(final int s) {
        final ZMQ.Socket router = routers[s];
        final byte[] identity = router.recv(ZMQ.DONTWAIT);
        if (identity == null) {
            return;
        }
        final List<byte[]> request = new ArrayList<>();
        while (router.hasReceiveMore()) {
            request.add(router.recv());
        }
        final byte[] from = request.isEmpty() ? null : request.get(request.size() - 1);
        if (from == null || from.length != 8) {
            return;
        }
        final long start = java.nio.ByteBuffer.wrap(from).getLong();
        final List<byte[][]> batches = new ArrayList<>();
        final ArrayDeque<byte[][]> buffer = kept.get(s);
        synchronized (buffer) {
            for (final byte[][] b : buffer) {
                if (java.nio.ByteBuffer.wrap(b[1]).getLong() >= start) {
                    batches.add(b);
                }
            }
        }
        for (final byte[][] b : batches) {
            router.sendMore(identity);
            router.sendMore(new byte[0]);
            router.sendMore(b[0]);
            router.sendMore(b[1]);
            router.send(b[2], 0);
        }
        router.sendMore(identity);
        router.sendMore(new byte[0]);
        router.sendMore(END_OF_REPLAY);
        router.send(new byte[0], 0);
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
        final String topic = "kv@" + BatchEncoder.podId(pod) + "@" + TraceBlocks.MODEL;
        pubs[s].sendMore(topic);
        pubs[s].sendMore(seqBytes);
        pubs[s].send(payload, 0);
        if (kept != null) {
            final ArrayDeque<byte[][]> buffer = kept.get(s);
            synchronized (buffer) {
                buffer.addLast(new byte[][] {topic.getBytes(java.nio.charset.StandardCharsets.UTF_8),
                    seqBytes.clone(), payload});
                if (buffer.size() > REPLAY_BUFFER) {
                    buffer.removeFirst();
                }
            }
        }
    }

    @Override
    public void close() {
        closing = true;
        if (replayThread != null) {
            try {
                replayThread.join(5_000);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
        zmq.close();
    }
}
