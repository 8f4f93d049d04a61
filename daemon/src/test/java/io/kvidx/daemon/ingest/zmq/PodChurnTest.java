package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.index.TestIndexes;
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
 *
 * <p><b>Refusals.</b> The index refuses a pod only when every one of its {@value #MAX_PODS} slots is alive or still
 * draining ({@code PodTable.register}: {@code PodCapacityExceededException}, counted as rejected). A pod holds its
 * slot from its batch until its writer's timeout check finds it silent (the pod timeout plus at most one check
 * interval, {@code WriterAgent.TIMEOUT_CHECK_INTERVAL_MS}: 100 + 100 ms), then while one sweep pass clears its bits
 * (16 small shards, milliseconds). At {@code rate} names/s a daemon that keeps up therefore holds about
 * {@code rate * 0.2} slots (40 at 200/s, 140 at 700/s, out of 256), and the protocol indexes every pod: the test
 * requires no refusal. The only way to a refusal is a daemon that fell behind: its writer (or the sweeping
 * maintenance thread) starved long enough for the remaining slots to fill ((256 - 40) / 200 = 1.1 s at 200/s). An
 * alive pod holds its pod id until it times out, and a backlog's ids are held from the moment the transport hears
 * them, so such a stall shows in the sampled ids live (or slots draining) reaching the free slots; only then are
 * refusals allowed (and reported). A refusal with the sampled ids live plus the slots draining below
 * {@value #MAX_PODS} fails the test: slots kept too long, a sweep that does not free them, a refusal for any other
 * reason. Before this bound the test allowed half the pods refused. At 400 names/s the daemon on the development
 * VM (two cores shared with other builds, load 5-6) fell 1.9-3 s behind in three runs of four (751-1,237 ids live,
 * 1,064-2,030 refusals) and kept up in one (158 ids live, no refusal); at 200/s it kept up in two runs of three
 * (at most 136 and 210 ids live) and fell behind in one (316 ids live, 38 refusals, allowed), so the short test runs
 * at 200/s, where the bound applies more often than not on that host.
 */
class PodChurnTest {
    private static final String SCRIPT = "src/test/python/pod_churn_publisher.py";
    private static final long POD_TIMEOUT_MS = 100;
    private static final int MAX_PODS = 256;

    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    /** More names than the 4,096 the daemon of before could ever number, in about 25 s. */
    @Test
    @Timeout(60)
    void shouldKeepTakingNewPodsAfterMoreNamesThanTheOldLimit() throws Exception {
        churn(5_000, 200, 1_000);
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

    /** @return the index's slots whose pod is down and whose bits are still being swept. */
    private static int draining(final IndexReader reader) {
        int draining = 0;
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            final int s = slot;
            if (TestIndexes.unbusy(() -> reader.pod(s)).state() == IndexDescriptor.POD_STATE_DRAINING) {
                draining++;
            }
        }
        return draining;
    }

    /**
     * @param names distinct pod names the publisher goes through.
     * @param rate  names (batches) per second.
     * @param bound most pods the directory and the writers may hold at once.
     */
    private void churn(final int names, final int rate, final int bound) throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        try (PyPeer peer = new PyPeer(SCRIPT, "--model", MODEL)) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .maxPods(MAX_PODS).podTimeoutMs(POD_TIMEOUT_MS).heartbeatIntervalMs(50).idleStrategy("backoff");
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
                int mostDraining = 0;
                int mostBusy = 0;
                String progress = "";
                while (!(progress = peer.command("churn-wait 0.02")).startsWith("ok done")) {
                    final int live = directory.count();
                    final int draining = draining(reader);
                    mostLive = Math.max(mostLive, live);
                    mostDraining = Math.max(mostDraining, draining);
                    mostBusy = Math.max(mostBusy, live + draining);
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
                    + c.value(CounterType.FRAMING_ERRORS) + "; sampled every 20 ms: slots draining at most "
                    + mostDraining + ", ids live + slots draining at most " + mostBusy + " of " + MAX_PODS
                    + "; last " + progress;
                System.out.println(summary);

                assertEquals(0, c.value(CounterType.FRAMING_ERRORS), "a framing error is a pod refused: " + summary);
                // Every pod was indexed and timed out, or refused (the index's slots all alive or draining).
                assertTrue(c.value(CounterType.PODS_TIMED_OUT) + c.value(CounterType.PODS_REJECTED) >= gone, summary);
                // A refusal needs all MAX_PODS slots alive or draining; an alive slot's pod holds its id, so the
                // sampled ids live plus slots draining reach MAX_PODS around any refusal (class comment).
                if (mostBusy < MAX_PODS) {
                    assertEquals(0, c.value(CounterType.PODS_REJECTED), "the daemon kept up (at most " + mostBusy
                        + " ids live + slots draining of " + MAX_PODS + "), so every pod must be indexed: "
                        + summary);
                } else {
                    System.out.println("the daemon fell behind (the host starved it): refusals allowed: " + summary);
                }
                assertTrue(mostLive <= bound, summary);
                assertTrue(mostStates <= bound, summary);
                assertTrue(directory.numbersHandedOut() <= bound, summary);
                assertTrue(mostCapacity <= Integer.highestOneBit(bound) * 2, summary);
                // Every churned pod left (timed out or refused, above); the publisher's last pod stays unless a
                // starved host let its 100 ms timeout pass between two of the agent's 50 ms heartbeats (seen on a
                // loaded clean clone: 5,002 timed out, none live), so at most that one is live.
                assertTrue(directory.count() <= 1, "only the publisher's last pod may be live: " + summary);

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
