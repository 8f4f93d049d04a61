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
import io.kvidx.sbe.events.BlockStoredEncoder;
import io.kvidx.sbe.events.BooleanType;
import io.kvidx.sbe.events.Medium;
import io.kvidx.sbe.events.MessageHeaderEncoder;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.DatagramSocket;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.UUID;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTestAccess.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTestAccess.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SBE events over a real embedded Aeron media driver (IPC and UDP on 127.0.0.1) from {@link KvEventPublisher} into
 * the daemon's index; bad SBE input dropped and counted; counters visible in the driver's CnC file.
 */
@Timeout(60)
class AeronIngestTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;

    private static int freeUdpPort() throws Exception {
        try (DatagramSocket s = new DatagramSocket(0)) {
            return s.getLocalPort();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ipc", "udp"})
    void shouldIndexSbeEventsAndDropBadOnes(final String transport) throws Exception {
        final String channel = "ipc".equals(transport) ? "aeron:ipc"
            : "aeron:udp?endpoint=127.0.0.1:" + freeUdpPort();
        final String aeronDir = "/dev/shm/kvidx-test-aeron-" + UUID.randomUUID();
        final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192).podTimeoutMs(0)
            .idleStrategy("backoff");
        ctx.aeron().addChannel(channel).dir(aeronDir).termLength(1 << 16);
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");
        final long[] h = base.blockHashes();
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir));
            Aeron client = Aeron.connect(new Aeron.Context().aeronDirectoryName(aeronDir));
            Publication publication = client.addPublication(channel, ctx.aeron().streamId())) {
            await("publication connected", publication::isConnected);
            final KvEventPublisher pub = new KvEventPublisher(publication, "sbe-pod", MODEL,
                new SleepingMillisIdleStrategy(1));
            assertTrue(pub.register());
            assertTrue(pub.blockStored(h, h.length, false, 0, base.tokenIds(), 16, Medium.GPU, null, 0));
            assertTrue(pub.blockStored(lora.blockHashes(), 25, false, 0, lora.tokenIds(), 16, Medium.GPU, "Alice",
                0));
            await("depth 25", () -> depth(reader, "sbe-pod", base, null) == 25
                && depth(reader, "sbe-pod", lora, "Alice") == 25);

            assertTrue(pub.blockRemoved(Arrays.copyOfRange(h, 18, 25), 7, Medium.GPU));
            await("depth 18", () -> depth(reader, "sbe-pod", base, null) == 18);

            // Bad input: wrong schema id, wrong version, absurd group size, truncated; then a good one. The bad
            // ones never reach sequence tracking.
            final UnsafeBuffer bad = new UnsafeBuffer(new byte[4096]);
            final int good = encodeStored(bad, h, base.tokenIds());
            final UnsafeBuffer copy = new UnsafeBuffer(new byte[4096]);
            copy.putBytes(0, bad, 0, good);
            copy.putShort(4, (short) 702, ByteOrder.LITTLE_ENDIAN);
            offer(publication, copy, good);
            copy.putBytes(0, bad, 0, good);
            copy.putShort(6, (short) 2, ByteOrder.LITTLE_ENDIAN);
            offer(publication, copy, good);
            copy.putBytes(0, bad, 0, good);
            copy.putShort(MessageHeaderEncoder.ENCODED_LENGTH + BlockStoredEncoder.BLOCK_LENGTH + 2, (short) 0xFFFF,
                ByteOrder.LITTLE_ENDIAN);
            offer(publication, copy, good);
            copy.putBytes(0, bad, 0, good);
            offer(publication, copy, good - 3);
            assertTrue(pub.blockStored(h, h.length, false, 0, base.tokenIds(), 16, Medium.GPU, null, 0));
            await("depth 25 after bad input", () -> depth(reader, "sbe-pod", base, null) == 25);
            assertEquals(4, daemon.counters().value(CounterType.DECODE_ERRORS));

            assertTrue(pub.allBlocksCleared());
            await("depth 0", () -> depth(reader, "sbe-pod", base, null) == 0
                && depth(reader, "sbe-pod", lora, "Alice") == 0);

            // A restarted publisher (sequence back to 0) clears the pod before its events apply.
            assertTrue(pub.blockStored(lora.blockHashes(), 25, false, 0, lora.tokenIds(), 16, Medium.GPU, "Alice",
                0));
            await("lora 25", () -> depth(reader, "sbe-pod", lora, "Alice") == 25);
            final KvEventPublisher restarted = new KvEventPublisher(publication, "sbe-pod", MODEL,
                new SleepingMillisIdleStrategy(1));
            assertTrue(restarted.blockStored(h, 10, false, 0, base.tokenIds(), 16, Medium.CPU, null, 0));
            await("depth 10 after restart", () -> depth(reader, "sbe-pod", base, null) == 10);
            assertEquals(0, depth(reader, "sbe-pod", lora, "Alice"));
            assertEquals(1, daemon.counters().value(CounterType.SEQUENCE_RESETS));

            // The counters live in the driver's CnC file: any Aeron client (or AeronStat) reads them.
            final CountersReader counters = client.countersReader();
            final long[] stored = {-1};
            counters.forEach((counterId, typeId, keyBuffer, label) -> {
                if (typeId == CounterType.BLOCKS_STORED.typeId()) {
                    stored[0] = counters.getCounterValue(counterId);
                }
            });
            assertEquals(daemon.counters().value(CounterType.BLOCKS_STORED), stored[0]);
            assertTrue(stored[0] >= 60);
        }
    }

    private static void offer(final Publication publication, final UnsafeBuffer buffer, final int length)
        throws InterruptedException {
        long result;
        while ((result = publication.offer(buffer, 0, length)) < 0) {
            assertTrue(result == Publication.BACK_PRESSURED || result == Publication.ADMIN_ACTION, "offer " + result);
            Thread.sleep(1);
        }
    }

    private static int encodeStored(final UnsafeBuffer buffer, final long[] hashes, final int[] tokens) {
        final BlockStoredEncoder e = new BlockStoredEncoder().wrapAndApplyHeader(buffer, 0, new MessageHeaderEncoder())
            .sequence(1000).dpRank(0).blockSize(16).medium(Medium.GPU).hasParent(BooleanType.F).parentHash(0);
        final BlockStoredEncoder.BlocksEncoder blocks = e.blocksCount(hashes.length);
        for (final long hash : hashes) {
            blocks.next().hash(hash);
        }
        final BlockStoredEncoder.TokensEncoder t = e.tokensCount(tokens.length);
        for (final int token : tokens) {
            t.next().token(token);
        }
        final byte[] pod = "sbe-pod".getBytes();
        final byte[] model = MODEL.getBytes();
        e.putPodId(pod, 0, pod.length).putModel(model, 0, model.length).putLoraName(new byte[0], 0, 0);
        return MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength();
    }

    @org.junit.jupiter.api.Test
    void shouldUseAnExternalMediaDriver() throws Exception {
        final String aeronDir = "/dev/shm/kvidx-test-aeron-ext-" + UUID.randomUUID();
        final Capture base = Capture.load("kv_event_base.json");
        final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(4096).podTimeoutMs(0);
        ctx.aeron().addChannel("aeron:ipc").dir(aeronDir).embeddedDriver(false);
        try (io.aeron.driver.MediaDriver driver = io.aeron.driver.MediaDriver.launch(
                new io.aeron.driver.MediaDriver.Context().aeronDirectoryName(aeronDir).dirDeleteOnStart(true)
                    .dirDeleteOnShutdown(true).threadingMode(io.aeron.driver.ThreadingMode.SHARED)
                    .sharedIdleStrategy(new SleepingMillisIdleStrategy(1)).ipcTermBufferLength(1 << 16));
            KvidxDaemon daemon = KvidxDaemon.start(ctx);
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir));
            Aeron client = Aeron.connect(new Aeron.Context().aeronDirectoryName(aeronDir));
            Publication publication = client.addPublication("aeron:ipc", 7001)) {
            await("publication connected", publication::isConnected);
            final KvEventPublisher pub = new KvEventPublisher(publication, "ext-pod", MODEL,
                new SleepingMillisIdleStrategy(1));
            assertTrue(pub.blockStored(base.blockHashes(), 25, false, 0, base.tokenIds(), 16, Medium.GPU, null, -1));
            await("depth 25", () -> depth(reader, "ext-pod", base, null) == 25);
            assertTrue(driver.context().aeronDirectory().exists());

            // With Aeron the counters live in its CnC file; the cell's counters file points there, so the CLI finds
            // them from --dir alone.
            final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            final java.io.PrintStream original = System.out;
            final int code;
            System.setOut(new java.io.PrintStream(out, true, java.nio.charset.StandardCharsets.UTF_8));
            try {
                code = io.kvidx.daemon.cli.KvidxCli.run("counters", "--dir", dir.toString());
            } finally {
                System.setOut(original);
            }
            final String text = out.toString(java.nio.charset.StandardCharsets.UTF_8);
            assertEquals(0, code, text);
            assertTrue(text.contains("counters in Aeron's CnC file in " + aeronDir), text);
            assertTrue(text.lines().anyMatch(l -> l.endsWith("kvidx blocks stored") && l.contains(" 25 - ")), text);
        }
    }
}
