package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.DataParallelRanks;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.MODEL;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Data-parallel ranks are routing targets of their own: three real pyzmq publishers in vLLM's format (both event
 * shapes), one engine per rank as vLLM runs them, feed a real daemon; each rank's blocks land in its own pod
 * ({@code dp}, {@code dp#1}, {@code dp#2}), whether the endpoint names the pod or the topic does, on the live path
 * and through replay. Absurd ranks go to the plain pod, counted; a rank pod id too long for the pod table is
 * rejected, counted, and nothing else is lost.
 */
@Timeout(120)
class DataParallelRankTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    private static DaemonContext context(final Path dir) {
        return new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192).podTimeoutMs(0)
            .heartbeatIntervalMs(50).idleStrategy("backoff");
    }

    /** Pings until the condition holds: a PUB/SUB subscription drops what is published before it connects. */
    static void pingUntil(final String what, final List<PyPeer> peers, final BooleanSupplier condition)
        throws Exception {
        final long deadline = System.currentTimeMillis() + 20_000;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            for (final PyPeer p : peers) {
                p.command("ping");
            }
            Thread.sleep(20);
        }
    }

    static Set<String> alivePods(final IndexReader reader) {
        final Set<String> ids = new TreeSet<>();
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            if (reader.isAlive(slot)) {
                ids.add(reader.pod(slot).podId());
            }
        }
        return ids;
    }

    @ParameterizedTest(name = "{0} events")
    @ValueSource(strings = {"array", "map"})
    void shouldMakeEachRankItsOwnRoutingTarget(final String shape) throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String topic = "kv@dp@" + MODEL;
        try (PyPeer r0 = new PyPeer(PyPeer.VLLM, "--topic", topic, "--shape", shape, "--dp-rank", "0");
            PyPeer r1 = new PyPeer(PyPeer.VLLM, "--topic", topic, "--shape", shape, "--dp-rank", "1");
            PyPeer r2 = new PyPeer(PyPeer.VLLM, "--topic", topic, "--shape", shape, "--dp-rank", "2")) {
            // Ranks 0 and 1 on endpoints that name the pod, rank 2 on one that takes it from the topic.
            final DaemonContext ctx = context(dir);
            ctx.zmq().addEndpoint(new ZmqEndpoint(r0.endpoint, "dp", MODEL, r0.replayEndpoint))
                .addEndpoint(new ZmqEndpoint(r1.endpoint, "dp", MODEL, r1.replayEndpoint))
                .addEndpoint(new ZmqEndpoint(r2.endpoint, null, null, r2.replayEndpoint));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                pingUntil("three rank pods", List.of(r0, r1, r2),
                    () -> alivePods(reader).equals(Set.of("dp", "dp#1", "dp#2")));

                r1.command("store kv_event_base.json");
                await("rank 1 holds the blocks", () -> depth(reader, "dp#1", base, null) == 25);
                assertEquals(0, depth(reader, "dp", base, null), "rank 0 is another cache");
                assertEquals(0, depth(reader, "dp#2", base, null), "rank 2 is another cache");

                r0.command("store kv_event_base.json");
                r2.command("store kv_event_base.json");
                await("every rank holds them", () -> depth(reader, "dp", base, null) == 25
                    && depth(reader, "dp#2", base, null) == 25);

                r2.command("remove kv_event_base.json 10 25");
                await("rank 2 removed its tail", () -> depth(reader, "dp#2", base, null) == 10);
                assertEquals(25, depth(reader, "dp", base, null));
                assertEquals(25, depth(reader, "dp#1", base, null));

                // A lost batch of rank 1 comes back through replay, to rank 1.
                r1.command("lose remove kv_event_base.json 5 25");
                r1.command("ping");
                await("rank 1's replayed removal", () -> depth(reader, "dp#1", base, null) == 5);
                assertEquals(25, depth(reader, "dp", base, null));
                assertEquals(10, depth(reader, "dp#2", base, null));

                for (final String id : alivePods(reader)) {
                    assertEquals("dp", DataParallelRanks.basePodId(id));
                }

                final var c = daemon.counters();
                assertEquals(0, c.value(CounterType.DP_RANKS_INVALID));
                assertEquals(0, c.value(CounterType.DP_RANK_PODS_REJECTED));
                assertEquals(0, c.value(CounterType.EVENTS_DROPPED));
                assertEquals(0, c.value(CounterType.FRAMING_ERRORS));
            }
        }
    }

    @Test
    void shouldDefaultAbsurdRanksAndRejectRankPodIdsTooLongForThePodTable() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final String[] ranks = {"-1", "5000", "\"x\"", "1.5", "null", "absent", "18446744073709551615"};
        final String fits = "f".repeat(110);
        final String tooLong = "t".repeat(111);
        final List<PyPeer> peers = new ArrayList<>();
        try {
            final DaemonContext ctx = context(dir);
            for (int i = 0; i < ranks.length; i++) {
                final PyPeer p = new PyPeer(PyPeer.VLLM, "--topic", "", "--dp-rank", ranks[i]);
                peers.add(p);
                ctx.zmq().addEndpoint(new ZmqEndpoint(p.endpoint, "bad-" + i, MODEL, p.replayEndpoint));
            }
            final PyPeer fitting = new PyPeer(PyPeer.VLLM, "--topic", "", "--dp-rank", "2");
            peers.add(fitting);
            final PyPeer rejected = new PyPeer(PyPeer.VLLM, "--topic", "", "--dp-rank", "2");
            peers.add(rejected);
            ctx.zmq().addEndpoint(new ZmqEndpoint(fitting.endpoint, fits, MODEL, fitting.replayEndpoint))
                .addEndpoint(new ZmqEndpoint(rejected.endpoint, tooLong, MODEL, rejected.replayEndpoint));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                final var c = daemon.counters();
                for (final PyPeer p : peers) {
                    p.command("store kv_event_base.json");
                }
                pingUntil("every valid pod holds the capture", peers, () -> {
                    for (int i = 0; i < ranks.length; i++) {
                        if (depth(reader, "bad-" + i, base, null) != 25) {
                            return false;
                        }
                    }
                    return depth(reader, fits + "#2", base, null) == 25
                        && c.value(CounterType.DP_RANK_PODS_REJECTED) > 0;
                });
                final Set<String> expected = new TreeSet<>();
                for (int i = 0; i < ranks.length; i++) {
                    expected.add("bad-" + i);
                }
                expected.add(fits);
                expected.add(fits + "#2");
                expected.add(tooLong);
                assertEquals(expected, alivePods(reader), "absurd ranks stay on the plain pod; the too long rank "
                    + "pod id is never registered");
                assertEquals(112, (fits + "#2").getBytes(StandardCharsets.UTF_8).length);
                assertEquals(0, depth(reader, tooLong, base, null), "the rejected rank's blocks are not mixed into "
                    + "its plain pod");
                assertTrue(c.value(CounterType.DP_RANKS_INVALID) >= 5, "-1, 5000, \"x\", 1.5, 2^64-1: "
                    + c.value(CounterType.DP_RANKS_INVALID));
                assertEquals(0, c.value(CounterType.PODS_REJECTED));
                assertEquals(0, c.value(CounterType.DECODE_ERRORS));
                assertEquals(0, c.value(CounterType.EVENTS_DROPPED));
            }
        } finally {
            for (final PyPeer p : peers) {
                p.close();
            }
        }
    }
}
