package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.index.TierMapWriter;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * End to end across processes: two real vLLM-format publishers in Python (pyzmq + msgpack) feed the daemon; pod
 * "gpu" keeps the capture's blocks on the GPU, pod "cpu" stores them on the GPU, offloads them to the CPU (older
 * vLLM's tokenless events, or self-describing ones) and drops the GPU copies. A router in another JVM, started
 * without any JVM flag, loads a YAML profile whose cache-affinity scorer is tier-weighted and reads the host tier
 * map the daemon writes: with the same depth, the GPU pod ranks above the CPU pod, and its cache hint says so. Then
 * the GPU pod's blocks move to remote storage and the CPU pod wins; bad media and localities are counted and lose
 * nothing; unknown tokenless blocks are counted; blocks leaving every medium leave the tier map, and a clear
 * empties the pod's region.
 */
@Timeout(180)
class TierMapCrossProcessTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";
    private static final String CELL = "tiers";
    private static final int GPU = TierMapDescriptor.MEDIUM_GPU;
    private static final int CPU = TierMapDescriptor.MEDIUM_CPU;
    private static final int DISK_REMOTE = TierMapDescriptor.MEDIUM_DISK | TierMapDescriptor.MEDIUM_DISK << 4;

    private final List<AutoCloseable> open = new ArrayList<>();
    private Path dir;

    @BeforeAll
    static void python() throws Exception {
        ChildProcesses.requirePython();
    }

    @AfterEach
    void cleanUp() {
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (final Exception ignored) {
                // best effort
            }
        }
        ChildProcesses.deleteTree(dir);
    }

    @ParameterizedTest(name = "{0} offload events, {1} event shape")
    @CsvSource({"tokenless, map", "full, array"})
    void shouldRankTheGpuPodAboveTheCpuPodInARouterOfAnotherProcess(final String mode, final String shape)
        throws Exception {
        dir = ChildProcesses.shmDir("kvidx-tiers");
        final Path log = dir.resolve("test.log");
        final Capture base = Capture.load("kv_event_base.json");
        final long[] keys = new long[32];
        final int n = new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed(MODEL, null, null), base.tokenIds(),
            base.tokenIds().length, keys);
        assertEquals(25, n);
        final String csv = Arrays.stream(keys, 0, n).mapToObj(Long::toString).collect(Collectors.joining(","));

        final PythonPublisher gpu = new PythonPublisher("kv@gpu@" + MODEL, 1000, log, shape);
        open.add(gpu);
        final PythonPublisher cpu = new PythonPublisher("kv@cpu@" + MODEL, 1000, log, shape);
        open.add(cpu);
        final DaemonContext context = new DaemonContext().dir(dir).cell(CELL).shardCount(16).capacityBlocks(8192)
            .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
        context.zmq().addEndpoint(new ZmqEndpoint(gpu.endpoint, null, null, gpu.replayEndpoint))
            .addEndpoint(new ZmqEndpoint(cpu.endpoint, null, null, cpu.replayEndpoint));
        final KvidxDaemon daemon = KvidxDaemon.start(context);
        open.add(daemon);
        final IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell(CELL));
        open.add(reader);
        while (daemon.counters().value(CounterType.PODS_ALIVE) < 2) {
            gpu.command("ping", 10_000);
            cpu.command("ping", 10_000);
            Thread.sleep(20);
        }
        gpu.command("store kv_event_base.json", 10_000);
        cpu.command("store kv_event_base.json", 10_000);
        await("both pods hold 25 blocks", () -> depth(reader, "gpu", keys, n) == 25 && depth(reader, "cpu", keys, n)
            == 25);
        final TierMapWriter tiers = daemon.index().tiers();
        final int gpuSlot = daemon.index().slotOf("gpu");
        final int cpuSlot = daemon.index().slotOf("cpu");
        // Held on the GPU alone, locally: no tier entry (a missing entry reads as exactly that).
        await("no tier entries for GPU-only blocks", () -> allTiers(tiers, cpuSlot, keys, n, -1)
            && allTiers(tiers, gpuSlot, keys, n, -1));

        // Offload to CPU memory, then the GPU copies go: the CPU pod keeps the blocks on the CPU only.
        cpu.command("offload kv_event_base.json 0 25 CPU " + mode + " LOCAL", 10_000);
        await("CPU copies recorded", () -> allTiers(tiers, cpuSlot, keys, n, GPU | CPU));
        cpu.command("evict kv_event_base.json 0 25 GPU", 10_000);
        await("GPU copies dropped", () -> allTiers(tiers, cpuSlot, keys, n, CPU));
        assertEquals(25, depth(reader, "cpu", keys, n), "a block stays indexed while any medium holds it");
        if (mode.equals("tokenless")) {
            assertEquals(1, daemon.counters().value(CounterType.TOKENLESS_STORES));
        }
        assertEquals(0, daemon.counters().value(CounterType.BLOCK_SIZE_MISMATCHES),
            "tokenless offload events are never dropped as block-size mismatches");

        final Path yaml = dir.resolve("tiered.yaml");
        Files.writeString(yaml, """
            profiles:
              tiered:
                inputs: [block-keys]
                prepare: [prefix-query]
                filter: [alive]
                score:
                  - {type: cache-affinity, tiers: true, gpu: 1.0, cpu: 0.8, tier-candidates: 2}
                pick: max-score
            """);
        try (Router router = new Router(dir, yaml, log)) {
            assertEquals("ok gpu tier=gpu;blocks=25;gpu=25;cpu=0;disk=0;unknown=0", router.command("route " + csv),
                "same depth: the GPU pod ranks above the CPU pod");
            assertEquals("ok " + repeat(CPU, n), router.command("tiers cpu " + csv));

            // The GPU pod's blocks move to remote storage (self-describing events): now the CPU pod is better.
            gpu.command("offload kv_event_base.json 0 25 STORAGE full REMOTE", 10_000);
            gpu.command("evict kv_event_base.json 0 25 GPU", 10_000);
            await("remote storage recorded", () -> allTiers(tiers, gpuSlot, keys, n, DISK_REMOTE));
            assertEquals("ok " + repeat(DISK_REMOTE, n), router.command("tiers gpu " + csv));
            assertEquals("ok cpu tier=cpu;blocks=25;gpu=0;cpu=25;disk=0;unknown=0", router.command("route " + csv));

            // Tokenless offloads of blocks the pod never stored: counted, skipped.
            cpu.command("offload kv_event_lora.json 0 5 CPU tokenless", 10_000);
            await("unknown tokenless blocks counted", () -> daemon.counters()
                .value(CounterType.TOKENLESS_UNKNOWN_BLOCKS) == 5);

            // Blocks leaving every medium leave the index and the tier map.
            cpu.command("evict kv_event_base.json 0 25 CPU", 10_000);
            await("CPU pod emptied", () -> depth(reader, "cpu", keys, n) == 0 && tiers.size(cpuSlot) == 0);
            assertEquals("ok " + repeat(-1, n), router.command("tiers cpu " + csv));

            // Bad values: counted, defaulted, nothing lost.
            gpu.command("offload kv_event_base.json 0 25 CPU full int", 10_000);
            gpu.command("offload kv_event_base.json 0 25 CPU full NEARBY", 10_000);
            gpu.command("store-medium kv_event_base.json WEIRD", 10_000);
            gpu.command("store-medium kv_event_base.json int", 10_000);
            await("bad values counted", () -> daemon.counters().value(CounterType.BAD_LOCALITIES) == 2
                && daemon.counters().value(CounterType.UNKNOWN_MEDIA) == 2);
            await("kept on CPU and the other medium", () -> allTiers(tiers, gpuSlot, keys, n,
                DISK_REMOTE | CPU | TierMapDescriptor.MEDIUM_OTHER));
            assertEquals(25, depth(reader, "gpu", keys, n));

            gpu.command("clear", 10_000);
            await("cleared with the pod", () -> depth(reader, "gpu", keys, n) == 0 && tiers.size(gpuSlot) == 0);
            assertEquals("ok " + repeat(-1, n), router.command("tiers gpu " + csv));
        }
    }

    private static String repeat(final int bits, final int n) {
        final int[] a = new int[n];
        Arrays.fill(a, bits);
        return Arrays.toString(a).replace(" ", "");
    }

    private static boolean allTiers(final TierMapWriter tiers, final int slot, final long[] keys, final int n,
        final int bits) {
        for (int i = 0; i < n; i++) {
            if (tiers.tierBits(slot, keys[i]) != bits) {
                return false;
            }
        }
        return true;
    }

    private static int depth(final IndexReader reader, final String pod, final long[] keys, final int n) {
        final PrefixResult result = new PrefixResult();
        for (int attempt = 0; ; attempt++) {
            try {
                reader.query(keys, n, null, result);
                break;
            } catch (final IndexBusyException ex) {
                if (attempt > 100) {
                    throw ex;
                }
            }
        }
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            final IndexReader.PodInfo info = reader.pod(slot);
            if (info != null && pod.equals(info.podId()) && reader.isAlive(slot)) {
                return result.depthOf(slot);
            }
        }
        return -1;
    }

    private static void await(final String what, final BooleanSupplier condition) throws InterruptedException {
        ChildProcesses.await(what, 20_000, condition);
    }

    /** The router process: plain {@code java -cp ... TierRouterMain}, no JVM option at all. */
    private static final class Router implements AutoCloseable {
        private final Process process;
        private final BufferedReader out;
        private final Writer in;
        private final ExecutorService answers = Executors.newSingleThreadExecutor();

        Router(final Path dir, final Path yaml, final Path log) throws Exception {
            process = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"), "-cp",
                System.getProperty("java.class.path"), TierRouterMain.class.getName(), dir.toString(), CELL,
                yaml.toString()).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            assertEquals("ready", read(), () -> "router did not start: " + ChildProcesses.tail(log, 30));
        }

        private String read() throws Exception {
            final Future<String> line = answers.submit(out::readLine);
            return line.get(30, TimeUnit.SECONDS);
        }

        String command(final String line) throws Exception {
            in.write(line + "\n");
            in.flush();
            final String answer = read();
            assertTrue(answer != null && answer.startsWith("ok"), line + " -> " + answer);
            return answer;
        }

        @Override
        public void close() throws Exception {
            try {
                in.write("quit\n");
                in.flush();
            } catch (final java.io.IOException ignored) {
                // gone
            }
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                ChildProcesses.destroy(process);
            }
            answers.shutdownNow();
        }
    }
}
