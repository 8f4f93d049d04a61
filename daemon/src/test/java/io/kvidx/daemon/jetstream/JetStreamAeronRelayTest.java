package io.kvidx.daemon.jetstream;

import io.aeron.Aeron;
import io.aeron.Publication;
import io.kvidx.client.publish.KvEventPublisher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.sbe.events.Medium;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The relay's other transport: kvidx SBE events over Aeron IPC (a JVM sidecar's {@link KvEventPublisher}) reach a
 * daemon fed only by the stream, which answers {@code /query} as the relay does through stores, a removal, a
 * cleared pod and a pod going down.
 */
@Timeout(120)
class JetStreamAeronRelayTest {
    @TempDir
    Path dir;

    @Test
    void shouldRelaySbeEventsFromAeron() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final long[] h = base.blockHashes();
        final String aeronDir = "/dev/shm/kvidx-test-aeron-" + UUID.randomUUID();
        try (NatsServer nats = NatsServer.start(dir)) {
            final DaemonContext relayContext = StreamFleet.base(dir, "relay");
            relayContext.aeron().addChannel("aeron:ipc").dir(aeronDir).termLength(1 << 16);
            relayContext.jetstream().url(nats.url()).role("relay");
            try (KvidxDaemon relay = KvidxDaemon.start(relayContext);
                KvidxDaemon consumer = KvidxDaemon.start(StreamFleet.consumer(dir, "consumer", nats.url()));
                Aeron client = Aeron.connect(new Aeron.Context().aeronDirectoryName(aeronDir));
                Publication publication = client.addPublication("aeron:ipc", relayContext.aeron().streamId())) {
                JetStreamRelayTest.await("publication connected", 10_000, publication::isConnected);
                final KvEventPublisher pub = new KvEventPublisher(publication, "sbe-pod", base.model(),
                    new SleepingMillisIdleStrategy(1));
                assertTrue(pub.register());
                assertTrue(pub.blockStored(h, h.length, false, 0, base.tokenIds(), 16, Medium.GPU, null, 0));
                awaitScores(consumer, base, "{sbe-pod={\"0\":400}}");
                assertTrue(pub.blockRemoved(Arrays.copyOfRange(h, 18, 25), 7, Medium.GPU));
                awaitScores(consumer, base, "{sbe-pod={\"0\":288}}");
                assertEquals(StreamFleet.scores(relay.httpPort(), base.tokenIds()),
                    StreamFleet.scores(consumer.httpPort(), base.tokenIds()));
                assertTrue(pub.allBlocksCleared());
                // Cleared: the pod holds nothing (the relay says how that reads), the consumer answers the same.
                JetStreamRelayTest.await("the relay cleared", 20_000, () -> held(relay, base) == 0);
                awaitScores(consumer, base, StreamFleet.scores(relay.httpPort(), base.tokenIds()));
                assertTrue(pub.blockStored(h, 4, false, 0, Arrays.copyOf(base.tokenIds(), 64), 16, Medium.GPU, null,
                    0));
                awaitScores(consumer, base, "{sbe-pod={\"0\":64}}");
                assertTrue(pub.podDown());
                awaitScores(consumer, base, "{}");
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_BAD_MESSAGES));
                assertEquals(0, consumer.counters().value(CounterType.JETSTREAM_LOST));
            }
        }
    }

    private static int held(final KvidxDaemon daemon, final Capture capture) {
        try {
            final String s = StreamFleet.scores(daemon.httpPort(), capture.tokenIds());
            final java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"0\":(\\d+)").matcher(s);
            return m.find() ? Integer.parseInt(m.group(1)) : 0;
        } catch (final Exception ex) {
            throw new AssertionError(ex);
        }
    }

    private static void awaitScores(final KvidxDaemon daemon, final Capture capture, final String expected)
        throws Exception {
        JetStreamRelayTest.await("scores " + expected, 20_000, () -> {
            try {
                return expected.equals(StreamFleet.scores(daemon.httpPort(), capture.tokenIds()));
            } catch (final Exception ex) {
                throw new AssertionError(ex);
            }
        });
    }
}
