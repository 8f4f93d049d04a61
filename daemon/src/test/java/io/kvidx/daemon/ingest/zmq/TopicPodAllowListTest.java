package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTestAccess.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTestAccess.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ZeroMQ topic pod allow-list ({@code zmqTopicPods}): pods named by topics {@code kv@<pod>@<model>}, on a
 * subscribed endpoint without a configured pod and on the bound SUB socket, are indexed when the list matches them
 * and otherwise dropped and counted (never registered); an endpoint with a configured pod is not affected.
 */
@Timeout(60)
class TopicPodAllowListTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;

    @Test
    void shouldIndexAllowedTopicPodsAndDropAndCountOthers() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final long[] h = base.blockHashes();
        final VllmPayloads payloads = new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64);
        final byte[] ping = payloads.batch(0);
        final byte[] store = new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
            .stored(h, null, base.tokenIds(), 16, null, "GPU").batch(0);
        final int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        final String bind = "tcp://127.0.0.1:" + port;
        try (JavaVllmPublisher allowed = new JavaVllmPublisher("kv@pod-a@" + MODEL, true);
            JavaVllmPublisher refused = new JavaVllmPublisher("kv@evil@" + MODEL, true);
            JavaVllmPublisher fixed = new JavaVllmPublisher("kv@whatever@" + MODEL, true);
            ZContext zmq = new ZContext(1)) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.zmq().bind(bind).addTopicPod("pod-*").addTopicPod("10.0.0.?:8000")
                .addEndpoint(new ZmqEndpoint(allowed.endpoint(), null, null, allowed.replayEndpoint()))
                .addEndpoint(new ZmqEndpoint(refused.endpoint(), null, null, refused.replayEndpoint()))
                .addEndpoint(new ZmqEndpoint(fixed.endpoint(), "configured", MODEL, fixed.replayEndpoint()));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir));
                ZMQ.Socket pub = zmq.createSocket(SocketType.PUB)) {
                pub.setLinger(0);
                pub.connect(bind);
                // Slow joiners: ping until messages flow (refused pings count as refusals).
                await("subscriptions connected", () -> {
                    allowed.publish(ping);
                    refused.publish(ping);
                    fixed.publish(ping);
                    return daemon.counters().value(CounterType.MESSAGES_RECEIVED) >= 3
                        && daemon.counters().value(CounterType.PODS_NOT_ALLOWED) >= 1;
                });
                final long refusedBefore = daemon.counters().value(CounterType.PODS_NOT_ALLOWED);
                allowed.publish(store);
                refused.publish(store);
                fixed.publish(store);
                // A store lost to a slow joiner shows as a gap at the next ping and is replayed.
                awaitOr(daemon, "allowed and configured pods indexed", () -> {
                    allowed.publish(ping);
                    refused.publish(ping);
                    fixed.publish(ping);
                    return depth(reader, "pod-a", base, null) == 25 && depth(reader, "configured", base, null) == 25;
                },
                    () -> depth(reader, "pod-a", base, null) + " " + depth(reader, "configured", base, null));
                await("the stranger's batch counted",
                    () -> daemon.counters().value(CounterType.PODS_NOT_ALLOWED) >= refusedBefore + 1);
                assertEquals(0, depth(reader, "evil", base, null));
                assertEquals(0, depth(reader, "whatever", base, null));

                // The bound socket: an engine that connects names its pod by topic; the list applies there too.
                // One sequence per topic, as the daemon keeps them: a counter shared by both topics would make every
                // message a gap for each (the pod cleared each time), and the depth a race with the writer.
                final long[] seq = {0, 0};
                await("bound socket: allowed llm-d pod indexed", () -> {
                    send(pub, "kv@10.0.0.2:8000@" + MODEL, seq[0]++, store);
                    send(pub, "kv@10.0.0.12:8000@" + MODEL, seq[1]++, store);
                    return depth(reader, "10.0.0.2:8000", base, null) == 25;
                });
                await("bound socket: stranger counted", () -> {
                    final long before = daemon.counters().value(CounterType.PODS_NOT_ALLOWED);
                    send(pub, "kv@10.0.0.12:8000@" + MODEL, seq[1]++, store);
                    return daemon.counters().value(CounterType.PODS_NOT_ALLOWED) > before;
                });
                assertEquals(0, depth(reader, "10.0.0.12:8000", base, null));
                assertEquals(3, daemon.counters().value(CounterType.PODS_ALIVE), "pod-a, configured, 10.0.0.2:8000");
                assertEquals(0, daemon.counters().value(CounterType.FRAMING_ERRORS));
                final String log = daemon.errors().dump();
                assertTrue(log.contains("ZeroMQ: pod evil is not in zmqTopicPods"), log);
                assertTrue(log.contains("ZeroMQ: pod 10.0.0.12:8000 is not in zmqTopicPods"), log);
            }
        }
    }

    private static void awaitOr(final KvidxDaemon daemon, final String what,
        final java.util.function.BooleanSupplier condition, final java.util.function.Supplier<String> state)
        throws InterruptedException {
        try {
            await(what, condition);
        } catch (final AssertionError ex) {
            throw new AssertionError(what + ": " + state.get() + "\n" + daemon.counters().describe() + "\n"
                + daemon.errors().dump(), ex);
        }
    }

    private static void send(final ZMQ.Socket pub, final String topic, final long seq, final byte[] payload) {
        pub.sendMore(topic.getBytes(StandardCharsets.UTF_8));
        pub.sendMore(ByteBuffer.allocate(8).putLong(seq).array());
        pub.send(payload);
    }
}
