package io.kvidx.daemon.ingest.zmq;

import com.sun.net.httpserver.HttpServer;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.daemon.snapshot.SnapshotEncoder;
import io.kvidx.daemon.snapshot.SnapshotLoader;
import io.kvidx.daemon.snapshot.SnapshotView;
import io.kvidx.daemon.state.PodBlockMaps;
import io.kvidx.daemon.state.PublisherProgress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A daemon fed by real publishers (PUB + ROUTER replay) takes a snapshot; a second daemon in another cell loads it
 * at start ({@code peer}), answers every query as the first does, replays each engine from the snapshot's sequence
 * + 1, and keeps agreeing through more stores and removes. Also: the end-to-end path through the daemon's HTTP API,
 * and the start's failures (peer unreachable, another block size, a catch-up that did not finish).
 */
@Timeout(120)
class SnapshotCatchUpTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";
    private static final String[] PODS = {"pod-a", "pod-b"};

    @TempDir
    Path dir;

    /** The engines' truth: prompts and, per pod, how many of a prompt's first blocks it holds. */
    private static final class Fleet {
        final List<int[]> tokens = new ArrayList<>();
        final List<long[][]> hashes = new ArrayList<>();
        final List<int[]> held = new ArrayList<>();
        final SplittableRandom random = new SplittableRandom(7);
        final JavaVllmPublisher[] publishers;

        Fleet(final JavaVllmPublisher[] publishers) {
            this.publishers = publishers;
        }

        private static VllmPayloads payloads() {
            return new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64);
        }

        /** A new prompt of 3..8 blocks, stored by one pod or both. */
        void newPrompt() {
            final int blocks = 3 + random.nextInt(6);
            final int[] t = new int[blocks * 16];
            for (int i = 0; i < t.length; i++) {
                t[i] = random.nextInt(150_000);
            }
            final long[][] h = new long[PODS.length][blocks];
            for (final long[] podHashes : h) {
                for (int i = 0; i < blocks; i++) {
                    podHashes[i] = random.nextLong();
                }
            }
            tokens.add(t);
            hashes.add(h);
            held.add(new int[PODS.length]);
            final int prompt = tokens.size() - 1;
            final int who = random.nextInt(3);
            for (int p = 0; p < PODS.length; p++) {
                if (who == 2 || who == p) {
                    store(prompt, p, 0, blocks);
                }
            }
        }

        /** Stores blocks [from, to) of a prompt on a pod (the pod holds [0, from)). */
        void store(final int prompt, final int pod, final int from, final int to) {
            final long[] h = Arrays.copyOfRange(hashes.get(prompt)[pod], from, to);
            final int[] t = Arrays.copyOfRange(tokens.get(prompt), from * 16, to * 16);
            final Long parent = from == 0 ? null : hashes.get(prompt)[pod][from - 1];
            publishers[pod].publish(payloads().stored(h, parent, t, 16, null, null).batch(0));
            held.get(prompt)[pod] = to;
        }

        /** A random change: a new prompt, a pod dropping a prompt's tail, or storing it back. */
        void churn() {
            final int op = random.nextInt(3);
            if (op == 0 || tokens.isEmpty()) {
                newPrompt();
                return;
            }
            final int prompt = random.nextInt(tokens.size());
            final int pod = random.nextInt(PODS.length);
            final int n = held.get(prompt)[pod];
            final int blocks = hashes.get(prompt)[pod].length;
            if (op == 1 && n > 0) {
                final int keep = random.nextInt(n);
                publishers[pod].publish(payloads().removed(Arrays.copyOfRange(hashes.get(prompt)[pod], keep, n),
                    null).batch(0));
                held.get(prompt)[pod] = keep;
            } else if (n < blocks) {
                store(prompt, pod, n, n + 1 + random.nextInt(blocks - n));
            } else {
                newPrompt();
            }
        }

        /** @return true when the reader answers every prompt as the engines hold it, for every pod. */
        boolean answeredBy(final IndexReader reader) {
            final long[] keys = new long[64];
            final RouterKeyHasher hasher = new RouterKeyHasher(16);
            final long seed = RouterKeyHasher.chainSeed(MODEL, null, null);
            for (int prompt = 0; prompt < tokens.size(); prompt++) {
                final int n = hasher.keys(seed, tokens.get(prompt), tokens.get(prompt).length, keys);
                for (int p = 0; p < PODS.length; p++) {
                    if (ZmqIngestTest.depthOfKeys(reader, PODS[p], keys, n) != held.get(prompt)[p]) {
                        return false;
                    }
                }
            }
            return true;
        }
    }

    private DaemonContext context(final String cell, final JavaVllmPublisher[] publishers) {
        final DaemonContext context = new DaemonContext().dir(dir).cell(cell).shardCount(16).capacityBlocks(8192)
            .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff").writers(2);
        context.zmq().replayTimeoutMs(1_000).checkpointIntervalMs(20);
        for (int p = 0; p < publishers.length; p++) {
            context.zmq().addEndpoint(new ZmqEndpoint(publishers[p].endpoint(), PODS[p], MODEL,
                publishers[p].replayEndpoint()));
        }
        return context;
    }

    /** @return the context after the change (for the settings parts, whose setters return the part). */
    private static DaemonContext with(final DaemonContext context, final Consumer<DaemonContext> change) {
        change.accept(context);
        return context;
    }

    private static IndexReader reader(final Path dir, final String cell) {
        return IndexReader.attach(new IndexReaderContext().dir(dir).cell(cell).attachTimeoutMs(5_000)
            .heartbeatTimeoutMs(0));
    }

    /** Publishes empty batches until the daemon has heard from every publisher (its subscriptions are joined). */
    private static void join(final KvidxDaemon daemon, final JavaVllmPublisher[] publishers) throws Exception {
        final byte[] ping = new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64).batch(0);
        for (final JavaVllmPublisher publisher : publishers) {
            final long received = daemon.counters().value(CounterType.MESSAGES_RECEIVED);
            final long deadline = System.currentTimeMillis() + 10_000;
            while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == received) {
                assertTrue(System.currentTimeMillis() < deadline, "subscription joined");
                publisher.publish(ping);
                Thread.sleep(20);
            }
        }
    }

    /** Serves fixed bytes at /dump, as a daemon's HTTP API serves its snapshot. */
    private static HttpServer serve(final byte[] body, final int status) throws Exception {
        final HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/dump", exchange -> {
            exchange.sendResponseHeaders(status, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        return server;
    }

    private static String url(final HttpServer server) {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @Test
    void shouldLoadASnapshotIntoAnotherCellAnswerTheSameAndReplayFromItsSequences() throws Exception {
        try (JavaVllmPublisher a = new JavaVllmPublisher("kv@" + PODS[0] + "@" + MODEL, true);
            JavaVllmPublisher b = new JavaVllmPublisher("kv@" + PODS[1] + "@" + MODEL, true)) {
            final JavaVllmPublisher[] publishers = {a, b};
            final Fleet fleet = new Fleet(publishers);
            try (KvidxDaemon first = KvidxDaemon.start(context("one", publishers));
                IndexReader one = reader(dir, "one")) {
                join(first, publishers);
                for (int i = 0; i < 60; i++) {
                    fleet.churn();
                }
                await("the first daemon holds what the engines hold", () -> fleet.answeredBy(one));
                final PublisherProgress recorded = new PublisherProgress(dir.resolve("one")
                    .resolve(PodBlockMaps.STATE_DIR_NAME));
                await("a checkpoint of every batch", () -> {
                    final Map<String, PublisherProgress.Entry> r = recorded.read();
                    return r.size() == 2 && r.get(a.endpoint()).sequence() == a.nextSeq() - 1
                        && r.get(b.endpoint()).sequence() == b.nextSeq() - 1;
                });
                first.snapshotMembership(() -> new byte[] {1, 2, 3});
                final byte[] snapshot = first.snapshot().get(10, TimeUnit.SECONDS);
                final SnapshotView view = SnapshotView.wrap(snapshot, Long.MAX_VALUE);
                assertEquals(2, view.podCount());
                assertEquals(16, view.blockSize());
                assertEquals(2, view.publishers().size());
                for (final PublisherProgress.Entry e : view.publishers()) {
                    assertEquals((e.endpoint().equals(a.endpoint()) ? a : b).nextSeq() - 1, e.sequence(),
                        "S: every batch published before the snapshot");
                    assertNotEquals(PublisherProgress.NO_FINGERPRINT, e.fingerprint());
                }

                // Batches after S: the second daemon must get them by replay.
                for (int i = 0; i < 40; i++) {
                    fleet.churn();
                }
                await("the first daemon follows", () -> fleet.answeredBy(one));
                final HttpServer peer = serve(snapshot, 200);
                try (KvidxDaemon second = KvidxDaemon.start(with(context("two", publishers),
                    c -> c.snapshots().peer(url(peer))));
                    IndexReader two = reader(dir, "two")) {
                    final SnapshotLoader.Loaded loaded = second.catchUp();
                    assertNotNull(loaded);
                    assertEquals(2, loaded.pods());
                    assertEquals(view.blockCount(), loaded.blocks());
                    assertEquals(2, loaded.publishers());
                    assertArrayEquals(new byte[] {1, 2, 3}, loaded.membership());
                    assertEquals(0, second.counters().value(CounterType.WARM_RESTARTS));
                    await("the second daemon replays from S + 1 and answers as the engines hold",
                        () -> fleet.answeredBy(two));
                    assertEquals(0, second.counters().value(CounterType.REPLAY_GAP_CLEARS),
                        "replayed from the snapshot's sequences, not from a gap");
                    assertEquals(0, second.counters().value(CounterType.UNKNOWN_PARENTS),
                        "the engine-hash maps came with the snapshot");

                    // Live churn reaches both.
                    join(second, publishers);
                    for (int i = 0; i < 60; i++) {
                        fleet.churn();
                    }
                    await("both follow the churn", () -> fleet.answeredBy(one) && fleet.answeredBy(two));
                    await("same entries", () -> first.index().entryCount() == second.index().entryCount());
                } finally {
                    peer.stop(0);
                }
            }
        }
    }

    @Test
    void shouldCatchUpThroughTheHttpApiOfARunningDaemon() throws Exception {
        try (JavaVllmPublisher a = new JavaVllmPublisher("kv@" + PODS[0] + "@" + MODEL, true);
            JavaVllmPublisher b = new JavaVllmPublisher("kv@" + PODS[1] + "@" + MODEL, true)) {
            final JavaVllmPublisher[] publishers = {a, b};
            final Fleet fleet = new Fleet(publishers);
            try (KvidxDaemon first = KvidxDaemon.start(with(context("one", publishers),
                c -> c.serving().http("127.0.0.1:0")));
                KvidxDaemon second = KvidxDaemon.start(context("two", publishers));
                IndexReader one = reader(dir, "one");
                IndexReader two = reader(dir, "two")) {
                join(first, publishers);
                join(second, publishers);
                for (int i = 0; i < 80; i++) {
                    fleet.churn();
                }
                await("two daemons fed by the same engines agree", () -> fleet.answeredBy(one)
                    && fleet.answeredBy(two));
                assertTrue(first.httpPort() > 0);
                // The third joins late, while the engines keep changing: its snapshot holds blocks of batches after
                // the sequences it records, which the replay applies again.
                final Thread engines = Thread.ofPlatform().name("test-churn").start(() -> {
                    for (int i = 0; i < 60; i++) {
                        fleet.churn();
                        java.util.concurrent.locks.LockSupport.parkNanos(2_000_000);
                    }
                });
                try (KvidxDaemon third = KvidxDaemon.start(with(context("three", publishers),
                    c -> c.snapshots().peer("http://127.0.0.1:" + first.httpPort())));
                    IndexReader three = reader(dir, "three")) {
                    assertNotNull(third.catchUp());
                    assertEquals(2, third.catchUp().pods());
                    engines.join(10_000);
                    final long caughtUp = System.nanoTime();
                    await("the third agrees after catching up", () -> fleet.answeredBy(three));
                    final long agreedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - caughtUp);
                    System.out.println("third daemon agreed " + agreedMs + " ms after the engines' last change");
                    assertTrue(agreedMs < 5_000, "agreed within seconds of catching up: " + agreedMs + " ms");
                    await("the first two agree too", () -> fleet.answeredBy(one) && fleet.answeredBy(two));
                    join(third, publishers);
                    for (int i = 0; i < 40; i++) {
                        fleet.churn();
                    }
                    await("all three follow the churn", () -> fleet.answeredBy(one) && fleet.answeredBy(two)
                        && fleet.answeredBy(three));
                }
            }
        }
    }

    @Test
    void shouldRefuseToTakeASnapshotOverItsLimit() throws Exception {
        try (JavaVllmPublisher a = new JavaVllmPublisher("kv@" + PODS[0] + "@" + MODEL, true)) {
            final JavaVllmPublisher[] publishers = {a};
            final Fleet fleet = new Fleet(publishers);
            try (KvidxDaemon daemon = KvidxDaemon.start(with(context("one", publishers),
                c -> c.snapshots().snapshotMaxBytes(2048)));
                IndexReader one = reader(dir, "one")) {
                join(daemon, publishers);
                for (int i = 0; i < 20; i++) {
                    fleet.store(fleetPrompt(fleet), 0, 0, 8);
                }
                await("applied", () -> fleet.answeredBy(one));
                final java.util.concurrent.ExecutionException failure = assertThrows(
                    java.util.concurrent.ExecutionException.class, () -> daemon.snapshot().get(10, TimeUnit.SECONDS));
                assertTrue(failure.getCause() instanceof io.kvidx.daemon.snapshot.SnapshotException
                    && failure.getCause().getMessage().contains("exceeds"), String.valueOf(failure.getCause()));
            }
        }
    }

    /** Adds a prompt of 8 blocks that no pod holds yet; returns its index. */
    private static int fleetPrompt(final Fleet fleet) {
        final int[] t = new int[8 * 16];
        for (int i = 0; i < t.length; i++) {
            t[i] = fleet.random.nextInt(150_000);
        }
        final long[][] h = new long[PODS.length][8];
        for (final long[] podHashes : h) {
            for (int i = 0; i < 8; i++) {
                podHashes[i] = fleet.random.nextLong();
            }
        }
        fleet.tokens.add(t);
        fleet.hashes.add(h);
        fleet.held.add(new int[PODS.length]);
        return fleet.tokens.size() - 1;
    }

    @Test
    void shouldFailTheStartWhenThePeerIsUnreachableUnlessOptional() throws Exception {
        try (JavaVllmPublisher a = new JavaVllmPublisher("kv@" + PODS[0] + "@" + MODEL, true)) {
            final JavaVllmPublisher[] publishers = {a};
            final String nobody;
            try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
                nobody = "http://127.0.0.1:" + socket.getLocalPort();
            }
            final IllegalStateException failure = assertThrows(IllegalStateException.class,
                () -> KvidxDaemon.start(with(context("one", publishers),
                    c -> c.snapshots().peer(nobody).peerTimeoutMs(2_000))).close());
            assertTrue(failure.getMessage().contains("cannot catch up from peer " + nobody), failure.getMessage());
            try (KvidxDaemon daemon = KvidxDaemon.start(with(context("one", publishers),
                c -> c.snapshots().peer(nobody).peerTimeoutMs(2_000).peerOptional(true)))) {
                assertNull(daemon.catchUp(), "started empty");
            }
        }
    }

    @Test
    void shouldRefuseAPeerOfAnotherBlockSizeEvenWhenOptional() throws Exception {
        final byte[] other = SnapshotEncoder.encode(new SnapshotEncoder.Geometry(64, 1, 256), 0, List.of(),
            List.of(), new byte[0], 1 << 20);
        final HttpServer peer = serve(other, 200);
        try (JavaVllmPublisher a = new JavaVllmPublisher("kv@" + PODS[0] + "@" + MODEL, true)) {
            final IllegalStateException failure = assertThrows(IllegalStateException.class,
                () -> KvidxDaemon.start(with(context("one", new JavaVllmPublisher[] {a}),
                    c -> c.snapshots().peer(url(peer)).peerOptional(true))).close());
            assertTrue(failure.getMessage().contains("--block-size 64"), failure.getMessage());
            final HttpServer missing = serve("no such endpoint".getBytes(), 404);
            try {
                final IllegalStateException notFound = assertThrows(IllegalStateException.class,
                    () -> KvidxDaemon.start(with(context("one", new JavaVllmPublisher[] {a}),
                        c -> c.snapshots().peer(url(missing)))).close());
                assertTrue(notFound.getMessage().contains("HTTP 404"), notFound.getMessage());
            } finally {
                missing.stop(0);
            }
        } finally {
            peer.stop(0);
        }
    }

    @Test
    void shouldReplaceAnIndexWhoseCatchUpDidNotFinish() throws Exception {
        try (JavaVllmPublisher a = new JavaVllmPublisher("kv@" + PODS[0] + "@" + MODEL, true)) {
            final JavaVllmPublisher[] publishers = {a};
            final long epoch;
            try (KvidxDaemon daemon = KvidxDaemon.start(context("one", publishers))) {
                epoch = daemon.index().epoch();
            }
            final Path state = dir.resolve("one").resolve(PodBlockMaps.STATE_DIR_NAME);
            Files.writeString(state.resolve(SnapshotLoader.MARKER_FILE_NAME), "interrupted\n");
            try (KvidxDaemon daemon = KvidxDaemon.start(context("one", publishers))) {
                assertNotEquals(epoch, daemon.index().epoch(), "a new index, not the half-loaded one");
                assertEquals(0, daemon.counters().value(CounterType.WARM_RESTARTS));
                assertTrue(Files.notExists(state.resolve(SnapshotLoader.MARKER_FILE_NAME)));
            }
            try (KvidxDaemon daemon = KvidxDaemon.start(context("one", publishers))) {
                assertEquals(1, daemon.counters().value(CounterType.WARM_RESTARTS), "then warm restarts again");
            }
        }
    }
}
