package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A daemon fed only from JetStream answers {@code /query} as the relay that subscribes to the engine directly:
 * the Python publisher's random stream (stores, removes, clears over three pods, one named with '.' and ':'),
 * through a relay and a real nats-server, every document queried on both daemons' HTTP APIs. Then the consumer is
 * restarted on its cell: it resumes after its recorded stream sequence (applying nothing twice) and still agrees
 * after more events. And an engine unregistered from the relay's HTTP API is taken down on the consumer too.
 */
@Timeout(180)
class JetStreamConsumerTest {
    private static final String PODS = "pod-a,pod-b,10.0.0.9:8000";

    @TempDir
    Path dir;

    @Test
    void shouldAnswerAsTheDirectlySubscribedDaemonAndResumeAfterARestart() throws Exception {
        PyPeer.requirePython();
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL);
            KvidxDaemon relay = KvidxDaemon.start(StreamFleet.relay(dir, "relay", peer, nats.url()))) {
            StreamFleet.awaitSubscribed(peer, relay);
            final Path docs = dir.resolve("docs.txt");
            List<int[]> documents;
            try (KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()))) {
                peer.command("stream 11 800 800 " + PODS + " " + StreamFleet.MODEL + " " + docs + " "
                    + dir.resolve("log-1.txt"));
                peer.command("stream-wait 60");
                documents = StreamFleet.documents(docs);
                agree(relay, consumer, documents);
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_LOST));
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_BAD_MESSAGES));
                assertEquals(200, StreamFleet.health(consumer.httpPort()));
                JetStreamRelayTest.await("the consumer recorded its sequence", 10_000,
                    () -> consumer.jetstreamAppliedSequence() > 0);
            }
            // The restarted consumer re-attaches to its index and resumes after its recorded sequence.
            try (KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()))) {
                peer.command("stream 12 400 800 " + PODS + " " + StreamFleet.MODEL + " " + dir.resolve("docs-2.txt")
                    + " " + dir.resolve("log-2.txt"));
                peer.command("stream-wait 60");
                documents = StreamFleet.documents(dir.resolve("docs-2.txt"));
                agree(relay, consumer, documents);
                agree(relay, consumer, StreamFleet.documents(docs));
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_LOST));
            }
        }
    }

    private static String jetstreamCounters(final KvidxDaemon daemon) {
        return daemon.counters().describe().lines().filter(l -> l.contains("jetstream") || l.contains("received"))
            .reduce("", (a, b) -> a + b.replace("kvidx ", "") + ", ");
    }

    @Test
    void shouldTakeAPodDownOnEveryConsumerWhenTheRelayUnregistersIt() throws Exception {
        PyPeer.requirePython();
        final io.kvidx.daemon.ingest.vllm.Capture base = io.kvidx.daemon.ingest.vllm.Capture.load(
            "kv_event_base.json");
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv-events");
            KvidxDaemon relay = KvidxDaemon.start(registeringRelay(nats.url()));
            KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()))) {
            final java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
            final String register = "{\"instance_id\":7,\"endpoint\":\"" + peer.endpoint + "\",\"replay_endpoint\":\""
                + peer.replayEndpoint + "\",\"model_name\":\"" + base.model() + "\",\"block_size\":16}";
            assertEquals(201, post(http, relay.httpPort(), "/register", register));
            peer.command("store kv_event_base.json");
            JetStreamRelayTest.await("the consumer answers for instance 7", 20_000, () -> {
                try {
                    peer.command("ping");
                    return StreamFleet.scores(consumer.httpPort(), base.tokenIds()).equals("{7={\"0\":400}}");
                } catch (final Exception ex) {
                    throw new AssertionError(ex);
                }
            });
            assertEquals(200, post(http, relay.httpPort(), "/unregister", "{\"instance_id\":7}"));
            // The relay's takedown is a stream message: every consumer takes the pod down too.
            JetStreamRelayTest.await("the pod down on the consumer", 20_000, () -> {
                try {
                    return StreamFleet.scores(consumer.httpPort(), base.tokenIds()).equals("{}");
                } catch (final Exception ex) {
                    throw new AssertionError(ex);
                }
            });
        }
    }

    /** A relay whose engines register through its HTTP API (Dynamo's contract) rather than its configuration. */
    private DaemonContext registeringRelay(final String url) {
        final DaemonContext c = StreamFleet.base(dir, "relay");
        c.jetstream().url(url).role("relay");
        return c;
    }

    static int post(final java.net.http.HttpClient http, final int port, final String path,
        final String json) throws Exception {
        return http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + port + path))
            .header("Content-Type", "application/json").POST(java.net.http.HttpRequest.BodyPublishers.ofString(json))
            .build(), java.net.http.HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    /** Waits until every document's scores agree (the consumer lags the relay), and checks some are held. */
    static void agree(final KvidxDaemon direct, final KvidxDaemon fromStream, final List<int[]> documents)
        throws Exception {
        final long deadline = System.currentTimeMillis() + 30_000;
        List<String> expected = StreamFleet.answers(direct.httpPort(), documents);
        List<String> actual = StreamFleet.answers(fromStream.httpPort(), documents);
        while (!expected.equals(actual) && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
            expected = StreamFleet.answers(direct.httpPort(), documents);
            actual = StreamFleet.answers(fromStream.httpPort(), documents);
        }
        if (!expected.equals(actual)) {
            assertEquals(expected, actual, "the daemon fed from the stream answers as the directly subscribed one; "
                + "direct: " + jetstreamCounters(direct) + "; from the stream: " + jetstreamCounters(fromStream));
        }
        long held = expected.stream().filter(s -> !"{}".equals(s)).count();
        assertTrue(held >= documents.size() / 4, "most documents are held by some pod: " + expected);
    }
}
