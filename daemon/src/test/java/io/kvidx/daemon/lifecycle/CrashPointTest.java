package io.kvidx.daemon.lifecycle;

import io.kvidx.daemon.lifecycle.ChildProcesses.Daemon;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SIGKILL at exact points of the daemon's code: a debugger (JDI) stops the {@code kvidx daemon} process when it
 * reaches the point while applying a batch, the test kills it there, restarts it, and the index must end as the
 * batches say. Where {@link CrashCampaignTest} kills at random and relies on numbers, each case here is a crash that
 * random kills hit rarely: between the two halves of applying one event (the pod's engine-hash map and the index),
 * inside a shard deletion (odd seqlock version), inside the repair of such a shard, and while the checkpoint file is
 * written.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CrashPointTest {
    private static final String POD = "cp-pod";
    private static final String INDEX_WRITER = "io.kvidx.daemon.index.IndexWriter";

    private Path work;
    private TestEngine engine;
    private final List<Process> processes = new ArrayList<>();
    private final List<Debugger> debuggers = new ArrayList<>();
    private int runs;
    private final List<String> extraArgs = new ArrayList<>();

    @BeforeEach
    void setUp() throws Exception {
        work = ChildProcesses.shmDir("kvidx-crashpoint");
        engine = new TestEngine(POD);
    }

    @AfterEach
    void tearDown() {
        debuggers.forEach(Debugger::close);
        ChildProcesses.destroy(processes.toArray(Process[]::new));
        engine.close();
        ChildProcesses.deleteTree(work);
    }

    private String[] daemonArgs() {
        final List<String> args = new ArrayList<>(List.of("daemon", "--dir", work.resolve("index").toString(),
            "--capacity", "4096", "--pod-timeout-ms", "0", "--checkpoint-ms", "20", "--idle", "sleeping",
            "--zmq", POD + "@" + TestEngine.MODEL + "=" + engine.endpoint(), "--replay",
            POD + "=" + engine.replayEndpoint()));
        args.addAll(extraArgs);
        return args.toArray(String[]::new);
    }

    /** A running daemon process, with a debugger attached when asked. */
    private Daemon start(final boolean debug) throws Exception {
        final Daemon daemon = startSuspended(debug);
        if (debug) {
            daemon.debugger().resume();
        }
        return daemon;
    }

    /** Starts a daemon; with a debugger, it waits before its main method until the debugger resumes it. */
    private Daemon startSuspended(final boolean debug) throws Exception {
        final Path log = work.resolve("daemon-" + runs++ + ".log");
        return ChildProcesses.startDaemon(daemonArgs(), log, debug, processes, debuggers);
    }

    private static void awaitReady(final Daemon daemon) throws InterruptedException {
        ChildProcesses.awaitReady(daemon);
    }

    private IndexReader reader() {
        return IndexReader.attach(new IndexReaderContext().dir(work.resolve("index")).attachTimeoutMs(10_000)
            .heartbeatTimeoutMs(0));
    }

    /** Waits until the daemon recorded the publisher's progress up to {@code seq} (its checkpoint). */
    private void awaitCheckpoint(final long seq) throws InterruptedException {
        final Path file = work.resolve("index").resolve("default").resolve("state").resolve("publishers");
        ChildProcesses.await("checkpoint of sequence " + seq, 10_000, () -> ChildProcesses.read(file).lines()
            .anyMatch(l -> Long.parseLong(l.split("\t")[0].split("/")[0]) >= seq));
    }

    /** Stops the daemon at the point, runs the action that gets it there, and kills it there. */
    private void killAt(final Daemon daemon, final Debugger.Point point, final Runnable action)
        throws InterruptedException {
        action.run();
        // ZeroMQ's slow joiner may drop a first message: the next live one makes the daemon replay it.
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!point.await(200) && System.nanoTime() < deadline) {
            engine.ping();
        }
        assertTrue(point.await(0), () -> "the daemon never reached " + point + ": "
            + ChildProcesses.tail(daemon.log(), 20));
        assertEquals(ChildProcesses.SIGKILL_EXIT, ChildProcesses.kill(daemon.process()), "SIGKILL exit status");
    }

    /** Restarts the daemon and waits, bounded, for the pod to hold {@code depth} blocks of the chain. */
    private Daemon restartAndExpect(final TestEngine.Chain chain, final int depth, final String crash)
        throws Exception {
        final Daemon daemon = start(false);
        awaitReady(daemon);
        try (IndexReader reader = reader()) {
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            int seen;
            while ((seen = TestEngine.depth(reader, POD, chain)) != depth && System.nanoTime() < deadline) {
                // An engine that keeps publishing (a daemon killed before its first checkpoint of a publisher
                // replays it from its first live message on, not at startup).
                engine.ping();
                Thread.sleep(50);
            }
            final int last = seen;
            assertEquals(depth, last, () -> "after a SIGKILL " + crash + " and a restart the pod holds " + last
                + " blocks of the chain, the batches leave it " + depth + " (" + (last > depth ? "phantom blocks"
                : "lost blocks") + "); restarted daemon:\n" + ChildProcesses.tail(daemon.log(), 20));
        }
        return daemon;
    }

    /** A daemon with the chain's 25 blocks stored and checkpointed. */
    private Daemon stored(final TestEngine.Chain chain, final boolean debug) throws Exception {
        final Daemon daemon = start(debug);
        awaitReady(daemon);
        final long seq = engine.store(chain, 0, chain.length());
        try (IndexReader reader = reader()) {
            ChildProcesses.await("the chain stored", 10_000, () -> {
                if (TestEngine.depth(reader, POD, chain) == chain.length()) {
                    return true;
                }
                // ZeroMQ's slow joiner may drop a first message: the next live one makes the daemon replay it.
                engine.ping();
                sleep(50);
                return false;
            });
        }
        awaitCheckpoint(seq);
        return daemon;
    }

    private static void sleep(final long ms) {
        try {
            Thread.sleep(ms);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void shouldForgetBlocksWhoseRemovalWasKilledBetweenTheBlockMapAndTheIndex() throws Exception {
        final TestEngine.Chain chain = TestEngine.Chain.random(1, 25);
        final Daemon daemon = stored(chain, true);
        final Debugger.Point point = daemon.debugger().breakAtMethod(INDEX_WRITER, "remove", 1);
        killAt(daemon, point, () -> engine.remove(chain, 15, 25));
        restartAndExpect(chain, 15, "at IndexWriter.remove while applying a BlockRemoved");
    }

    @Test
    void shouldIndexBlocksWhoseStoreWasKilledBetweenTheBlockMapAndTheIndex() throws Exception {
        final TestEngine.Chain chain = TestEngine.Chain.random(2, 25);
        final Daemon daemon = start(true);
        awaitReady(daemon);
        final Debugger.Point point = daemon.debugger().breakAtMethod(INDEX_WRITER, "store", 1);
        killAt(daemon, point, () -> engine.store(chain, 0, 25));
        restartAndExpect(chain, 25, "at IndexWriter.store while applying a BlockStored");
    }

    @Test
    void shouldClearAPodWhoseClearWasKilled() throws Exception {
        final TestEngine.Chain chain = TestEngine.Chain.random(3, 25);
        final Daemon daemon = stored(chain, true);
        final Debugger.Point point = daemon.debugger().breakAtMethod(INDEX_WRITER, "clearPod", 1);
        killAt(daemon, point, engine::clear);
        restartAndExpect(chain, 0, "at IndexWriter.clearPod while applying an AllBlocksCleared");
    }

    @Test
    void shouldRepairAShardWhoseDeletionWasKilledAndAShardWhoseRepairWasKilled() throws Exception {
        final TestEngine.Chain chain = TestEngine.Chain.random(4, 25);
        final Daemon daemon = stored(chain, true);
        // Inside a backward-shift deletion: the shard's version is odd.
        final Debugger.Point inDelete = daemon.debugger().breakAtLine("io.kvidx.daemon.index.EntryTable", "delete",
            "final long freedPods", 1);
        killAt(daemon, inDelete, () -> engine.remove(chain, 10, 25));
        // The next daemon finds the odd shard and rebuilds it: killed inside that rebuild, after it made it odd.
        final Daemon repairing = startSuspended(true);
        final Debugger.Point inRepair = repairing.debugger().breakAtLine("io.kvidx.daemon.index.IndexRepair",
            "rebuild", "final int n = g.slotsPerShard;", 1);
        repairing.debugger().resume();
        assertTrue(inRepair.await(30_000), () -> "the restarted daemon did not rebuild a shard: "
            + ChildProcesses.tail(repairing.log(), 20));
        assertEquals(ChildProcesses.SIGKILL_EXIT, ChildProcesses.kill(repairing.process()));
        final Daemon last = restartAndExpect(chain, 10, "inside EntryTable.delete, then inside IndexRepair.rebuild");
        final String opened = ChildProcesses.read(last.log());
        assertTrue(opened.contains("1 shards rebuilt"), () -> "the last daemon should rebuild the shard: " + opened);
    }

    @Test
    void shouldResumeFromTheLastCheckpointWhenKilledWhileWritingIt() throws Exception {
        final TestEngine.Chain chain = TestEngine.Chain.random(5, 25);
        final Daemon daemon = stored(chain, true);
        final Debugger.Point point = daemon.debugger().breakAtLine("io.kvidx.daemon.state.PublisherProgress", "write",
            "Files.move(temp, file", 1);
        killAt(daemon, point, () -> engine.remove(chain, 5, 25));
        final Daemon last = restartAndExpect(chain, 5, "while the checkpoint file was written");
        // What the killed write left behind: its temporary file (the checkpoint itself is replaced atomically).
        try (var files = Files.list(work.resolve("index").resolve("default").resolve("state"))) {
            final List<String> names = files.map(p -> p.getFileName().toString()).sorted().toList();
            System.out.println("state dir after a kill inside PublisherProgress.write: " + names);
        }
        assertTrue(last.process().isAlive());
    }

    @Test
    void shouldNotLeakABlockWhoseBlockMapEvictionWasKilled() throws Exception {
        // The pod's block map is full: storing b evicts five of a's mappings, one at a time (a map this small has
        // no room for batch choices), each block leaving the index.
        assertNoLeakWhenAnEvictionIsKilled(20, 6, "at IndexWriter.remove while a full block map evicted a mapping");
    }

    @Test
    void shouldNotLeakBlocksWhoseBatchEvictionWasKilled() throws Exception {
        // A map large enough for batch choices (VllmApplier.makeRoom): the five victims leave the index in one
        // remove, then their mappings go; killed inside that remove.
        assertNoLeakWhenAnEvictionIsKilled(200, 9,
            "at IndexWriter.remove while a full block map evicted a batch of mappings");
    }

    /**
     * Fills a pod's block map of {@code maxBlocks}, kills the daemon inside the index removal of the evictions that
     * storing 5 more blocks needs, restarts it, and checks the pod holds exactly its map's blocks in the index.
     */
    private void assertNoLeakWhenAnEvictionIsKilled(final int maxBlocks, final long seed, final String where)
        throws Exception {
        extraArgs.addAll(List.of("--pod-max-blocks", Integer.toString(maxBlocks)));
        final TestEngine.Chain a = TestEngine.Chain.random(seed, maxBlocks);
        final TestEngine.Chain b = TestEngine.Chain.random(seed + 1, 5);
        final Daemon daemon = stored(a, true);
        final Debugger.Point point = daemon.debugger().breakAtMethod(INDEX_WRITER, "remove", 1);
        killAt(daemon, point, () -> engine.store(b, 0, 5));
        restartAndExpect(b, 5, where);
        try (IndexReader reader = reader()) {
            assertEquals(maxBlocks, heldOf(reader, a, b), "blocks of the pod indexed: its block map holds "
                + maxBlocks + " mappings (--pod-max-blocks); more would be blocks no removal can reach");
        }
    }

    /** The blocks of the chains the pod holds in the index. */
    private static int heldOf(final IndexReader reader, final TestEngine.Chain... chains) {
        final int slot = TestEngine.slotOf(reader, POD);
        final long[] words = new long[4];
        int held = 0;
        for (final TestEngine.Chain chain : chains) {
            for (final long key : chain.keys()) {
                io.kvidx.daemon.index.TestIndexes.unbusy(() -> reader.lookup(key, words));
                held += (int) (words[slot >>> 6] >>> slot) & 1;
            }
        }
        return held;
    }

    @Test
    void shouldIndexOnlyWhatTheBlockMapHoldsWhenOneBatchOverflowsIt() throws Exception {
        extraArgs.addAll(List.of("--pod-max-blocks", "20"));
        final TestEngine.Chain chain = TestEngine.Chain.random(8, 25);
        final Daemon daemon = start(false);
        awaitReady(daemon);
        engine.store(chain, 0, 25);
        try (IndexReader reader = reader()) {
            ChildProcesses.await("the pod registered", 10_000, () -> {
                engine.ping();
                sleep(50);
                return TestEngine.slotOf(reader, POD) >= 0 && held(reader, chain) > 0;
            });
            Thread.sleep(300);
            assertEquals(20, held(reader, chain), "blocks of the pod indexed after one batch of 25 with"
                + " --pod-max-blocks 20: more are blocks no mapping reaches (a removal cannot take them out)");
            engine.remove(chain, 0, 25);
            ChildProcesses.await("the removal applied", 10_000, () -> {
                engine.ping();
                sleep(50);
                return held(reader, chain) < 20;
            });
            Thread.sleep(300);
            assertEquals(0, held(reader, chain), "blocks of the pod indexed after it removed all 25");
        }
    }

    private static int held(final IndexReader reader, final TestEngine.Chain chain) {
        final int slot = TestEngine.slotOf(reader, POD);
        final long[] words = new long[4];
        int held = 0;
        for (final long key : chain.keys()) {
            io.kvidx.daemon.index.TestIndexes.unbusy(() -> reader.lookup(key, words));
            held += (int) (words[slot >>> 6] >>> slot) & 1;
        }
        return held;
    }
}
