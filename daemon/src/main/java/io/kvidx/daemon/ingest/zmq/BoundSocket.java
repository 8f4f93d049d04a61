package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.PodAllowList;
import io.kvidx.daemon.writer.PodDirectory;
import org.agrona.concurrent.status.AtomicCounter;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The one SUB socket the daemon binds for engines that connect to it ({@code --zmq-bind}, llm-d's centralized
 * mode): vLLM and SGLang publishers connect when their endpoint names a host. Every engine publishes on it, so a
 * message's topic tells whose it is: {@code kv@<pod>@<model>} (llm-d names pods {@code <ip>:<port>}). Each topic
 * gets a {@link Publisher} of its own, without a socket, whose sequence the {@link Sequencer} tracks like any
 * subscribed publisher's (gaps, restarts, duplicates); when the pod is registered ({@code POST /register}) with a
 * replay endpoint, gaps are replayed through it.
 *
 * <p>Trust: anyone who reaches the socket can publish; with a topic pod allow-list ({@code zmqTopicPods}) a topic
 * naming another pod is dropped (counted, logged once per pod id) before it gets a publisher or a pod, and so is
 * a topic whose pod id is not a valid one ({@link io.kvidx.client.index.PodIds}; counted as
 * {@link CounterType#INVALID_POD_IDS}): it is never looked up, registered, or pasted anywhere.
 *
 * <p>Liveness: the socket cannot tell which engine is connected, so a topic's pods are kept alive by their events
 * only (an idle pod is taken down after the pod timeout, its identity freed); a topic whose pods all went down is
 * forgotten, so the topics held stay bounded by the live pods (and by {@link #TOPICS_MAX}).
 *
 * <p><b>Note:</b> owned by the ZeroMQ ingest thread.
 */
final class BoundSocket {
    /** Most topics held at once; messages of further topics are dropped and counted. */
    static final int TOPICS_MAX = 65_536;
    private static final byte[] EMPTY = new byte[0];

    /** Makes and drops the per-topic publishers (the agent's indices, sequencer and checkpoints). */
    interface Publishers {
        Publisher create(ZmqEndpoint config);

        void remove(Publisher p);
    }

    private final String endpoint;
    private final ZMQ.Socket socket;
    private final Function<String, ZmqEndpoint> registered;
    private final Sequencer sequencer;
    private final IngestErrors errors;
    private final AtomicCounter framingErrors;
    private final AtomicCounter invalidPodIds;
    private final Publishers publishers;
    private final PodAllowList allowList;
    private final Map<String, Publisher> byTopic = new HashMap<>();
    private byte[] lastTopic = EMPTY;
    private Publisher last;

    BoundSocket(final String endpoint, final ZContext context, final PodDirectory directory,
        final Function<String, ZmqEndpoint> registered, final Sequencer sequencer, final IngestErrors errors,
        final AtomicCounter framingErrors, final AtomicCounter invalidPodIds, final Publishers publishers,
        final PodAllowList allowList) {
        this.endpoint = endpoint;
        this.invalidPodIds = invalidPodIds;
        this.allowList = allowList;
        this.registered = registered;
        this.sequencer = sequencer;
        this.errors = errors;
        this.framingErrors = framingErrors;
        this.publishers = publishers;
        this.socket = context.createSocket(SocketType.SUB);
        socket.setLinger(0);
        socket.setRcvHWM(100_000);
        socket.subscribe(EMPTY);
        socket.bind(endpoint);
    }

    /**
     * Reads up to 64 messages and hands each to its topic's publisher.
     *
     * @param frames scratch for the frames.
     * @return messages read.
     */
    int poll(final byte[][] frames) {
        int work = 0;
        while (work < 64) {
            final int n = Multipart.receive(socket, frames);
            if (n == 0) {
                break;
            }
            work++;
            if (n != 3 || frames[1].length != 8) {
                framingError("message with " + n + " frames (sequence frame of " + (n > 1 ? frames[1].length : 0)
                    + " bytes), expected [topic, 8-byte seq, payload]");
                continue;
            }
            final Publisher p = publisherOf(frames[0]);
            if (p != null) {
                sequencer.onLive(p, frames[0], ByteBuffer.wrap(frames[1]).getLong(), frames[2]);
            }
        }
        return work;
    }

    private Publisher publisherOf(final byte[] topic) {
        if (last != null && Arrays.equals(topic, lastTopic)) {
            return last;
        }
        if (!TopicPods.allowed(allowList, topic) || !TopicPods.validPod(topic, invalidPodIds, errors,
            endpoint + " (bound)")) {
            return null;
        }
        // SGLang appends "\0sgl-kv-epoch=<epoch>" to the topic: the publisher is what precedes the first NUL.
        int end = 0;
        while (end < topic.length && topic[end] != 0) {
            end++;
        }
        final String key = new String(topic, 0, end, StandardCharsets.UTF_8);
        Publisher p = byTopic.get(key);
        if (p == null) {
            final String[] parts = key.split("@", -1);
            if (parts.length < 2 || !"kv".equals(parts[0]) || parts[1].isEmpty()) {
                framingError("topic '" + key + "' is not kv@<pod>@<model>; engines that connect must name their pod");
                return null;
            }
            if (byTopic.size() >= TOPICS_MAX) {
                framingError("more than " + TOPICS_MAX + " live topics; topic '" + key + "' dropped");
                return null;
            }
            final ZmqEndpoint reg = registered == null ? null : registered.apply(parts[1]);
            p = publishers.create(new ZmqEndpoint(endpoint + " " + key, null, null,
                reg == null ? null : reg.replayEndpoint(), reg == null ? ZmqEndpoint.Engine.VLLM : reg.engine()));
            byTopic.put(key, p);
        }
        lastTopic = topic;
        last = p;
        return p;
    }

    /** Forgets the topics whose pods all went down (their identities were freed): the map stays bounded. */
    void prune() {
        List<String> gone = null;
        for (final Map.Entry<String, Publisher> e : byTopic.entrySet()) {
            final Publisher p = e.getValue();
            if (p.next >= 0 && p.pods.isEmpty() && !p.replaying) {
                if (gone == null) {
                    gone = new ArrayList<>();
                }
                gone.add(e.getKey());
            }
        }
        if (gone != null) {
            for (final String key : gone) {
                final Publisher p = byTopic.remove(key);
                if (p == last) {
                    last = null;
                    lastTopic = EMPTY;
                }
                publishers.remove(p);
            }
        }
    }

    /**
     * @return topics held.
     */
    int topics() {
        return byTopic.size();
    }

    private void framingError(final String what) {
        framingErrors.increment();
        errors.report(CounterType.FRAMING_ERRORS.typeId(), -1, () -> "ZeroMQ " + endpoint + " (bound): " + what
            + "; dropped");
    }

    /** @return the bound SUB socket (the ingest thread's idle wait polls it). */
    ZMQ.Socket socket() {
        return socket;
    }

    void close() {
        socket.close();
    }
}
