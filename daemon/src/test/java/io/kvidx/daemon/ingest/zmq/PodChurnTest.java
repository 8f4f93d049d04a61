package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterAgent;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.MODEL;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pod identities are recycled: one real Python PUB socket names ever new pods ({@code kv@churn-<i>@<model>}, one
 * small BlockStored batch each, never heard from again) into the real daemon with a short pod timeout. Every pod
 * times out, its number is freed and its index slot swept, so the pod directory and the writers' per-pod state stay
 * at the pods live at once (a few hundred at most), not the names seen; at the end a new pod's batch is indexed and
 * answered by a query as on a fresh daemon. The daemon of before (pod numbers never freed, at most 4,096) stopped
 * taking new pods after 4,096 names.
 */
class PodChurnTest {
    private static final String SCRIPT = "src/test/python/pod_churn_publisher.py";
    private static final long POD_TIMEOUT_MS = 100;

    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    /** More names than the 4,096 the daemon of before could ever number, in about 12 s. */
    @Test
    @Timeout(60)
    void shouldKeepTakingNewPodsAfterMoreNamesThanTheOldLimit() throws Exception {
        churn(5_000, 400, 1_000);
    }

    /**
     * 100,000 names in about 2.5 minutes. The rate stays below what one writer registers on a busy two-core host (a
     * new pod opens its block map file: about 0.5 ms; at 700 names/s about 170 ids were live at once).
     */
    @Test
    @Tag("slow")
    @Timeout(600)
    void shouldKeepPodIdentitiesBoundedOverAHundredThousandPodNames() throws Exception {
        churn(100_000, 700, 1_000);
    }

    /**
     * @param names distinct pod names the publisher goes through.
     * @param rate  names (batches) per second.
     * @param bound most pods the directory and the writers may hold at once.
     */
    private void churn(final int names, final int rate, final int bound) throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        try (PyPeer peer = new PyPeer(SCRIPT, "--model", MODEL)) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192).maxPods(256)
                .podTimeoutMs(POD_TIMEOUT_MS).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, null));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                final IngestCounters c = daemon.counters();
                final PodDirectory directory = daemon.directory();
                // Slow joiner: ping until a batch arrives.
                while (c.value(CounterType.MESSAGES_RECEIVED) == 0) {
                    peer.command("ping joiner");
                    Thread.sleep(20);
                }
                final long start = System.nanoTime();
                peer.command("churn " + names + " " + rate + " churn- 2");
                int mostLive = 0;
                int mostStates = 0;
                int mostCapacity = 0;
                String progress = "";
                while (!(progress = peer.command("churn-wait 0.02")).startsWith("ok done")) {
                    mostLive = Math.max(mostLive, directory.count());
                    int states = 0;
                    for (final WriterAgent agent : daemon.writers().agents()) {
                        states += agent.podCount();
                        mostCapacity = Math.max(mostCapacity, agent.podCapacity());
                    }
                    mostStates = Math.max(mostStates, states);
                }
                final long publishedMs = (System.nanoTime() - start) / 1_000_000;
                // The connected publisher vouches for the pod it names last: name another one, so that every churned
                // pod goes silent. All of them (and the joiner) time out, free their numbers and leave the index.
                peer.command("ping after");
                final long gone = names + 1L;
                final long deadline = System.currentTimeMillis() + 30_000;
                while (System.currentTimeMillis() < deadline && (directory.count() > 1
                    || c.value(CounterType.PODS_TIMED_OUT) + c.value(CounterType.PODS_REJECTED) < gone)) {
                    Thread.sleep(20);
                }
                final String summary = names + " names in " + publishedMs + " ms: at most " + mostLive
                    + " ids live, " + mostStates + " writer pod states, per-number arrays of " + mostCapacity
                    + "; numbers handed out " + directory.numbersHandedOut() + "; received "
                    + c.value(CounterType.MESSAGES_RECEIVED) + ", timed out " + c.value(CounterType.PODS_TIMED_OUT)
                    + ", rejected (index full) " + c.value(CounterType.PODS_REJECTED) + ", stale messages "
                    + c.value(CounterType.STALE_POD_MESSAGES) + ", framing errors "
                    + c.value(CounterType.FRAMING_ERRORS) + "; last " + progress;
                System.out.println(summary);

                assertEquals(0, c.value(CounterType.FRAMING_ERRORS), "a framing error is a pod refused: " + summary);
                // Rejected: the index's 256 slots were all taken or still being swept (the last pod may be one).
                assertTrue(c.value(CounterType.PODS_TIMED_OUT) + c.value(CounterType.PODS_REJECTED) >= gone, summary);
                assertTrue(c.value(CounterType.PODS_TIMED_OUT) >= names / 2, "most pods indexed: " + summary);
                assertTrue(mostLive <= bound, summary);
                assertTrue(mostStates <= bound, summary);
                assertTrue(directory.numbersHandedOut() <= bound, summary);
                assertTrue(mostCapacity <= Integer.highestOneBit(bound) * 2, summary);
                assertEquals(1, directory.count(), "only the publisher's last pod is live: " + summary);

                // A new pod after all that churn is indexed and answered, as on a fresh daemon.
                peer.command("store fresh-pod");
                ZmqIngestTest.await("fresh pod indexed", () -> depth(reader, "fresh-pod", base, null) == 25);
                assertEquals(0, depth(reader, "churn-" + (names - 1), base, null));
                int alive = 0;
                for (int slot = 0; slot < reader.maxPods(); slot++) {
                    if (reader.isAlive(slot)) {
                        alive++;
                    }
                }
                assertTrue(alive <= 2, alive + " pods alive in the index");
            }
        }
    }
}
