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

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A restarted daemon comes back warm: it re-attaches to the index (same epoch, same slots), restores the pods'
 * engine-hash maps, and, before any live message, replays from each engine what it missed while it was down; an
 * engine that no longer buffers that far gets the gap policy (clear and rebuild).
 */
@Timeout(60)
class DaemonRestartTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";
    private static final String POD = "pod-r";

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

    @Test
    void shouldComeBackWarmAndReplayWhatItMissedBeforeAnyLiveMessage() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final long[] h = base.blockHashes();
        try (JavaVllmPublisher publisher = new JavaVllmPublisher("kv@" + POD + "@" + MODEL, true)) {
            final long epoch;
            final int slot;
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publisher));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                final byte[] ping = payloads().batch(0);
                while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
                    publisher.publish(ping);
                    Thread.sleep(20);
                }
                publisher.publish(payloads().stored(h, null, base.tokenIds(), 16, null, null).batch(0));
                await("depth 25", () -> depth(reader, POD, base, null) == 25);
                epoch = reader.epoch();
                slot = daemon.index().slotOf(POD);
            }
            final PublisherProgress.Entry recorded = new PublisherProgress(dir.resolve("default/state")).read()
                .get(publisher.endpoint());
            assertEquals(publisher.nextSeq() - 1, recorded.sequence(), "a clean stop records the last batch");

            // While the daemon is down the engine drops five blocks; it then stays idle (no live message).
            publisher.publish(payloads().removed(Arrays.copyOfRange(h, 20, 25), null).batch(0));
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publisher));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                assertEquals(1, daemon.counters().value(CounterType.WARM_RESTARTS));
                assertEquals(epoch, reader.epoch(), "re-attached: same file, same epoch");
                assertEquals(slot, daemon.index().slotOf(POD), "same slot");
                await("depth 20 from the startup replay", () -> depth(reader, POD, base, null) == 20);
                assertEquals(0, daemon.counters().value(CounterType.UNKNOWN_REMOVALS),
                    "the engine-hash map came back with the index");
                // The restored map still applies live removals. First make sure the live subscription is joined
                // (an empty batch seen), as a message published before it would be lost to the slow joiner.
                final long received = daemon.counters().value(CounterType.MESSAGES_RECEIVED);
                final byte[] ping = payloads().batch(0);
                while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == received) {
                    publisher.publish(ping);
                    Thread.sleep(20);
                }
                publisher.publish(payloads().removed(Arrays.copyOfRange(h, 10, 20), null).batch(0));
                await("depth 10 live", () -> depth(reader, POD, base, null) == 10);
            }

            // Down again; meanwhile the engine's buffer loses what it published (it holds only newer batches).
            publisher.publish(payloads().cleared().batch(0));
            publisher.dropReplayBuffer();
            publisher.publish(payloads().stored(Arrays.copyOfRange(h, 0, 5), null,
                Arrays.copyOfRange(base.tokenIds(), 0, 80), 16, null, null).batch(0));
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publisher));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                await("gap policy clear: cleared, then rebuilt from the buffer", () ->
                    daemon.counters().value(CounterType.REPLAY_GAP_CLEARS) == 1 && depth(reader, POD, base, null) == 5);
                assertEquals(0, daemon.counters().value(CounterType.REPLAY_FAILURES));
            }
            assertTrue(Files.exists(dir.resolve("default/state/pod-" + slot + ".blocks")));
        }
    }

    @Test
    void shouldBoundAPodThatNeverRemovesBlocks() throws Exception {
        final int max = 200;
        try (JavaVllmPublisher publisher = new JavaVllmPublisher("kv@" + POD + "@" + MODEL, true);
            KvidxDaemon daemon = KvidxDaemon.start(context(publisher).podMaxBlocks(max))) {
            final byte[] ping = payloads().batch(0);
            while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
                publisher.publish(ping);
                Thread.sleep(20);
            }
            // 100 prompts of 10 new blocks, never removed: 1,000 blocks for a bound of 200.
            final java.util.SplittableRandom random = new java.util.SplittableRandom(11);
            for (int prompt = 0; prompt < 100; prompt++) {
                final long[] hashes = new long[10];
                final int[] tokens = new int[160];
                for (int i = 0; i < hashes.length; i++) {
                    hashes[i] = random.nextLong();
                }
                for (int i = 0; i < tokens.length; i++) {
                    tokens[i] = random.nextInt(150_000);
                }
                publisher.publish(payloads().stored(hashes, null, tokens, 16, null, null).batch(0));
            }
            await("all applied", () -> daemon.counters().value(CounterType.EVENTS_APPLIED) == 100);
            assertEquals(800, daemon.counters().value(CounterType.BLOCK_MAP_EVICTIONS));
            assertEquals(max, daemon.index().entryCount(), "the pod's evicted blocks left the index too");
        }
    }
}
