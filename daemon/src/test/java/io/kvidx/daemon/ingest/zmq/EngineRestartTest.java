package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.daemon.state.PublisherProgress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * An engine that restarted while the daemon was down or disconnected, and whose new sequence passed the one the
 * daemon knew, must not look like the same engine continuing: its previous run's blocks would stay indexed and its
 * new run's first batches would be missed. The replay check (the engine must still hold the batch applied last,
 * byte for byte) finds it; its pod is cleared and resynced from its replay buffer, counted.
 */
@Timeout(60)
class EngineRestartTest {
    private static final String MODEL = ZmqIngestTest.MODEL;
    private static final String POD = "pod-x";

    @TempDir
    Path dir;

    private static VllmPayloads payloads() {
        return new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64);
    }

    private DaemonContext context(final JavaVllmPublisher publisher) {
        final DaemonContext context = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
            .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
        context.zmq().replayTimeoutMs(1_000).checkpointIntervalMs(20)
            .addEndpoint(new ZmqEndpoint(publisher.endpoint(), POD, MODEL, publisher.replayEndpoint()));
        return context;
    }

    private static void storeBase(final KvidxDaemon daemon, final JavaVllmPublisher publisher,
        final IndexReader reader, final Capture base) throws InterruptedException {
        final byte[] ping = payloads().batch(0);
        while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
            publisher.publish(ping);
            Thread.sleep(20);
        }
        publisher.publish(payloads().stored(base.blockHashes(), null, base.tokenIds(), 16, null, null).batch(0));
        await("depth 25", () -> depth(reader, POD, base, null) == 25);
    }

    @Test
    void shouldClearAndResyncAnEngineThatRestartedWhileTheDaemonWasDown() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");
        try (JavaVllmPublisher publisher = new JavaVllmPublisher("kv@" + POD + "@" + MODEL, true)) {
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publisher));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                storeBase(daemon, publisher, reader, base);
            }
            final PublisherProgress.Entry recorded = new PublisherProgress(dir.resolve("default/state")).read()
                .get(publisher.endpoint());

            // While the daemon is down the engine restarts (its cache is empty again), stores the LoRA chain and
            // publishes until its sequence is past the recorded one: a replay from there alone would look complete.
            publisher.restart();
            publisher.publish(payloads().stored(lora.blockHashes(), null, lora.tokenIds(), 16, "Alice", null)
                .batch(0));
            while (publisher.nextSeq() <= recorded.sequence() + 3) {
                publisher.publish(payloads().batch(0));
            }
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publisher));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                await("resynced: the previous run's blocks gone, the new run's first batch applied", () ->
                    daemon.counters().value(CounterType.ENGINE_RESYNCS) == 1 && depth(reader, POD, base, null) == 0
                        && depth(reader, POD, lora, "Alice") == 25);
                assertEquals(0, daemon.counters().value(CounterType.REPLAY_FAILURES));
                assertEquals(0, daemon.counters().value(CounterType.SUSPECT_PODS));
            }
            assertNotEquals(PublisherProgress.NO_FINGERPRINT, recorded.fingerprint(), "the check needs it");
        }
    }

    @Test
    void shouldResyncAnEngineThatNoLongerHoldsTheLastAppliedBatchWithoutWaitingForALiveMessage() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");
        try (JavaVllmPublisher publisher = new JavaVllmPublisher("kv@" + POD + "@" + MODEL, true)) {
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publisher));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                storeBase(daemon, publisher, reader, base);
            }
            // The engine restarts while the daemon is down and publishes less than it had: its sequence is behind
            // the recorded one, and it goes quiet. An engine always keeps its latest batches, so one that no longer
            // holds the recorded batch restarted.
            publisher.restart();
            publisher.publish(payloads().stored(lora.blockHashes(), null, lora.tokenIds(), 16, "Alice", null)
                .batch(0));
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publisher));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                await("resynced before any live message", () -> daemon.counters().value(CounterType.ENGINE_RESYNCS)
                    == 1 && depth(reader, POD, base, null) == 0 && depth(reader, POD, lora, "Alice") == 25);
                assertEquals(0, daemon.counters().value(CounterType.SEQUENCE_RESETS));
            }
        }
    }

    @Test
    void shouldClearAndResyncAnEngineThatRestartedWhileDisconnected() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");
        try (JavaVllmPublisher publisher = new JavaVllmPublisher("kv@" + POD + "@" + MODEL, false);
            KvidxDaemon daemon = KvidxDaemon.start(context(publisher));
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
            storeBase(daemon, publisher, reader, base);
            final long next = publisher.nextSeq();

            // The engine process restarts: the connection drops; the new run's first batches go out before the
            // daemon's socket has reconnected (lost), and its sequence reaches the one the daemon expects next.
            publisher.crash();
            publisher.lose(payloads().stored(lora.blockHashes(), null, lora.tokenIds(), 16, "Alice", null).batch(0));
            while (publisher.nextSeq() < next) {
                publisher.lose(payloads().batch(0));
            }
            // Give the daemon's socket time to reconnect, so that the batch it expects next arrives (no gap): only
            // the disconnect tells the daemon to check.
            Thread.sleep(1_000);
            final long gaps = daemon.counters().value(CounterType.SEQUENCE_GAPS);
            final long deadline = System.currentTimeMillis() + 10_000;
            while (daemon.counters().value(CounterType.ENGINE_RESYNCS) == 0) {
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError("the restarted engine was not found in 10 s");
                }
                publisher.publish(payloads().batch(0));
                Thread.sleep(50);
            }
            await("resynced", () -> depth(reader, POD, base, null) == 0 && depth(reader, POD, lora, "Alice") == 25);
            assertEquals(1, daemon.counters().value(CounterType.ENGINE_RESYNCS));
            assertEquals(gaps, daemon.counters().value(CounterType.SEQUENCE_GAPS), "found by the disconnect check");
            assertEquals(0, daemon.counters().value(CounterType.REPLAY_FAILURES));
        }
    }
}
