package io.kvidx.daemon.ingest.aeron;

import io.aeron.Aeron;
import io.aeron.Publication;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
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
import java.util.UUID;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTestAccess.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTestAccess.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Aeron pod allow-list ({@code aeron.pods}): over a real embedded media driver, a publisher whose pod id the list
 * does not match is dropped and counted (never registered, its blocks never indexed, its PodDown never takes a pod
 * down) while allowed pods on the same stream are indexed.
 */
@Timeout(60)
class AeronPodAllowListTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;

    @Test
    void shouldDropAndCountPodsOutsideTheAllowListAndIndexAllowedOnes() throws Exception {
        final String aeronDir = "/dev/shm/kvidx-test-aeron-" + UUID.randomUUID();
        final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192).podTimeoutMs(0)
            .idleStrategy("backoff");
        ctx.aeron().addChannel("aeron:ipc").dir(aeronDir).termLength(1 << 16).addPod("pod-a").addPod("rack1-*");
        final Capture base = Capture.load("kv_event_base.json");
        final long[] h = base.blockHashes();
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir));
            Aeron client = Aeron.connect(new Aeron.Context().aeronDirectoryName(aeronDir));
            Publication publication = client.addPublication("aeron:ipc", ctx.aeron().streamId())) {
            await("publication connected", publication::isConnected);
            final KvEventPublisher podA = publisher(publication, "pod-a");
            final KvEventPublisher rack = publisher(publication, "rack1-7");
            final KvEventPublisher stranger = publisher(publication, "evil");
            final KvEventPublisher lookalike = publisher(publication, "pod-a2");
            for (final KvEventPublisher p : new KvEventPublisher[] {podA, rack, stranger, lookalike}) {
                assertTrue(p.register());
                assertTrue(p.blockStored(h, h.length, false, 0, base.tokenIds(), 16, Medium.GPU, null, 0));
            }
            // Interleaved with allowed pods (the last-pod cache does not let a stranger through); its PodDown is
            // refused like the rest.
            assertTrue(podA.blockStored(h, 10, false, 0, base.tokenIds(), 16, Medium.GPU, null, 0));
            assertTrue(stranger.podDown());
            await("allowed pods indexed", () -> depth(reader, "pod-a", base, null) == 25
                && depth(reader, "rack1-7", base, null) == 25);
            await("refusals counted", () -> daemon.counters().value(CounterType.PODS_NOT_ALLOWED) == 5);
            assertEquals(0, depth(reader, "evil", base, null));
            assertEquals(0, depth(reader, "pod-a2", base, null));
            assertEquals(2, daemon.counters().value(CounterType.PODS_ALIVE));
            assertEquals(0, daemon.counters().value(CounterType.DECODE_ERRORS));
            assertEquals(0, daemon.counters().value(CounterType.PODS_REJECTED));
        }
    }

    private static KvEventPublisher publisher(final Publication publication, final String pod) {
        return new KvEventPublisher(publication, pod, MODEL, new SleepingMillisIdleStrategy(1));
    }
}
