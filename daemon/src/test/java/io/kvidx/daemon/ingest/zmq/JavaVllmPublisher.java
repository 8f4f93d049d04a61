package io.kvidx.daemon.ingest.zmq;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A vLLM-style event publisher on JeroMQ: PUB socket with 3-frame messages [topic, seq, payload] and a ROUTER
 * replay socket answering DEALER requests in the old (pre-0.26) or new (0.26+) framing. Replay requests are
 * answered on a thread of its own, like vLLM's.
 */
final class JavaVllmPublisher implements AutoCloseable {
    private final ZContext context = new ZContext(1);
    private ZMQ.Socket pub;
    private final byte[] topic;
    private final boolean newFraming;
    private final List<long[]> seqs = new ArrayList<>();
    private final List<byte[]> buffer = new ArrayList<>();
    private final Thread replayThread;
    private final String pubEndpoint;
    private final String replayEndpoint;
    private volatile boolean running = true;
    private long seq;

    JavaVllmPublisher(final String topic, final boolean newFraming) {
        this(topic, newFraming, "127.0.0.1");
    }

    /** Binds both sockets on {@code host} (any 127.x.y.z works on Linux: one "pod IP" per engine). */
    JavaVllmPublisher(final String topic, final boolean newFraming, final String host) {
        this.topic = topic.getBytes(StandardCharsets.UTF_8);
        this.newFraming = newFraming;
        this.pub = context.createSocket(SocketType.PUB);
        pub.setLinger(0);
        pub.setSndHWM(100_000);
        pub.bind("tcp://" + host + ":*");
        this.pubEndpoint = pub.getLastEndpoint();
        final ZMQ.Socket router = context.createSocket(SocketType.ROUTER);
        router.setLinger(0);
        router.bind("tcp://" + host + ":*");
        this.replayEndpoint = router.getLastEndpoint();
        this.replayThread = Thread.ofPlatform().name("test-replay").start(() -> serveReplay(router));
    }

    String endpoint() {
        return pubEndpoint;
    }

    String replayEndpoint() {
        return replayEndpoint;
    }

    private void serveReplay(final ZMQ.Socket router) {
        final ZMQ.Poller poller = context.createPoller(1);
        poller.register(router, ZMQ.Poller.POLLIN);
        while (running) {
            if (poller.poll(50) <= 0) {
                continue;
            }
            final byte[] identity = router.recv(ZMQ.DONTWAIT);
            if (identity == null) {
                continue;
            }
            final List<byte[]> request = new ArrayList<>();
            while (router.hasReceiveMore()) {
                request.add(router.recv(0));
            }
            if (request.size() != 2 || request.get(1).length != 8) {
                continue;
            }
            final long start = ByteBuffer.wrap(request.get(1)).getLong();
            final List<long[]> s;
            final List<byte[]> b;
            synchronized (this) {
                s = new ArrayList<>(seqs);
                b = new ArrayList<>(buffer);
            }
            for (int i = 0; i < s.size(); i++) {
                if (s.get(i)[0] >= start) {
                    reply(router, identity, s.get(i)[0], b.get(i));
                }
            }
            reply(router, identity, -1L, new byte[0]);
        }
        poller.close();
        router.close();
    }

    private void reply(final ZMQ.Socket router, final byte[] identity, final long s, final byte[] payload) {
        router.sendMore(identity);
        router.sendMore(new byte[0]);
        if (newFraming) {
            router.sendMore(s == -1L ? new byte[0] : topic);
        }
        router.sendMore(ByteBuffer.allocate(8).putLong(s).array());
        router.send(payload, 0);
    }

    /** Publishes a batch with the next sequence number (and keeps it for replay). */
    synchronized long publish(final byte[] payload) {
        final long s = seq++;
        seqs.add(new long[] {s});
        buffer.add(payload);
        pub.sendMore(topic);
        pub.sendMore(ByteBuffer.allocate(8).putLong(s).array());
        pub.send(payload, 0);
        return s;
    }

    /** Buffers a batch for replay under the next sequence number without sending it (a lost message). */
    synchronized long lose(final byte[] payload) {
        final long s = seq++;
        seqs.add(new long[] {s});
        buffer.add(payload);
        return s;
    }

    /** Simulates a publisher restart: sequence back to 0, replay buffer empty. */
    synchronized void restart() {
        seq = 0;
        seqs.clear();
        buffer.clear();
    }

    /**
     * Simulates an engine process restart: the PUB socket goes away (subscribers see the connection drop) and a new
     * one binds the same endpoint; sequence back to 0, replay buffer empty.
     */
    synchronized void crash() {
        pub.close();
        restart();
        pub = context.createSocket(SocketType.PUB);
        pub.setLinger(0);
        pub.setSndHWM(100_000);
        // The old socket's port is released asynchronously: retry the bind for a while.
        final long deadline = System.currentTimeMillis() + 5_000;
        while (true) {
            try {
                pub.bind(pubEndpoint);
                return;
            } catch (final org.zeromq.ZMQException ex) {
                if (System.currentTimeMillis() > deadline) {
                    throw ex;
                }
                Thread.onSpinWait();
            }
        }
    }

    /** Forgets the replay buffer (an engine whose buffer no longer holds old batches). */
    synchronized void dropReplayBuffer() {
        seqs.clear();
        buffer.clear();
    }

    /** Sends raw frames (bad input). */
    synchronized void sendRaw(final byte[]... frames) {
        for (int i = 0; i < frames.length - 1; i++) {
            pub.sendMore(frames[i]);
        }
        pub.send(frames[frames.length - 1], 0);
    }

    /** Sends a message with an explicit sequence number (bypassing the buffer). */
    synchronized void sendWithSeq(final long s, final byte[] payload) {
        pub.sendMore(topic);
        pub.sendMore(ByteBuffer.allocate(8).putLong(s).array());
        pub.send(payload, 0);
    }

    synchronized long nextSeq() {
        return seq;
    }

    @Override
    public void close() throws InterruptedException {
        if (!running) {
            return;
        }
        running = false;
        replayThread.join(2_000);
        context.close();
    }
}
