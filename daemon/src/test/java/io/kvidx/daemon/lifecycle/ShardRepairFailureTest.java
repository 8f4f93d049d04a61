package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.lifecycle.ChildProcesses.Daemon;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer that fails in the middle of a change either repairs its shard or stops the daemon (issue 26), driven in a
 * real {@code kvidx daemon} process fed by a real engine over ZeroMQ. A debugger (JDI) stops the process inside a
 * shard deletion, while the shard's version is odd, and arms the index's test hooks there with a fault that throws
 * ({@link Debugger#setFieldsToNew}): nothing in the daemon is built or called by the test.
 *
 * <ol>
 *   <li>The deletion fails and its repair succeeds: the error is counted and logged, and the writer goes on (a later
 *   batch is indexed).</li>
 *   <li>The next deletion fails and its repair fails too ({@code ShardRepairException}): the writer agent turns it
 *   into an {@code AgentTerminationException}, its runner's {@code AgentErrorHandler} tells the daemon, and the
 *   {@code kvidx daemon} command stops with the reason on stderr and exit status 1, rather than run on with a
 *   shard no writer will unlock.</li>
 * </ol>
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShardRepairFailureTest {
    private static final String POD = "repair-pod";
    private static final String ENTRY_TABLE = "io.kvidx.daemon.index.EntryTable";
    /** Inside {@code EntryTable.delete}, after the shard's version was made odd, where the hook is read. */
    private static final String FAULT_LINE = "final Runnable fault = deleteFault;";

    private Path work;
    private TestEngine engine;
    private final List<Process> processes = new ArrayList<>();
    private final List<Debugger> debuggers = new ArrayList<>();

    @BeforeEach
    void setUp() throws Exception {
        work = ChildProcesses.shmDir("kvidx-repairfail");
        engine = new TestEngine(POD);
    }

    @AfterEach
    void tearDown() {
        debuggers.forEach(Debugger::close);
        ChildProcesses.destroy(processes.toArray(Process[]::new));
        engine.close();
        ChildProcesses.deleteTree(work);
    }

    @Test
    void shouldStopTheDaemonProcessWhenAShardRepairFails() throws Exception {
        final Daemon daemon = ChildProcesses.startDaemon(new String[] {"daemon", "--dir",
            work.resolve("index").toString(), "--capacity", "4096", "--pod-timeout-ms", "0", "--idle", "sleeping",
            "--zmq", POD + "@" + TestEngine.MODEL + "=" + engine.endpoint(), "--replay",
            POD + "=" + engine.replayEndpoint()}, work.resolve("daemon.log"), true, processes, debuggers);
        final Debugger debugger = daemon.debugger();
        debugger.resume();
        ChildProcesses.awaitReady(daemon);
        final TestEngine.Chain chain = TestEngine.Chain.random(26, 25);
        engine.store(chain, 0, chain.length());
        try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(work.resolve("index"))
            .attachTimeoutMs(10_000).heartbeatTimeoutMs(0))) {
            awaitDepth(reader, chain, chain.length(), daemon);

            // 1. A deletion fails, its repair succeeds: counted, and the writer goes on.
            final Debugger.Point first = debugger.breakAtLine(ENTRY_TABLE, "delete", FAULT_LINE, 1);
            reach(daemon, first, () -> engine.remove(chain, 20, 25));
            debugger.setFieldsToNew(first, InjectedFault.class.getName(), "deleteFault");
            debugger.resume();
            final TestEngine.Chain later = TestEngine.Chain.random(27, 5);
            engine.store(later, 0, later.length());
            awaitDepth(reader, later, later.length(), daemon);
            assertTrue(daemon.process().isAlive(), () -> "a repaired shard must not stop the daemon: "
                + ChildProcesses.tail(daemon.log(), 30));
            assertTrue(ChildProcesses.read(daemon.log()).contains("injected by a debugger"),
                () -> "the failed change is logged: " + ChildProcesses.tail(daemon.log(), 30));

            // 2. The next deletion fails and so does its repair: the daemon process stops, exit status 1.
            final Debugger.Point second = debugger.breakAtLine(ENTRY_TABLE, "delete", FAULT_LINE, 1);
            reach(daemon, second, () -> engine.remove(chain, 10, 15));
            debugger.setFieldsToNew(second, InjectedFault.class.getName(), "repairFault");
            debugger.resume();
        }
        assertTrue(daemon.process().waitFor(30, TimeUnit.SECONDS), () -> "the daemon still runs with a shard left"
            + " locked: " + ChildProcesses.tail(daemon.log(), 30));
        final String log = ChildProcesses.read(daemon.log());
        assertEquals(1, daemon.process().exitValue(), () -> "exit status after a failed repair: "
            + ChildProcesses.tail(daemon.log(), 30));
        assertTrue(log.contains("kvidx daemon: stopping after a fatal error: kvidx-writer-0 stopped: shard "), log);
        assertTrue(log.contains(" left locked: a change failed (java.lang.IllegalStateException: injected by a"
            + " debugger"), log);
        assertTrue(log.contains("kvidx agent errors: 2\n"), () -> "both failures counted: " + log);
    }

    /** Runs the action and waits, bounded, until the daemon stops at the point. */
    private void reach(final Daemon daemon, final Debugger.Point point, final Runnable action)
        throws InterruptedException {
        action.run();
        // ZeroMQ's slow joiner may drop a first message: the next live one makes the daemon replay it.
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!point.await(200) && System.nanoTime() < deadline) {
            engine.ping();
        }
        assertTrue(point.await(0), () -> "the daemon never reached " + point + ": "
            + ChildProcesses.tail(daemon.log(), 20));
    }

    private void awaitDepth(final IndexReader reader, final TestEngine.Chain chain, final int depth,
        final Daemon daemon) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (TestEngine.depth(reader, POD, chain) != depth && System.nanoTime() < deadline) {
            engine.ping();
            Thread.sleep(50);
        }
        assertEquals(depth, TestEngine.depth(reader, POD, chain), () -> "blocks of the chain indexed: "
            + ChildProcesses.tail(daemon.log(), 20));
    }
}
