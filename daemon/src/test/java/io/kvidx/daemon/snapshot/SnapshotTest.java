package io.kvidx.daemon.snapshot;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.EngineDecoders;
import io.kvidx.daemon.state.PodBlockMap;
import io.kvidx.daemon.state.PodBlockMaps;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.YieldingIdleStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The snapshot format (byte-exact layout, round trip, rejection of corrupt, truncated and oversized inputs with
 * typed errors) and its loading into a new cell.
 */
@Timeout(60)
class SnapshotTest {
    private static final long MAX = 1 << 20;
    private static final SnapshotEncoder.Geometry GEOMETRY = new SnapshotEncoder.Geometry(16, 1, 64);

    @TempDir
    Path dir;

    private static byte[] tiny() throws SnapshotException {
        final byte[] pod = SnapshotEncoder.podRecord("p", "m", SnapshotDescriptor.POD_FLAG_SUSPECT, 2,
            new long[] {0x11}, new long[] {0x22}, new long[] {0x4}, new long[] {0x33});
        return SnapshotEncoder.encode(GEOMETRY, 1234, List.of(new PublisherProgress.Entry("tcp://a:1", 7, "p",
            0xABL)), List.of(pod), "xyz".getBytes(StandardCharsets.UTF_8), MAX);
    }

    @Test
    void shouldPinTheDescriptorOffsets() {
        assertEquals(0x314E_5358_4449_564BL, SnapshotDescriptor.MAGIC);
        assertEquals(0x0001_0000, SnapshotDescriptor.LAYOUT_VERSION);
        assertEquals(8, SnapshotDescriptor.LAYOUT_VERSION_OFFSET);
        assertEquals(12, SnapshotDescriptor.HEADER_LENGTH_OFFSET);
        assertEquals(16, SnapshotDescriptor.TOTAL_LENGTH_OFFSET);
        assertEquals(24, SnapshotDescriptor.TAKEN_AT_OFFSET);
        assertEquals(32, SnapshotDescriptor.BLOCK_SIZE_OFFSET);
        assertEquals(36, SnapshotDescriptor.KEY_SCHEME_OFFSET);
        assertEquals(40, SnapshotDescriptor.MAX_PODS_OFFSET);
        assertEquals(44, SnapshotDescriptor.POD_COUNT_OFFSET);
        assertEquals(48, SnapshotDescriptor.PUBLISHER_COUNT_OFFSET);
        assertEquals(52, SnapshotDescriptor.PODS_OFFSET_OFFSET);
        assertEquals(56, SnapshotDescriptor.MEMBERSHIP_OFFSET_OFFSET);
        assertEquals(60, SnapshotDescriptor.MEMBERSHIP_LENGTH_OFFSET);
        assertEquals(64, SnapshotDescriptor.HEADER_LENGTH);
        assertEquals(8, SnapshotDescriptor.TRAILER_LENGTH);
        assertEquals(4, SnapshotDescriptor.PUBLISHER_ENDPOINT_LENGTH_OFFSET);
        assertEquals(6, SnapshotDescriptor.PUBLISHER_POD_ID_LENGTH_OFFSET);
        assertEquals(8, SnapshotDescriptor.PUBLISHER_SEQUENCE_OFFSET);
        assertEquals(16, SnapshotDescriptor.PUBLISHER_FINGERPRINT_OFFSET);
        assertEquals(24, SnapshotDescriptor.PUBLISHER_FIXED_LENGTH);
        assertEquals(4, SnapshotDescriptor.POD_ENTRY_COUNT_OFFSET);
        assertEquals(8, SnapshotDescriptor.POD_FLAGS_OFFSET);
        assertEquals(12, SnapshotDescriptor.POD_MAIN_GROUP_OFFSET);
        assertEquals(16, SnapshotDescriptor.POD_ID_LENGTH_OFFSET);
        assertEquals(18, SnapshotDescriptor.POD_MODEL_LENGTH_OFFSET);
        assertEquals(24, SnapshotDescriptor.POD_FIXED_LENGTH);
        assertEquals(32, SnapshotDescriptor.ENTRY_LENGTH);
        assertEquals(0, SnapshotDescriptor.ENTRY_HASH_OFFSET);
        assertEquals(8, SnapshotDescriptor.ENTRY_KEY_OFFSET);
        assertEquals(16, SnapshotDescriptor.ENTRY_MEDIA_OFFSET);
        assertEquals(24, SnapshotDescriptor.ENTRY_PARENT_OFFSET);
    }

    @Test
    void shouldWriteEveryByteOfATinySnapshotWhereTheLayoutSays() throws Exception {
        final byte[] bytes = tiny();
        // 64 header + 40 publisher (24 + "tcp://a:1" + "p" = 34, padded) + 64 pod (32 + one entry) + 8 membership
        // ("xyz" padded) + 8 trailer.
        assertEquals(184, bytes.length);
        final ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals("KVIDXSN1", new String(bytes, 0, 8, StandardCharsets.US_ASCII));
        assertEquals(0x0001_0000, b.getInt(8));
        assertEquals(64, b.getInt(12));
        assertEquals(184, b.getLong(16));
        assertEquals(1234, b.getLong(24));
        assertEquals(16, b.getInt(32));
        assertEquals(1, b.getInt(36));
        assertEquals(64, b.getInt(40));
        assertEquals(1, b.getInt(44), "pods");
        assertEquals(1, b.getInt(48), "publishers");
        assertEquals(104, b.getInt(52), "pods offset");
        assertEquals(168, b.getInt(56), "membership offset");
        assertEquals(3, b.getInt(60), "membership length");
        // Publisher record at 64.
        assertEquals(40, b.getInt(64));
        assertEquals(9, b.getShort(68));
        assertEquals(1, b.getShort(70));
        assertEquals(7, b.getLong(72));
        assertEquals(0xAB, b.getLong(80));
        assertEquals("tcp://a:1p", new String(bytes, 88, 10, StandardCharsets.UTF_8));
        assertEquals(0, bytes[98], "padding");
        // Pod record at 104.
        assertEquals(64, b.getInt(104));
        assertEquals(1, b.getInt(108), "entries");
        assertEquals(SnapshotDescriptor.POD_FLAG_SUSPECT, b.getInt(112));
        assertEquals(2, b.getInt(116), "main group");
        assertEquals(1, b.getShort(120));
        assertEquals(1, b.getShort(122));
        assertEquals(0, b.getInt(124), "reserved");
        assertEquals("pm", new String(bytes, 128, 2, StandardCharsets.UTF_8));
        assertEquals(0x11, b.getLong(136), "hash");
        assertEquals(0x22, b.getLong(144), "router key");
        assertEquals(0x4, b.getLong(152), "media");
        assertEquals(0x33, b.getLong(160), "parent");
        assertEquals("xyz", new String(bytes, 168, 3, StandardCharsets.UTF_8));
        assertEquals(SnapshotEncoder.checksum(bytes, 176), b.getInt(176));
        assertEquals(0, b.getInt(180));
    }

    @Test
    void shouldRoundTripPodsPublishersAndMembership() throws Exception {
        final byte[] a = SnapshotEncoder.podRecord("pod-a", "Qwen/Qwen3-0.6B", 0, -1, new long[] {1, 2, 3},
            new long[] {10, 20, 30}, new long[] {1, 1, 3}, new long[] {0, 10, 20});
        final byte[] b = SnapshotEncoder.podRecord("pod-b", null, SnapshotDescriptor.POD_FLAG_SUSPECT, 0,
            new long[0], new long[0], new long[0], new long[0]);
        final List<PublisherProgress.Entry> publishers = List.of(
            new PublisherProgress.Entry("tcp://10.0.0.7:5557", 41, "pod-a", 0x1234_5678_9ABC_DEF0L),
            new PublisherProgress.Entry("tcp://10.0.0.8:5557", -1, null, 0));
        final byte[] membership = new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9};
        final SnapshotView view = SnapshotView.wrap(SnapshotEncoder.encode(GEOMETRY, 99, publishers, List.of(a, b),
            membership, MAX), MAX);
        assertEquals(SnapshotDescriptor.LAYOUT_VERSION, view.layoutVersion());
        assertEquals(99, view.takenAtMs());
        assertEquals(16, view.blockSize());
        assertEquals(1, view.keyScheme());
        assertEquals(64, view.maxPods());
        assertEquals(publishers, view.publishers());
        assertArrayEquals(membership, view.membership());
        assertEquals(2, view.podCount());
        assertEquals(3, view.blockCount());
        assertEquals("pod-a", view.podId(0));
        assertEquals("Qwen/Qwen3-0.6B", view.model(0));
        assertFalse(view.suspect(0));
        assertEquals(-1, view.mainGroup(0));
        assertEquals(3, view.entryCount(0));
        for (int i = 0; i < 3; i++) {
            assertEquals(i + 1, view.hash(0, i));
            assertEquals(10L * (i + 1), view.routerKey(0, i));
            assertEquals(10L * i, view.parent(0, i));
        }
        assertEquals(3, view.media(0, 2));
        assertEquals("pod-b", view.podId(1));
        assertNull(view.model(1));
        assertTrue(view.suspect(1));
        assertEquals(0, view.mainGroup(1));
        assertEquals(0, view.entryCount(1));
    }

    @Test
    void shouldRejectEveryTruncationAndEveryFlippedByteWithAFormatError() throws Exception {
        final byte[] bytes = tiny();
        for (int n = 0; n < bytes.length; n++) {
            final byte[] cut = Arrays.copyOf(bytes, n);
            assertThrows(SnapshotFormatException.class, () -> SnapshotView.wrap(cut, MAX), "truncated to " + n);
        }
        final byte[] longer = Arrays.copyOf(bytes, bytes.length + 8);
        assertThrows(SnapshotFormatException.class, () -> SnapshotView.wrap(longer, MAX), "trailing bytes");
        for (int i = 0; i < bytes.length; i++) {
            for (final int bit : new int[] {0x01, 0x80}) {
                final byte[] flipped = bytes.clone();
                flipped[i] ^= (byte) bit;
                final int at = i;
                assertThrows(SnapshotFormatException.class, () -> SnapshotView.wrap(flipped, MAX),
                    "byte " + at + " flipped");
            }
        }
    }

    @Test
    void shouldRejectASnapshotOverTheLimitAndAnotherMajorVersion() throws Exception {
        final byte[] bytes = tiny();
        final SnapshotFormatException big = assertThrows(SnapshotFormatException.class,
            () -> SnapshotView.wrap(bytes, bytes.length - 1));
        assertTrue(big.getMessage().contains("exceeds the limit"), big.getMessage());
        final byte[] v2 = bytes.clone();
        ByteBuffer.wrap(v2).order(ByteOrder.LITTLE_ENDIAN).putInt(SnapshotDescriptor.LAYOUT_VERSION_OFFSET, 2 << 16);
        reseal(v2);
        final SnapshotFormatException version = assertThrows(SnapshotFormatException.class,
            () -> SnapshotView.wrap(v2, MAX));
        assertTrue(version.getMessage().contains("2.0.0"), version.getMessage());
        final byte[] minor = bytes.clone();
        ByteBuffer.wrap(minor).order(ByteOrder.LITTLE_ENDIAN).putInt(SnapshotDescriptor.LAYOUT_VERSION_OFFSET,
            (1 << 16) | (7 << 8));
        reseal(minor);
        assertEquals("p", SnapshotView.wrap(minor, MAX).podId(0), "a later minor version reads");
        assertThrows(SnapshotException.class, () -> SnapshotEncoder.encode(GEOMETRY, 0, List.of(),
            List.of(new byte[1024]), new byte[0], 1000), "the encoder refuses a snapshot over the limit");
    }

    @Test
    void shouldRefuseHostileLengthsBehindAValidChecksumWithFormatErrorsOnly() throws Exception {
        final byte[] pod = SnapshotEncoder.podRecord("pod-a", "m", 0, 1, new long[] {1, 2}, new long[] {3, 4},
            new long[] {1, 1}, new long[] {0, 3});
        final byte[] bytes = SnapshotEncoder.encode(GEOMETRY, 5, List.of(new PublisherProgress.Entry("tcp://x:1", 3,
            "pod-a", 9)), List.of(pod, SnapshotEncoder.podRecord("pod-b", null, 0, -1, new long[] {5},
            new long[] {6}, new long[] {2}, new long[] {0})), new byte[] {7}, MAX);
        final int[] values = {0, -1, 1, 7, 8, 24, 64, 0xFFFF, 0x10000, Integer.MAX_VALUE, Integer.MIN_VALUE};
        final SplittableRandom random = new SplittableRandom(42);
        int accepted = 0;
        for (int round = 0; round < 20_000; round++) {
            final byte[] mutated = bytes.clone();
            final ByteBuffer b = ByteBuffer.wrap(mutated).order(ByteOrder.LITTLE_ENDIAN);
            final int mutations = 1 + random.nextInt(3);
            for (int m = 0; m < mutations; m++) {
                final int at = random.nextInt(mutated.length - SnapshotDescriptor.TRAILER_LENGTH - 1) & ~1;
                if (random.nextBoolean()) {
                    b.putShort(at, (short) values[random.nextInt(values.length)]);
                } else if (at <= mutated.length - SnapshotDescriptor.TRAILER_LENGTH - 4) {
                    b.putInt(at, random.nextBoolean() ? values[random.nextInt(values.length)] : random.nextInt());
                }
            }
            reseal(mutated);
            try {
                final SnapshotView view = SnapshotView.wrap(mutated, MAX);
                accepted++;
                // Whatever was accepted reads without an exception.
                view.publishers();
                view.membership();
                for (int p = 0; p < view.podCount(); p++) {
                    view.podId(p);
                    view.model(p);
                    view.suspect(p);
                    view.mainGroup(p);
                    for (int e = 0; e < view.entryCount(p); e++) {
                        assertTrue(view.routerKey(p, e) != 0);
                        view.hash(p, e);
                        view.media(p, e);
                        view.parent(p, e);
                    }
                }
            } catch (final SnapshotFormatException expected) {
                // refused with a typed error
            } catch (final RuntimeException ex) {
                fail("round " + round + ": unchecked " + ex, ex);
            }
        }
        assertTrue(accepted > 0, "some mutations (of values, not lengths) are still valid snapshots");
    }

    @Test
    void shouldLoadPodsBlocksAndProgressIntoANewCell() throws Exception {
        final long[] keys = {0x1001, 0x1002, 0x1003, 0x1004, 0x1005};
        final long[] parents = {0, 0x1001, 0x1002, 0x1003, 0x1004};
        final byte[] a = SnapshotEncoder.podRecord("pod-a", "model-a", 0, -1, new long[] {1, 2, 3, 4, 5}, keys,
            new long[] {1, 1, 1, 1, 3}, parents);
        final byte[] b = SnapshotEncoder.podRecord("pod-b", "model-b", SnapshotDescriptor.POD_FLAG_SUSPECT, 1,
            new long[] {91, 92, 93}, Arrays.copyOf(keys, 3), new long[] {1, 1, 1}, Arrays.copyOf(parents, 3));
        final PublisherProgress.Entry progressEntry = new PublisherProgress.Entry("tcp://e:1", 17, "pod-a", 0x77);
        final byte[] snapshot = SnapshotEncoder.encode(GEOMETRY, 5, List.of(progressEntry), List.of(a, b),
            new byte[] {42}, MAX);
        final Path state = dir.resolve("test").resolve(PodBlockMaps.STATE_DIR_NAME);
        final PodBlockMaps maps = new PodBlockMaps(state, 4);
        try (IndexWriter index = IndexWriter.create(context());
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("test")
                .attachTimeoutMs(1_000).heartbeatTimeoutMs(0))) {
            final SnapshotLoader.Loaded loaded = new SnapshotLoader(index, maps, new PublisherProgress(state), MAX)
                .load(snapshot);
            assertEquals(2, loaded.pods());
            assertEquals(7, loaded.blocks(), "pod-a's map holds 4 here: its fifth block is left out");
            assertEquals(1, loaded.skippedBlocks());
            assertEquals(1, loaded.publishers());
            assertArrayEquals(new byte[] {42}, loaded.membership());
            final int slotA = index.slotOf("pod-a");
            final int slotB = index.slotOf("pod-b");
            assertTrue(slotA >= 0 && slotB >= 0);
            assertEquals("model-a", index.model(slotA));
            assertTrue(index.isSuspect(slotB));
            assertFalse(index.isSuspect(slotA));
            final PrefixResult result = new PrefixResult();
            reader.query(keys, keys.length, null, result);
            assertEquals(4, result.depthOf(slotA));
            assertEquals(3, result.depthOf(slotB));
            assertEquals(0x1002, index.parentOf(0x1003), "parents kept for eviction");
            try (PodBlockMap map = maps.open(slotB, "pod-b", index.generation(slotB))) {
                assertTrue(map.restored(), "the writer finds the map as after a warm restart");
                assertEquals(3, map.size());
                assertEquals(0x1002, map.get(92));
                assertEquals(1, map.mainGroup());
            }
            final Map<String, PublisherProgress.Entry> recorded = new PublisherProgress(state).read();
            assertEquals(progressEntry, recorded.get("tcp://e:1"));
            assertFalse(SnapshotLoader.unfinished(state));
        }
    }

    @Test
    void shouldRefuseAnotherBlockSizeOrKeySchemeBeforeWritingAnything() throws Exception {
        final byte[] pod = SnapshotEncoder.podRecord("pod-a", null, 0, -1, new long[] {1}, new long[] {2},
            new long[] {1}, new long[] {0});
        final Path state = dir.resolve("test").resolve(PodBlockMaps.STATE_DIR_NAME);
        try (IndexWriter index = IndexWriter.create(context())) {
            final SnapshotLoader loader = new SnapshotLoader(index, new PodBlockMaps(state, 16),
                new PublisherProgress(state), MAX);
            final SnapshotIncompatibleException size = assertThrows(SnapshotIncompatibleException.class,
                () -> loader.load(SnapshotEncoder.encode(new SnapshotEncoder.Geometry(64, 1, 64), 0, List.of(),
                    List.of(pod), new byte[0], MAX)));
            assertTrue(size.getMessage().contains("--block-size 64"), size.getMessage());
            assertThrows(SnapshotIncompatibleException.class, () -> loader.load(SnapshotEncoder.encode(
                new SnapshotEncoder.Geometry(16, 2, 64), 0, List.of(), List.of(pod), new byte[0], MAX)));
            assertThrows(SnapshotFormatException.class, () -> loader.load(new byte[10]));
            assertEquals(-1, index.slotOf("pod-a"));
            assertFalse(Files.exists(state.resolve(SnapshotLoader.MARKER_FILE_NAME)));
            assertTrue(new PublisherProgress(state).read().isEmpty());
        }
    }

    @Test
    void shouldFailWhenAWriterDoesNotAnswerInTimeAndTakeAnEmptySnapshotOnceTheyRun() throws Exception {
        final Path state = dir.resolve("test").resolve(PodBlockMaps.STATE_DIR_NAME);
        try (IndexWriter index = IndexWriter.create(context());
            IngestCounters counters = IngestCounters.local()) {
            final WriterPool pool = new WriterPool(2, 1 << 16, index, new PodBlockMaps(state, 64),
                new PodDirectory(64), counters, new IngestErrors(), SystemEpochClock.INSTANCE, 0,
                YieldingIdleStrategy::new, () -> new SleepingMillisIdleStrategy(1), EngineDecoders.standard());
            try (SnapshotService service = new SnapshotService(index, pool, new PublisherProgress(state), MAX, 300)) {
                final ExecutionException late = assertThrows(ExecutionException.class,
                    () -> service.snapshot().get(10, TimeUnit.SECONDS));
                assertInstanceOf(SnapshotException.class, late.getCause());
                assertTrue(late.getCause().getMessage().contains("not taken within 300 ms"),
                    late.getCause().getMessage());
                pool.start();
                final SnapshotView view = SnapshotView.wrap(service.snapshot().get(10, TimeUnit.SECONDS), MAX);
                assertEquals(0, view.podCount());
                assertEquals(16, view.blockSize());
                assertEquals(64, view.maxPods());
                assertEquals(0, view.membership().length);
            } finally {
                pool.close();
            }
        }
    }

    @Test
    void shouldBoundThePeerFetchBySizeAndTime() throws Exception {
        final byte[] body = new byte[1000];
        final com.sun.net.httpserver.HttpServer server = com.sun.net.httpserver.HttpServer.create(
            new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        server.createContext("/dump", exchange -> {
            final String query = exchange.getRequestURI().getQuery();
            assertEquals("format=kvidx", query);
            exchange.sendResponseHeaders(200, 0);
            exchange.getResponseBody().write(body);
            exchange.getResponseBody().flush();
            exchange.close();
        });
        server.createContext("/sized/dump", exchange -> {
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.createContext("/slow/dump", exchange -> {
            try {
                Thread.sleep(3_000);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
            exchange.close();
        });
        server.start();
        try {
            final String base = "http://127.0.0.1:" + server.getAddress().getPort();
            assertEquals(1000, PeerClient.fetch(base, 5_000, 1000).length);
            assertEquals(1000, PeerClient.fetch(base + "/sized/", 5_000, 1000).length);
            assertThrows(SnapshotFormatException.class, () -> PeerClient.fetch(base, 5_000, 999),
                "a chunked body past the limit");
            assertThrows(SnapshotFormatException.class, () -> PeerClient.fetch(base + "/sized", 5_000, 999),
                "a declared length past the limit");
            final long start = System.nanoTime();
            final SnapshotException slow = assertThrows(SnapshotException.class,
                () -> PeerClient.fetch(base + "/slow", 500, 1000));
            assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) < 2_500, "bounded by the timeout");
            assertTrue(slow.getMessage().contains("within 500 ms"), slow.getMessage());
            assertThrows(IllegalArgumentException.class, () -> PeerClient.dumpUri("ftp://x"));
            assertEquals("http://h:1/dump?format=kvidx", PeerClient.dumpUri("h:1/").toString());
        } finally {
            server.stop(0);
        }
    }

    private IndexWriterContext context() {
        return new IndexWriterContext().dir(dir).cell("test").shardCount(4).capacityBlocks(1024).maxPods(64)
            .blockSize(16).deleteOnClose(true);
    }

    private static void reseal(final byte[] bytes) {
        final int end = bytes.length - SnapshotDescriptor.TRAILER_LENGTH;
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(end, SnapshotEncoder.checksum(bytes, end));
    }
}
