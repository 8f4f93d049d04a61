package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.MODEL;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two real Python vLLM-format publishers (pyzmq + msgpack, each in its own process) feed one daemon. Engine A's
 * replay socket first answers not at all (black-holed), then slowly; meanwhile engine B's events must become
 * visible through an {@link IndexReader} as fast as ever, A's live batches must be applied after its replayed
 * ones (none lost, none out of order), and A's pod must show up suspect in the pod table once its replay fails,
 * until a resync clears it.
 */
@Timeout(120)
class ReplayIsolationTest {
    /** The daemon's replay timeout; an unanswered replay takes three of them before it fails. */
    private static final int REPLAY_TIMEOUT_MS = 2_000;
    /** Engine B's slowest publish-to-visible time allowed while A's replay hangs: well under one replay timeout. */
    private static final long MAX_VISIBLE_MS = 750;
    private static final String A = "iso-a";
    private static final String B = "iso-b";

    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PythonPublisherTest.requirePython();
    }

    @Test
    void shouldKeepEngineBFlowingWhileEngineAsReplayCrawlsOrHangs() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        try (PythonPublisherTest.Peer a = new PythonPublisherTest.Peer("kv@" + A + "@" + MODEL, "map", "new", "uint");
            PythonPublisherTest.Peer b = new PythonPublisherTest.Peer("kv@" + B + "@" + MODEL, "map", "old", "uint")) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.zmq().replayTimeoutMs(REPLAY_TIMEOUT_MS)
                .addEndpoint(new ZmqEndpoint(a.endpoint, null, null, a.replayEndpoint))
                .addEndpoint(new ZmqEndpoint(b.endpoint, null, null, b.replayEndpoint));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir));
                IndexReader router = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                final var c = daemon.counters();
                for (final PythonPublisherTest.Peer peer : new PythonPublisherTest.Peer[] {a, b}) {
                    final String pod = peer == a ? A : B;
                    while (slot(reader, pod) < 0) {
                        peer.command("ping");
                        Thread.sleep(20);
                    }
                    peer.command("store kv_event_base.json");
                    await(pod + " depth 25", () -> depth(reader, pod, base, null) == 25);
                }

                // A's replay socket is black-holed: the replay gives up after three timeouts (6 s).
                final long started = System.nanoTime();
                a.command("replay hang");
                a.command("lose remove kv_event_base.json 5 25");
                a.command("ping");
                final long[] hanging = probe(b, reader, base, 3_000);
                assertTrue(hanging[hanging.length - 1] < MAX_VISIBLE_MS, "B while A hangs: " + summary(hanging));
                assertEquals(0, c.value(CounterType.REPLAY_FAILURES), "A's replay was still hanging");
                assertTrue(System.nanoTime() - started < 3L * REPLAY_TIMEOUT_MS * 1_000_000L);
                // The replay fails: counted, A's held batch applied (the lost removal stays lost), A suspect for
                // routers (the pod table's flag, read through another mapping).
                await("A's replay failed", () -> c.value(CounterType.REPLAY_FAILURES) == 1);
                await("A suspect in the pod table", () -> suspect(router, A));
                assertEquals(25, depth(reader, A, base, null));
                assertFalse(suspect(router, B));
                assertEquals(1, c.value(CounterType.SUSPECT_PODS));

                // A's replay crawls: 800 ms before each reply (the checked batch, the lost one, two live ones and the
                // end marker: about 4 s in all, each reply within the replay timeout).
                final long replays = c.value(CounterType.REPLAYS);
                a.command("replay slow 0.8");
                a.command("lose remove kv_event_base.json 15 25");
                a.command("store kv_event_base.json");
                a.command("remove kv_event_base.json 20 25");
                await("A's replay under way", () -> c.value(CounterType.REPLAYS) > replays);
                final long[] crawling = probe(b, reader, base, 1_200);
                assertTrue(crawling[crawling.length - 1] < MAX_VISIBLE_MS, "B while A crawls: " + summary(crawling));
                assertNotEquals(20, depth(reader, A, base, null), "A's replay was still under way during the probes");
                // Applied in order, nothing lost: remove 15..25, store 0..25, remove 20..25 (15 if out of order).
                await("A depth 20 after its replay", () -> depth(reader, A, base, null) == 20);
                assertEquals(1, c.value(CounterType.REPLAY_FAILURES));
                System.err.println("engine B publish-to-visible ms while A's replay hangs: " + summary(hanging)
                    + "; while it crawls: " + summary(crawling));

                // A restarts (its sequence goes back): its pod is cleared and resynced; the flag goes.
                a.command("replay normal");
                a.command("restart");
                a.command("store kv_event_base.json");
                await("A resynced", () -> depth(reader, A, base, null) == 25 && !suspect(router, A));
                assertEquals(0, c.value(CounterType.SUSPECT_PODS));
                assertEquals(java.util.List.of(), nonZero(c.value(CounterType.FRAMING_ERRORS),
                    c.value(CounterType.DECODE_ERRORS), c.value(CounterType.REPLAY_HOLD_OVERFLOWS)));
            }
        }
    }

    /**
     * Engine B, for {@code ms}: alternately stores and removes the capture's chain, each time measuring from the
     * command to the moment an index reader sees it.
     *
     * @return the times in ms, sorted.
     */
    private static long[] probe(final PythonPublisherTest.Peer b, final IndexReader reader, final Capture base,
        final long ms) throws Exception {
        final long end = System.nanoTime() + ms * 1_000_000L;
        long[] times = new long[0];
        boolean held = depth(reader, B, base, null) == 25;
        while (System.nanoTime() < end) {
            final int expected = held ? 0 : 25;
            final long t0 = System.nanoTime();
            b.command(held ? "remove kv_event_base.json 0 25" : "store kv_event_base.json");
            while (depth(reader, B, base, null) != expected) {
                if (System.nanoTime() - t0 > 10_000_000_000L) {
                    throw new AssertionError("engine B's event not visible after 10 s");
                }
                Thread.onSpinWait();
            }
            times = Arrays.copyOf(times, times.length + 1);
            times[times.length - 1] = (System.nanoTime() - t0) / 1_000_000L;
            held = !held;
        }
        Arrays.sort(times);
        return times;
    }

    private static String summary(final long[] sorted) {
        return sorted.length + " events, median " + sorted[sorted.length / 2] + ", max " + sorted[sorted.length - 1];
    }

    private static java.util.List<Long> nonZero(final long... values) {
        return Arrays.stream(values).filter(v -> v != 0).boxed().toList();
    }

    private static boolean suspect(final IndexReader reader, final String pod) {
        final int s = slot(reader, pod);
        return s >= 0 && reader.pod(s).suspect();
    }

    private static int slot(final IndexReader reader, final String pod) {
        for (int s = 0; s < reader.maxPods(); s++) {
            if (reader.isAlive(s) && pod.equals(reader.pod(s).podId())) {
                return s;
            }
        }
        return -1;
    }
}
