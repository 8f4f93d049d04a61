package io.kvidx.daemon.lifecycle;

import io.aeron.Aeron;
import io.aeron.Publication;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.publish.KvEventPublisher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.ffm.PosixNative;
import io.kvidx.sbe.events.Medium;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTestAccess.await;
import static io.kvidx.daemon.ingest.zmq.ZmqIngestTestAccess.depth;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each agent thread of a running daemon pins itself to its configured CPU: the test reads every thread's mask back
 * from the kernel ({@code /proc/self/task/<tid>/status} and {@code sched_getaffinity}). A CPU the machine does not
 * have (4096) is counted and logged with its errno, and the agents run on unpinned: events still reach the index.
 */
@Timeout(60)
class AgentPinningTest {
    /** Native thread names: the role names, cut to 15 characters by the kernel. */
    private static final String WRITER_0 = "kvidx-writer-0";
    private static final String WRITER_1 = "kvidx-writer-1";
    private static final String ZMQ = "kvidx-zmq-inges";
    private static final String AERON = "kvidx-aeron-ing";
    private static final String MAINTENANCE = "kvidx-index-mai";
    private static final String EVICTIONS = "kvidx-eviction-";
    /** JeroMQ's threads: {@code kvidx-zmq-io-N}. */
    private static final String IO = "kvidx-zmq-io-";

    @TempDir
    Path dir;

    @Test
    void shouldPinEachAgentThreadToItsCpu() throws Exception {
        final BitSet allowed = PosixNative.threadAffinity(0);
        assertNotNull(allowed);
        final int first = allowed.nextSetBit(0);
        final int last = allowed.length() - 1;
        final String aeronDir = "/dev/shm/kvidx-test-aeron-" + UUID.randomUUID();
        final DaemonContext ctx = context(aeronDir).writers(2);
        ctx.agents().writerCpus(last, first).zmqIngestCpu(last).aeronIngestCpu(first).maintenanceCpu(last)
            .zmqIoCpus(first);
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx)) {
            final Map<String, BitSet> expected = Map.of(WRITER_0, cpus(last), WRITER_1, cpus(first), ZMQ, cpus(last),
                AERON, cpus(first), MAINTENANCE, cpus(last), EVICTIONS, cpus(last));
            await("every agent thread pinned", () -> expected.equals(masks(expected.keySet())));
            for (final Map.Entry<String, Integer> t : tids(expected.keySet()).entrySet()) {
                assertEquals(expected.get(t.getKey()), PosixNative.threadAffinity(t.getValue()),
                    "sched_getaffinity of " + t.getKey());
            }
            // JeroMQ's threads (the ingest agent's I/O thread and reaper, started with its subscription socket).
            await("JeroMQ's threads pinned", () -> {
                final Map<String, BitSet> io = masksByPrefix(IO);
                return io.size() >= 2 && io.values().stream().allMatch(cpus(first)::equals);
            });
            assertEquals(0, daemon.counters().value(CounterType.PIN_FAILURES));
            assertEquals(allowed, PosixNative.threadAffinity(0), "the starting thread keeps its mask");
        }
    }

    @Test
    void shouldCountAndLogAPinToAMissingCpuAndRunOn() throws Exception {
        final BitSet allowed = PosixNative.threadAffinity(0);
        final String aeronDir = "/dev/shm/kvidx-test-aeron-" + UUID.randomUUID();
        final DaemonContext ctx = context(aeronDir);
        ctx.agents().writerCpus(4096).zmqIngestCpu(4096).aeronIngestCpu(4096).maintenanceCpu(4096);
        final Capture base = Capture.load("kv_event_base.json");
        final long[] h = base.blockHashes();
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir));
            Aeron client = Aeron.connect(new Aeron.Context().aeronDirectoryName(aeronDir));
            Publication publication = client.addPublication("aeron:ipc", ctx.aeron().streamId())) {
            // Writer, ZeroMQ ingest, Aeron ingest, maintenance, eviction mirror.
            await("5 pin failures", () -> daemon.counters().value(CounterType.PIN_FAILURES) == 5);
            final String log = daemon.errors().dump();
            for (final String role : List.of("kvidx-writer-0", "kvidx-zmq-ingest", "kvidx-aeron-ingest",
                "kvidx-index-maintenance", "kvidx-eviction-mirror")) {
                assertTrue(log.contains("agent " + role + " could not pin its thread to CPU 4096: sched_setaffinity "
                    + "failed with EINVAL (22); it runs unpinned"), log);
            }
            final List<String> names = List.of(WRITER_0, ZMQ, AERON, MAINTENANCE, EVICTIONS);
            final Map<String, BitSet> masks = masks(names);
            for (final String name : names) {
                assertEquals(allowed, masks.get(name), name + " keeps the mask it inherited");
            }
            // The agents run: an event goes through Aeron ingest and the writer into the index.
            await("publication connected", publication::isConnected);
            final KvEventPublisher pub = new KvEventPublisher(publication, "pinned-pod", "Qwen/Qwen3-0.6B",
                new SleepingMillisIdleStrategy(1));
            assertTrue(pub.register());
            assertTrue(pub.blockStored(h, h.length, false, 0, base.tokenIds(), 16, Medium.GPU, null, 0));
            await("depth 25", () -> depth(reader, "pinned-pod", base, null) == 25);
            assertEquals(5, daemon.counters().value(CounterType.PIN_FAILURES), "counted once per thread");
        }
    }

    private DaemonContext context(final String aeronDir) throws IOException {
        final int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        // The ZeroMQ endpoint has no publisher: its agent runs (and pins itself) all the same.
        final DaemonContext context = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
            .podTimeoutMs(0);
        context.zmq().addEndpoint(new ZmqEndpoint("tcp://127.0.0.1:" + port, "zmq-pod", null, null));
        context.aeron().addChannel("aeron:ipc").dir(aeronDir).termLength(1 << 16);
        return context;
    }

    private static BitSet cpus(final int cpu) {
        final BitSet set = new BitSet();
        set.set(cpu);
        return set;
    }

    /** Thread id of each named thread of this process. */
    private static Map<String, Integer> tids(final Iterable<String> names) throws IOException {
        final Map<String, Integer> tids = new HashMap<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (final Path task : tasks.toList()) {
                final String name = field(task, "Name:");
                for (final String wanted : names) {
                    if (wanted.equals(name)) {
                        tids.put(name, Integer.parseInt(task.getFileName().toString()));
                    }
                }
            }
        }
        return tids;
    }

    /** Cpus_allowed_list of each thread of this process whose name starts with the prefix. */
    private static Map<String, BitSet> masksByPrefix(final String prefix) {
        return masksWhere(name -> name.startsWith(prefix));
    }

    /** Cpus_allowed_list of each named thread of this process, as the kernel reports it. */
    private static Map<String, BitSet> masks(final java.util.Collection<String> names) {
        return masksWhere(names::contains);
    }

    private static Map<String, BitSet> masksWhere(final java.util.function.Predicate<String> wanted) {
        final Map<String, BitSet> masks = new HashMap<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (final Path task : tasks.toList()) {
                final String name = field(task, "Name:");
                final String list = name != null && wanted.test(name) ? field(task, "Cpus_allowed_list:") : null;
                if (list != null) {
                    masks.put(name, parseList(list));
                }
            }
        } catch (final IOException ex) {
            throw new IllegalStateException(ex);
        }
        return masks;
    }

    private static String field(final Path task, final String field) throws IOException {
        try {
            for (final String line : Files.readAllLines(task.resolve("status"))) {
                if (line.startsWith(field)) {
                    return line.substring(field.length()).trim();
                }
            }
        } catch (final NoSuchFileException ex) {
            return null; // the thread ended meanwhile
        }
        return null;
    }

    private static BitSet parseList(final String list) {
        final BitSet cpus = new BitSet();
        for (final String range : list.split(",")) {
            final String[] ends = range.split("-");
            cpus.set(Integer.parseInt(ends[0]), Integer.parseInt(ends[ends.length - 1]) + 1);
        }
        return cpus;
    }
}
