package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pod slot reuse through a {@code kvidx daemon} process with three pod slots ({@code --max-pods 3}): pod A's engine
 * goes away, A times out and is swept; pod C then gets the slot that never held a pod, and pod D, with no such slot
 * left, gets A's old slot under a new generation. All four hold a shared chain to different depths, and each a
 * chain of its own. A reader querying throughout reads each slot's pod entry before and after every query and,
 * whenever both agree (same pod id and generation), checks the answer against that pod: a pod's own chain answered
 * under another pod's name is that pod's blocks attributed to the wrong pod (D's under A's name, or A's under D's),
 * and no pod is deeper in the shared chain than it stored.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SlotReuseTest {
    private static final long POD_TIMEOUT_MS = 1_000;

    @Test
    void shouldNeverAttributeAReusedSlotsBlocksToItsFormerPod() throws Exception {
        final Path work = ChildProcesses.shmDir("kvidx-slots");
        final Path dir = work.resolve("index");
        final TestEngine.Chain chain = TestEngine.Chain.random(11, 24);
        final Map<String, Integer> depths = Map.of("pod-a", 20, "pod-b", 10, "pod-c", 7, "pod-d", 13);
        final Map<String, TestEngine.Chain> own = Map.of("pod-a", TestEngine.Chain.random(12, 8), "pod-b",
            TestEngine.Chain.random(13, 8), "pod-c", TestEngine.Chain.random(14, 8), "pod-d",
            TestEngine.Chain.random(15, 8));
        final List<TestEngine> engines = new ArrayList<>();
        Process daemon = null;
        final AtomicBoolean stop = new AtomicBoolean();
        Thread readerThread = null;
        try {
            for (final String pod : List.of("pod-a", "pod-b", "pod-c", "pod-d")) {
                engines.add(new TestEngine(pod));
            }
            final TestEngine a = engines.get(0);
            final TestEngine b = engines.get(1);
            final TestEngine c = engines.get(2);
            final TestEngine d = engines.get(3);
            final StringBuilder yaml = new StringBuilder("heartbeatIntervalMs: 50\nzmq:\n");
            for (final TestEngine e : engines) {
                // Pods come from the topics: each pod is discovered (and registered) at its engine's first batch.
                yaml.append("  - endpoint: ").append(e.endpoint()).append("\n    replay: ").append(e.replayEndpoint())
                    .append('\n');
            }
            final Path config = work.resolve("daemon.yaml");
            Files.writeString(config, yaml);
            final Path log = work.resolve("daemon.log");
            daemon = ChildProcesses.start(ChildProcesses.kvidx("daemon", "--config", config.toString(), "--dir",
                dir.toString(), "--capacity", "4096", "--max-pods", "3", "--pod-timeout-ms",
                Long.toString(POD_TIMEOUT_MS), "--checkpoint-ms", "20", "--idle", "sleeping"), log);
            final Process running = daemon;
            ChildProcesses.await("daemon ready", 30_000, () -> ChildProcesses.daemonReady(log) || !running.isAlive());
            assertTrue(daemon.isAlive(), () -> ChildProcesses.tail(log, 30));

            try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).attachTimeoutMs(10_000)
                .heartbeatTimeoutMs(5_000))) {
                final int slotA = storeAndAwait(reader, a, chain, depths, own);
                final int slotB = storeAndAwait(reader, b, chain, depths, own);
                assertNotEquals(slotA, slotB);
                final int generationA = reader.pod(slotA).generation();

                final Checker checker = new Checker(reader, chain, depths, own);
                readerThread = Thread.ofPlatform().name("slot-reuse-reader").start(() -> checker.run(stop));

                // A's engine goes away: no batch, no connection, so no heartbeat. A times out, is swept, its slot
                // is freed (its id stays in the slot's entry).
                a.close();
                engines.remove(a);
                ChildProcesses.await("pod A taken down and swept", 10 * POD_TIMEOUT_MS, () -> {
                    final IndexReader.PodInfo info = reader.pod(slotA);
                    return !reader.isAlive(slotA) && info.state() == IndexDescriptor.POD_STATE_FREE;
                });
                assertEquals("pod-a", reader.pod(slotA).podId(), "a freed slot keeps its last pod id");

                final int slotC = storeAndAwait(reader, c, chain, depths, own);
                assertNotEquals(slotA, slotC, "C must get the slot that never held a pod, not A's");
                assertEquals(1, reader.pod(slotC).generation(), "C's slot was never used before");

                final int slotD = storeAndAwait(reader, d, chain, depths, own);
                assertEquals(slotA, slotD, "D must get A's old slot: no never-used slot is left");
                assertEquals(generationA + 1, reader.pod(slotD).generation(), "a reused slot gets a new generation");
                assertEquals("pod-d", reader.pod(slotD).podId());

                // D's removals go through D's own (new) block map: D ends where its own batches leave it.
                d.remove(chain, 10, 13);
                awaitDepth(reader, d, chain, 10);
                assertEquals(10, TestEngine.depth(reader, "pod-b", chain));
                assertEquals(7, TestEngine.depth(reader, "pod-c", chain));
                assertEquals(-1, TestEngine.slotOf(reader, "pod-a"));
                Thread.sleep(500);
                stop.set(true);
                readerThread.join(10_000);
                assertTrue(!readerThread.isAlive(), "reader thread did not stop");
                System.out.println("slot reuse: " + checker.summary());
                assertTrue(checker.violations.isEmpty(), () -> "a reader attributed blocks to the wrong pod:\n  "
                    + String.join("\n  ", checker.violations));
                assertTrue(checker.attributed.get() > 100, checker::summary);
                assertTrue(checker.seen.containsKey("pod-a") && checker.seen.containsKey("pod-d"), checker::summary);
            }
            final int exit = ChildProcesses.stop(daemon);
            assertTrue(exit == 0 || exit == ChildProcesses.SIGTERM_EXIT, "daemon exit " + exit);
            final String out = ChildProcesses.read(log);
            assertTrue(out.contains("kvidx pods timed out: 1\n"), out);
        } finally {
            stop.set(true);
            if (readerThread != null) {
                readerThread.join(10_000);
            }
            ChildProcesses.destroy(daemon);
            engines.forEach(TestEngine::close);
            ChildProcesses.deleteTree(work);
        }
    }

    /** Publishes the engine's stores (its depth of the shared chain, all its own chain) and waits for them. */
    private static int storeAndAwait(final IndexReader reader, final TestEngine engine, final TestEngine.Chain chain,
        final Map<String, Integer> depths, final Map<String, TestEngine.Chain> own) throws InterruptedException {
        engine.store(chain, 0, depths.get(engine.pod));
        engine.store(own.get(engine.pod), 0, own.get(engine.pod).length());
        awaitDepth(reader, engine, chain, depths.get(engine.pod));
        awaitDepth(reader, engine, own.get(engine.pod), own.get(engine.pod).length());
        return TestEngine.slotOf(reader, engine.pod);
    }

    private static void awaitDepth(final IndexReader reader, final TestEngine engine, final TestEngine.Chain chain,
        final int depth) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int seen;
        while ((seen = TestEngine.depth(reader, engine.pod, chain)) != depth && System.nanoTime() < deadline) {
            // A first batch can be lost to ZeroMQ's slow joiner: the next one makes the daemon replay it.
            engine.ping();
            Thread.sleep(20);
        }
        final int last = seen;
        final int slot = TestEngine.slotOf(reader, engine.pod);
        assertEquals(depth, last, () -> engine.pod + " holds " + last + " blocks of the chain in slot " + slot
            + (slot < 0 ? "" : " (" + reader.pod(slot) + ")") + ", its batches leave it " + depth
            + (last > depth ? ": another pod's blocks under its slot?" : ""));
    }

    /** Queries the chains and checks each answer against the pod its slot held for the whole query. */
    private static final class Checker {
        private final IndexReader reader;
        private final TestEngine.Chain chain;
        private final Map<String, Integer> depths;
        private final List<Map.Entry<String, TestEngine.Chain>> own;
        final List<String> violations = new CopyOnWriteArrayList<>();
        final Map<String, AtomicLong> seen = new ConcurrentHashMap<>();
        final AtomicLong attributed = new AtomicLong();
        final AtomicLong ambiguous = new AtomicLong();
        final AtomicLong queries = new AtomicLong();

        Checker(final IndexReader reader, final TestEngine.Chain chain, final Map<String, Integer> depths,
            final Map<String, TestEngine.Chain> own) {
            this.reader = reader;
            this.chain = chain;
            this.depths = depths;
            this.own = List.copyOf(own.entrySet());
        }

        void run(final AtomicBoolean stop) {
            final PrefixResult result = new PrefixResult();
            final int pods = reader.maxPods();
            final IndexReader.PodInfo[] before = new IndexReader.PodInfo[pods];
            int round = 0;
            try {
                while (!stop.get()) {
                    // The shared chain, then each pod's own chain in turn.
                    final int which = round++ % (own.size() + 1);
                    final String owner = which == 0 ? null : own.get(which - 1).getKey();
                    final TestEngine.Chain asked = which == 0 ? chain : own.get(which - 1).getValue();
                    for (int s = 0; s < pods; s++) {
                        final int at = s;
                        before[s] = io.kvidx.daemon.index.TestIndexes.unbusy(() -> reader.pod(at));
                    }
                    try {
                        reader.query(asked.keys(), asked.length(), null, result);
                    } catch (final io.kvidx.client.index.IndexBusyException ex) {
                        continue; // bounded: the writer held a shard; no answer to check
                    }
                    queries.incrementAndGet();
                    for (int i = 0; i < result.count(); i++) {
                        final int slot = result.slot(i);
                        final int depth = result.depth(i);
                        final IndexReader.PodInfo after =
                            io.kvidx.daemon.index.TestIndexes.unbusy(() -> reader.pod(slot));
                        final IndexReader.PodInfo was = before[slot];
                        if (was.generation() != after.generation() || !was.podId().equals(after.podId())) {
                            // The slot changed hands during the query: the answer cannot be attributed.
                            ambiguous.incrementAndGet();
                            continue;
                        }
                        attributed.incrementAndGet();
                        seen.computeIfAbsent(after.podId(), p -> new AtomicLong()).incrementAndGet();
                        if (owner != null && !owner.equals(after.podId())) {
                            report("slot " + slot + " answered " + depth + " blocks of " + owner + "'s own chain"
                                + " while its entry said " + after.podId() + " generation " + after.generation()
                                + " throughout the query: " + owner + "'s blocks attributed to " + after.podId());
                        } else if (owner == null && (depths.get(after.podId()) == null
                            || depth > depths.get(after.podId()))) {
                            // A pod's own store is applied block by block, its sweep removes it block by block:
                            // any depth up to what it stored is its own.
                            report("slot " + slot + " answered depth " + depth + " of the shared chain while its"
                                + " entry said " + after.podId() + " generation " + after.generation()
                                + ", which stored " + depths.get(after.podId()));
                        }
                    }
                    Thread.onSpinWait();
                }
            } catch (final RuntimeException ex) {
                report("reader failed: " + ex);
            }
        }

        private void report(final String what) {
            if (violations.size() < 20) {
                violations.add(what);
            }
        }

        String summary() {
            return queries.get() + " queries, " + attributed.get() + " answers attributed (" + seen + "), "
                + ambiguous.get() + " not attributable (slot changed hands meanwhile), " + violations.size()
                + " violations";
        }
    }
}
