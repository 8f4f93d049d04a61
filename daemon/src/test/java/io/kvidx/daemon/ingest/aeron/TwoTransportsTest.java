package io.kvidx.daemon.ingest.aeron;

import io.aeron.Aeron;
import io.aeron.Publication;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.publish.KvEventPublisher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.ingest.zmq.JavaVllmPublisherAccess;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
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
 * One pod fed by two transports at once (vLLM over ZeroMQ and SBE over Aeron IPC): both streams land in the same
 * pod slot through its one writer agent; a clear from either transport clears the pod.
 */
@Timeout(60)
class TwoTransportsTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;

    @Test
    void shouldMergeTwoTransportsIntoOnePod() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");
        final String aeronDir = "/dev/shm/kvidx-test-aeron-" + UUID.randomUUID();
        try (JavaVllmPublisherAccess zmq = new JavaVllmPublisherAccess("kv@dual@" + MODEL, true)) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).writers(2).idleStrategy("backoff");
            ctx.aeron().addChannel("aeron:ipc").dir(aeronDir).termLength(1 << 16);
            ctx.zmq().addEndpoint(new ZmqEndpoint(zmq.endpoint(), null, null, zmq.replayEndpoint()));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir));
                Aeron client = Aeron.connect(new Aeron.Context().aeronDirectoryName(aeronDir));
                Publication publication = client.addPublication("aeron:ipc", ctx.aeron().streamId())) {
                await("publication connected", publication::isConnected);
                final KvEventPublisher sbe = new KvEventPublisher(publication, "dual", MODEL,
                    new SleepingMillisIdleStrategy(1));
                final byte[] store = new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
                    .stored(base.blockHashes(), null, base.tokenIds(), 16, null, "GPU").batch(0);
                while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
                    zmq.publish(store);
                    Thread.sleep(20);
                }
                assertTrue(sbe.blockStored(lora.blockHashes(), 25, false, 0, lora.tokenIds(), 16, Medium.GPU,
                    "Alice", 0));
                await("both transports' blocks", () -> depth(reader, "dual", base, null) == 25
                    && depth(reader, "dual", lora, "Alice") == 25);
                int slots = 0;
                for (int s = 0; s < reader.maxPods(); s++) {
                    if (reader.isAlive(s)) {
                        slots++;
                    }
                }
                assertEquals(1, slots, "one pod, one slot");

                assertTrue(sbe.allBlocksCleared());
                await("cleared through Aeron", () -> depth(reader, "dual", base, null) == 0
                    && depth(reader, "dual", lora, "Alice") == 0);
            }
        }
    }
}
