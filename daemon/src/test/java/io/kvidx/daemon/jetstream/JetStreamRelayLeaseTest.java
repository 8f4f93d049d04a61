package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.lifecycle.ChildProcesses;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two relays for the same engine (ADR 0024, "Relay lease"): relay A, a process, holds the leases of the engine's
 * three pods and publishes; relay B stands by. B is stopped, the engine restarts (its sequence starts again at 0, its
 * cache is empty) and publishes a new stream, and B starts again on its cell: it sees the restart only in the
 * engine's replay, at another point than A, and its clear has another id than A's. Published, that clear would land
 * after A's copy of the new stream and remove its blocks from every consumer's index (the hazard of ADR 0024); held
 * by the standby, it never reaches the stream. Then A is killed with SIGKILL mid-stream; B takes the leases over once
 * they expire and publishes from where the stream is. A daemon fed only from the stream answers every document's
 * {@code /query} as a daemon subscribed to the engine directly, with nothing lost.
 */
@Timeout(240)
class JetStreamRelayLeaseTest {
    private static final String PODS = "pod-a,pod-b,10.0.0.9:8000";
    /** Short, so that the standby takes over soon after the holder is killed. */
    private static final long LEASE_TTL_MS = 2_000;

    @TempDir
    Path dir;

    /** A relay whose engines register through its HTTP API, with a one-second lease. */
    private DaemonContext registeringRelay(final String url) {
        final DaemonContext c = StreamFleet.base(dir, "relay");
        c.jetstream().url(url).role("relay").leaseTtlMs(1_000);
        return c;
    }

    /**
     * Relay B. Its replays may wait 5 s for each answer (the fleet's 1 s is short for a Python engine on a loaded
     * 2-core machine): B finds the engine's restart only through a replay, and a replay given up after its attempts
     * would leave B waiting for a live batch that this test does not send.
     */
    private DaemonContext standby(final PyPeer peer, final String url) {
        final DaemonContext c = relay("relay-b", peer, url, LEASE_TTL_MS);
        c.zmq().replayTimeoutMs(5_000);
        return c;
    }

    /** What relay B's replays did, for a failure's message. */
    private static String replays(final KvidxDaemon relay) {
        return "replays " + relay.counters().value(CounterType.REPLAYS) + ", failed "
            + relay.counters().value(CounterType.REPLAY_FAILURES) + ", engine resyncs "
            + relay.counters().value(CounterType.ENGINE_RESYNCS) + ", sequence resets "
            + relay.counters().value(CounterType.SEQUENCE_RESETS) + ", messages received "
            + relay.counters().value(CounterType.MESSAGES_RECEIVED);
    }

    private DaemonContext relay(final String cell, final PyPeer peer, final String url, final long ttlMs) {
        final DaemonContext c = StreamFleet.relay(dir, cell, peer, url);
        c.jetstream().leaseTtlMs(ttlMs);
        return c;
    }

    /** Publishes a random stream over the three pods and waits until the engine sent all of it. */
    private Path stream(final PyPeer peer, final int seed, final int batches) throws Exception {
        final Path docs = dir.resolve("docs-" + seed + ".txt");
        peer.command("stream " + seed + " " + batches + " 500 " + PODS + " " + StreamFleet.MODEL + " " + docs + " "
            + dir.resolve("log-" + seed + ".txt"));
        assertTrue(peer.command("stream-wait 60").startsWith("ok done"));
        return docs;
    }

    @Test
    void shouldReleaseTheLeaseOfAPodGoneForGoodAndTakeItAgainWhenItReturns() throws Exception {
        PyPeer.requirePython();
        final io.kvidx.daemon.ingest.vllm.Capture base = io.kvidx.daemon.ingest.vllm.Capture.load(
            "kv_event_base.json");
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv-events");
            KvidxDaemon relay = KvidxDaemon.start(registeringRelay(nats.url()));
            KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()));
            io.nats.client.Connection nc = io.nats.client.Nats.connect(nats.url())) {
            final java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
            final String register = "{\"instance_id\":7,\"endpoint\":\"" + peer.endpoint + "\",\"replay_endpoint\":\""
                + peer.replayEndpoint + "\",\"model_name\":\"" + base.model() + "\",\"block_size\":16}";
            final String held = "{7={\"0\":400}}";
            final io.nats.client.KeyValue leases = nc.keyValue("KVIDX_RELAY_LEASES");
            final String key = StreamSubjects.token(base.model()).replace('~', '=') + "." + StreamSubjects.token("7");
            for (int round = 0; round < 2; round++) {
                // The second round: the pod returns after its lease was released, and the relay takes it again.
                assertEquals(201, JetStreamConsumerTest.post(http, relay.httpPort(), "/register", register));
                peer.command("store kv_event_base.json");
                JetStreamRelayTest.await("the consumer answers for instance 7", 20_000, () -> {
                    try {
                        peer.command("ping");
                        return StreamFleet.scores(consumer.httpPort(), base.tokenIds()).equals(held);
                    } catch (final Exception ex) {
                        throw new AssertionError(ex);
                    }
                });
                assertEquals(1, relay.counters().value(CounterType.JETSTREAM_LEASES_HELD));
                assertTrue(leases.get(key) != null && leases.get(key).getValue() != null, "the key is held");
                if (round == 1) {
                    break;
                }
                assertEquals(200, JetStreamConsumerTest.post(http, relay.httpPort(), "/unregister",
                    "{\"instance_id\":7}"));
                // No message of the pod for RETIRE_TTLS TTLs: its lease is released, not renewed for ever.
                JetStreamRelayTest.await("the lease released", 60_000, () -> {
                    try {
                        final io.nats.client.api.KeyValueEntry e = leases.get(key);
                        return relay.counters().value(CounterType.JETSTREAM_LEASES_HELD) == 0
                            && (e == null || e.getValue() == null);
                    } catch (final Exception ex) {
                        throw new AssertionError(ex);
                    }
                });
            }
            assertEquals(2, relay.counters().value(CounterType.JETSTREAM_LEASE_TAKEOVERS), "taken again on return");
            assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_LOST));
        }
    }

    @Test
    void shouldHandThePodsOverAtOnceWhenTheHolderCloses() throws Exception {
        PyPeer.requirePython();
        // A TTL longer than every wait below: the standby can take the pods over only because the holder released
        // them.
        final long ttlMs = 120_000;
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL)) {
            final DaemonContext directContext = StreamFleet.base(dir, "direct");
            directContext.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, peer.replayEndpoint));
            final List<int[]> documents = new ArrayList<>();
            try (KvidxDaemon direct = KvidxDaemon.start(directContext);
                KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()))) {
                final KvidxDaemon relayA = KvidxDaemon.start(relay("relay-a", peer, nats.url(), ttlMs));
                try (KvidxDaemon relayB = KvidxDaemon.start(relay("relay-b", peer, nats.url(), ttlMs))) {
                    try {
                        StreamFleet.awaitSubscribed(peer, direct);
                        StreamFleet.awaitSubscribed(peer, relayA);
                        StreamFleet.awaitSubscribed(peer, relayB);
                        documents.addAll(StreamFleet.documents(stream(peer, 51, 300)));
                        JetStreamConsumerTest.agree(direct, consumer, documents);
                        assertEquals(3, relayA.counters().value(CounterType.JETSTREAM_LEASES_HELD)
                            + relayB.counters().value(CounterType.JETSTREAM_LEASES_HELD), "one holder per pod");
                    } finally {
                        relayA.close();
                    }
                    JetStreamRelayTest.await("B holding every pod", 20_000,
                        () -> relayB.counters().value(CounterType.JETSTREAM_LEASES_HELD) == 3);
                    documents.addAll(StreamFleet.documents(stream(peer, 52, 300)));
                    JetStreamConsumerTest.agree(direct, consumer, documents);
                }
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_LOST));
            }
        }
    }

    @Test
    void shouldPublishEachPodFromOneRelayThroughAnEngineRestartAndTheHoldersDeath() throws Exception {
        PyPeer.requirePython();
        Process relayA = null;
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL)) {
            final Path config = dir.resolve("relay-a.yaml");
            Files.writeString(config, "dir: " + dir + "\ncell: relay-a\nshards: 16\ncapacityBlocks: 16384\n"
                + "podTimeoutMs: 0\nheartbeatIntervalMs: 50\ncheckpointIntervalMs: 20\nzmq:\n  - endpoint: "
                + peer.endpoint + "\n    replay: " + peer.replayEndpoint + "\njetstream:\n  url: " + nats.url()
                + "\n  role: relay\n  leaseTtlMs: " + LEASE_TTL_MS + "\n");
            final Path log = dir.resolve("relay-a.log");
            relayA = StreamFleet.startRelay(config, log);
            final DaemonContext directContext = StreamFleet.base(dir, "direct");
            directContext.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, peer.replayEndpoint));
            final List<int[]> documents = new ArrayList<>();
            try (KvidxDaemon direct = KvidxDaemon.start(directContext);
                KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()))) {
                JetStreamRelayTest.await("relay A publishing", 20_000, () -> {
                    try {
                        peer.command("ping");
                    } catch (final Exception ex) {
                        throw new AssertionError(ex);
                    }
                    return consumer.counters().value(CounterType.JETSTREAM_APPLIED) > 0
                        && direct.counters().value(CounterType.MESSAGES_RECEIVED) > 0;
                });
                // A alone: it takes the three pods' leases as their first batches arrive.
                documents.addAll(StreamFleet.documents(stream(peer, 41, 300)));
                JetStreamConsumerTest.agree(direct, consumer, documents);
                try (KvidxDaemon relayB = KvidxDaemon.start(standby(peer, nats.url()))) {
                    StreamFleet.awaitSubscribed(peer, relayB);
                    documents.addAll(StreamFleet.documents(stream(peer, 42, 300)));
                    JetStreamConsumerTest.agree(direct, consumer, documents);
                    assertEquals(0, relayB.counters().value(CounterType.JETSTREAM_PUBLISHED), "B stands by");
                    assertEquals(0, relayB.counters().value(CounterType.JETSTREAM_LEASES_HELD));
                }
                // The engine restarts while B is down; B, started again, finds it in the engine's replay.
                peer.command("restart");
                documents.addAll(StreamFleet.documents(stream(peer, 43, 300)));
                JetStreamConsumerTest.agree(direct, consumer, documents);
                try (KvidxDaemon relayB = KvidxDaemon.start(standby(peer, nats.url()))) {
                    // B clears the pods and takes the engine's new run from its replay (what it would publish
                    // without a lease: its clears, then the new run, whose copies the stream already holds from A).
                    try {
                        JetStreamRelayTest.await("B took the new run from the replay", 60_000,
                            () -> relayB.counters().value(CounterType.ENGINE_RESYNCS) > 0
                                && relayB.counters().value(CounterType.MESSAGES_RECEIVED) >= 300);
                    } catch (final AssertionError e) {
                        throw new AssertionError(e.getMessage() + " (" + replays(relayB) + ")", e);
                    }
                    documents.addAll(StreamFleet.documents(stream(peer, 44, 200)));
                    JetStreamConsumerTest.agree(direct, consumer, documents);
                    assertEquals(0, relayB.counters().value(CounterType.JETSTREAM_PUBLISHED), "B stands by");

                    // The holder dies mid-stream; B takes its leases over once they expire.
                    final Path docs = dir.resolve("docs-45.txt");
                    peer.command("stream 45 1000 400 " + PODS + " " + StreamFleet.MODEL + " " + docs + " "
                        + dir.resolve("log-45.txt"));
                    final long applied = consumer.counters().value(CounterType.JETSTREAM_APPLIED);
                    JetStreamRelayTest.await("the consumer mid-stream", 20_000,
                        () -> consumer.counters().value(CounterType.JETSTREAM_APPLIED) > applied + 100);
                    relayA.destroyForcibly();
                    assertTrue(relayA.waitFor(20, TimeUnit.SECONDS), "relay A killed");
                    assertTrue(peer.command("stream-wait 60").startsWith("ok done"));
                    documents.addAll(StreamFleet.documents(docs));
                    JetStreamConsumerTest.agree(direct, consumer, documents);
                    assertEquals(3, relayB.counters().value(CounterType.JETSTREAM_LEASE_TAKEOVERS),
                        "B took the three pods over");
                    assertEquals(3, relayB.counters().value(CounterType.JETSTREAM_LEASES_HELD));
                    assertTrue(relayB.counters().value(CounterType.JETSTREAM_PUBLISHED) > 0);
                }
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_LOST));
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_BAD_MESSAGES));
                assertEquals(200, StreamFleet.health(consumer.httpPort()));
            }
        } finally {
            if (relayA != null) {
                ChildProcesses.destroy(relayA);
            }
        }
    }
}
