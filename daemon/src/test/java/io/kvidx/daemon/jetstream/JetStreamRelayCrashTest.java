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
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A relay process killed with SIGKILL while the Python publisher's stream flows, then started again on its cell: it
 * resumes from the ZeroMQ progress it recorded (never past what the stream acknowledged), the engine replays the rest,
 * the stream drops the copies by message id, and a daemon fed only from the stream ends exact (compared with a daemon
 * subscribed to the engine directly), with nothing lost.
 */
@Timeout(180)
class JetStreamRelayCrashTest {
    private static final String PODS = "pod-a,pod-b,10.0.0.9:8000";

    @TempDir
    Path dir;

    @Test
    void shouldEndExactAfterTheRelayIsKilledMidStream() throws Exception {
        PyPeer.requirePython();
        Process relay = null;
        try (NatsServer nats = NatsServer.start(dir);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "kv@pod-a@" + StreamFleet.MODEL)) {
            final Path config = dir.resolve("relay.yaml");
            Files.writeString(config, "dir: " + dir + "\ncell: relay\nshards: 16\ncapacityBlocks: 16384\n"
                + "podTimeoutMs: 0\nheartbeatIntervalMs: 50\ncheckpointIntervalMs: 20\nzmq:\n  - endpoint: "
                + peer.endpoint + "\n    replay: " + peer.replayEndpoint + "\njetstream:\n  url: " + nats.url()
                + "\n  role: relay\n");
            final Path log = dir.resolve("relay.log");
            relay = StreamFleet.startRelay(config, log);
            final DaemonContext directContext = StreamFleet.base(dir, "direct");
            directContext.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, peer.replayEndpoint));
            try (KvidxDaemon direct = KvidxDaemon.start(directContext);
                KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()))) {
                JetStreamRelayTest.await("the relay publishing", 20_000, () -> {
                    try {
                        peer.command("ping");
                    } catch (final Exception ex) {
                        throw new AssertionError(ex);
                    }
                    return consumer.counters().value(CounterType.JETSTREAM_APPLIED) > 0
                        && direct.counters().value(CounterType.MESSAGES_RECEIVED) > 0;
                });
                final Path docs = dir.resolve("docs.txt");
                peer.command("stream 41 1500 400 " + PODS + " " + StreamFleet.MODEL + " " + docs + " "
                    + dir.resolve("log.txt"));
                // Mid-stream: the consumer has applied some of it (not a fixed time, which a loaded machine stretches).
                JetStreamRelayTest.await("the consumer mid-stream", 20_000,
                    () -> consumer.counters().value(CounterType.JETSTREAM_APPLIED) > 200);
                relay.destroyForcibly();
                assertTrue(relay.waitFor(20, TimeUnit.SECONDS), "relay killed");
                final long appliedAtKill = consumer.counters().value(CounterType.JETSTREAM_APPLIED);
                Thread.sleep(500);
                relay = StreamFleet.startRelay(config, log);
                peer.command("stream-wait 60");
                JetStreamConsumerTest.agree(direct, consumer, StreamFleet.documents(docs));
                assertTrue(appliedAtKill < 1_500, "killed mid-stream: " + appliedAtKill + " applied then");
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_LOST));
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_BAD_MESSAGES));
                assertEquals(200, StreamFleet.health(consumer.httpPort()));
            }
        } finally {
            if (relay != null) {
                ChildProcesses.destroy(relay);
            }
        }
    }
}
