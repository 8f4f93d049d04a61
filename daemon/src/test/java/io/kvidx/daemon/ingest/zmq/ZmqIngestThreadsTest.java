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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --zmq-ingest-threads}: the engines are split between ingest agents by endpoint, each on a thread of its
 * own; every agent's checkpoints land in the one progress file (none overwrites another's publishers), so a
 * restarted daemon, with the same number of agents or another, replays each engine from where it was.
 */
@Timeout(90)
class ZmqIngestThreadsTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";
    private static final int AGENTS = 2;

    @TempDir
    Path dir;

    private static VllmPayloads payloads() {
        return new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64);
    }

    private DaemonContext context(final List<JavaVllmPublisher> publishers, final int agents) {
        final DaemonContext context = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
            .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
        context.zmq().replayTimeoutMs(1_000).checkpointIntervalMs(20).ingestThreads(agents);
        for (int i = 0; i < publishers.size(); i++) {
            context.zmq().addEndpoint(new ZmqEndpoint(publishers.get(i).endpoint(), pod(i), MODEL,
                publishers.get(i).replayEndpoint()));
        }
        return context;
    }

    private static String pod(final int i) {
        return "pod-t" + i;
    }

    @Test
    void shouldSplitTheEnginesBetweenAgentsAndRecoverEachFromTheSharedProgress() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final long[] h = base.blockHashes();
        final List<JavaVllmPublisher> publishers = new ArrayList<>();
        try {
            // Engines until both agents have at least one (the split is a hash of the endpoint).
            final boolean[] used = new boolean[AGENTS];
            while (publishers.size() < 3 || !(used[0] && used[1])) {
                final int i = publishers.size();
                final JavaVllmPublisher p = new JavaVllmPublisher("kv@" + pod(i) + "@" + MODEL, true);
                publishers.add(p);
                used[ZmqIngestAgent.partOf(p.endpoint(), AGENTS)] = true;
                assertTrue(publishers.size() <= 16, "16 endpoints all hashed to one agent");
            }
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publishers, AGENTS));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                for (int i = 0; i < publishers.size(); i++) {
                    publishers.get(i).publish(payloads().stored(h, null, base.tokenIds(), 16, null, null).batch(0));
                }
                final byte[] ping = payloads().batch(0);
                for (int i = 0; i < publishers.size(); i++) {
                    final String pod = pod(i);
                    final JavaVllmPublisher p = publishers.get(i);
                    // A batch published before the subscription joined is lost to the slow joiner; the next one
                    // makes the daemon replay from the engine's start.
                    await(pod + " at depth 25", () -> {
                        if (depth(reader, pod, base, null) == 25) {
                            return true;
                        }
                        p.publish(ping);
                        return false;
                    });
                }
                assertTrue(Thread.getAllStackTraces().keySet().stream().map(Thread::getName).toList()
                    .containsAll(List.of("kvidx-zmq-ingest-0", "kvidx-zmq-ingest-1")), "one thread per agent");
                // Both agents checkpoint into the one file: every engine's last batch is recorded while running.
                final PublisherProgress progress = new PublisherProgress(dir.resolve("default/state"));
                await("every publisher recorded", () -> {
                    final Map<String, PublisherProgress.Entry> recorded = progress.read();
                    for (final JavaVllmPublisher p : publishers) {
                        final PublisherProgress.Entry e = recorded.get(p.endpoint());
                        if (e == null || e.sequence() != p.nextSeq() - 1) {
                            return false;
                        }
                    }
                    return true;
                });
                assertEquals(0, daemon.counters().value(CounterType.SEQUENCE_GAPS));
            }

            // Down: every engine drops five blocks; the restarted daemon (same agents) replays each from its record.
            for (final JavaVllmPublisher p : publishers) {
                p.publish(payloads().removed(Arrays.copyOfRange(h, 20, 25), null).batch(0));
            }
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publishers, AGENTS));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                for (int i = 0; i < publishers.size(); i++) {
                    final String pod = pod(i);
                    await(pod + " at depth 20 from its replay", () -> depth(reader, pod, base, null) == 20);
                }
                assertEquals(0, daemon.counters().value(CounterType.UNKNOWN_REMOVALS));
            }

            // Down again; restarted with one agent: the file the two agents left serves it as well.
            for (final JavaVllmPublisher p : publishers) {
                p.publish(payloads().removed(Arrays.copyOfRange(h, 15, 20), null).batch(0));
            }
            try (KvidxDaemon daemon = KvidxDaemon.start(context(publishers, 1));
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                for (int i = 0; i < publishers.size(); i++) {
                    final String pod = pod(i);
                    await(pod + " at depth 15 with one agent", () -> depth(reader, pod, base, null) == 15);
                }
                assertEquals(0, daemon.counters().value(CounterType.REPLAY_GAP_CLEARS),
                    "every engine was replayed from its record, none cleared for a gap");
            }
        } finally {
            for (final JavaVllmPublisher p : publishers) {
                p.close();
            }
        }
    }
}
