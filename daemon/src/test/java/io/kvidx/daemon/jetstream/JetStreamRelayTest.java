package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.daemon.writer.WriterMessages;
import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.StreamInfo;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Relays publishing a real vLLM publisher's events (the Python publisher, ZeroMQ PUB + replay ROUTER) to a real
 * nats-server: every batch appears in the stream once, in the engine's order, on the subject of its model and pod
 * (both encoded: the pod id holds '.' and ':', the model '/'), with its message id; two relays for the same engine
 * without leases ({@code leaseTtlMs} 0) store each batch once (the second's publishes are acknowledged as duplicates).
 */
@Timeout(120)
class JetStreamRelayTest {
    static final String MODEL = "Qwen/Qwen3-0.6B";
    static final String POD = "10.0.0.7:8000";

    @TempDir
    Path dir;

    static DaemonContext relayContext(final Path dir, final String cell, final PyPeer peer, final String url) {
        final DaemonContext c = new DaemonContext().dir(dir).cell(cell).shardCount(16).capacityBlocks(8192)
            .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff").writers(1);
        c.zmq().replayTimeoutMs(1_000).checkpointIntervalMs(20);
        c.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, peer.replayEndpoint));
        // Without leases: both relays publish every message and the stream's duplicate window stores each once
        // (JetStreamRelayLeaseTest has the default, one relay publishing per pod).
        c.jetstream().url(url).role("relay").leaseTtlMs(0);
        return c;
    }

    static void await(final String what, final long timeoutMs, final BooleanSupplier condition) throws Exception {
        final long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    /** A stored stream message, decoded. */
    record Stored(long streamSequence, String subject, String msgId, int type, String podId, String model,
        long engineSequence) {
    }

    static List<Stored> read(final String url, final String stream) throws Exception {
        final List<Stored> all = new ArrayList<>();
        try (Connection nc = Nats.connect(url)) {
            final JetStreamManagement jsm = nc.jetStreamManagement();
            final StreamInfo info = jsm.getStreamInfo(stream);
            for (long s = info.getStreamState().getFirstSequence(); s <= info.getStreamState().getLastSequence();
                s++) {
                final MessageInfo m = jsm.getMessage(stream, s);
                final StreamEnvelope e = new StreamEnvelope();
                assertEquals(StreamEnvelope.OK, e.wrap(new UnsafeBuffer(m.getData()), 0, m.getData().length),
                    "message " + s);
                all.add(new Stored(s, m.getSubject(), m.getHeaders().getFirst("Nats-Msg-Id"), e.type(), e.podId(),
                    e.model(), e.sequence()));
            }
        }
        return all;
    }

    @Test
    void shouldPublishEveryBatchOnceInOrderFromTwoRelays() throws Exception {
        PyPeer.requirePython();
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@" + POD + "@" + MODEL)) {
            long last;
            try (KvidxDaemon a = KvidxDaemon.start(relayContext(dir, "relay-a", peer, nats.url()));
                KvidxDaemon b = KvidxDaemon.start(relayContext(dir, "relay-b", peer, nats.url()))) {
                // Both subscriptions joined once each has received a batch (the first makes it replay from 0).
                await("both relays subscribed", 20_000, () -> {
                    try {
                        peer.command("ping");
                    } catch (final Exception ex) {
                        throw new AssertionError(ex);
                    }
                    return a.counters().value(CounterType.MESSAGES_RECEIVED) > 0
                        && b.counters().value(CounterType.MESSAGES_RECEIVED) > 0;
                });
                peer.command("store kv_event_base.json");
                peer.command("remove kv_event_base.json 20 25");
                peer.command("clear");
                last = Long.parseLong(peer.command("store kv_event_lora.json").split(" ")[1]);
                final long batches = last + 1;
                await("both relays published every batch", 20_000, () ->
                    a.counters().value(CounterType.JETSTREAM_PUBLISHED) >= batches
                        && b.counters().value(CounterType.JETSTREAM_PUBLISHED) >= batches
                        && countBatches(nats.url()) == batches);
                // Each batch went out from both relays; the stream kept the first copy and acknowledged the second
                // as a duplicate.
                assertTrue(a.counters().value(CounterType.JETSTREAM_PUBLISH_DUPLICATES)
                    + b.counters().value(CounterType.JETSTREAM_PUBLISH_DUPLICATES) >= batches);
            }
            final List<Stored> stored = read(nats.url(), "KVIDX_EVENTS");
            final String subject = "kvidx.events.Qwen~2FQwen3-0~2E6B.10~2E0~2E0~2E7~3A8000";
            long expected = 0;
            final Set<String> ids = new HashSet<>();
            for (final Stored s : stored) {
                assertEquals(subject, s.subject(), s.toString());
                assertEquals(POD, StreamSubjects.decode(s.subject().substring(s.subject().lastIndexOf('.') + 1)));
                assertEquals(POD, s.podId());
                assertEquals(MODEL, s.model());
                assertTrue(ids.add(s.msgId()), "each message id stored once: " + s);
                if (WriterMessages.carriesEvents(s.type())) {
                    assertTrue(WriterMessages.VLLM_BATCH_REPLAYED == s.type()
                        || WriterMessages.VLLM_BATCH == s.type(), s.toString());
                    assertEquals(expected, s.engineSequence(), "batches once each, in the engine's order: " + stored);
                    assertTrue(s.msgId().startsWith(POD + "/" + expected + "/"), s.msgId());
                    expected++;
                } else {
                    assertEquals(-1, s.engineSequence(), s.toString());
                }
            }
            assertEquals(last + 1, expected, "every batch of the engine is in the stream");
        }
    }

    private static long countBatches(final String url) {
        try {
            long n = 0;
            for (final Stored s : read(url, "KVIDX_EVENTS")) {
                if (WriterMessages.carriesEvents(s.type())) {
                    n++;
                }
            }
            return n;
        } catch (final Exception ex) {
            return -1;
        }
    }
}
