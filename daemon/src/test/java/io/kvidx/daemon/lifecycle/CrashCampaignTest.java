package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Crash campaign: real Python vLLM-format publishers (PUB + ROUTER replay, several pods per publisher, one topic
 * per pod) stream a deterministic random mix of BlockStored / BlockRemoved / AllBlocksCleared batches into a real
 * {@code kvidx daemon} process, which is killed with SIGKILL at random points (while events flow, and also while it
 * starts, attaches, repairs and replays) and restarted, again and again. Reader processes query the index all the
 * while.
 *
 * <p>After the publishers stop and the last daemon catches up, the index must equal the reference model of every
 * event sent ({@link KvStreamModel}): every router key held by exactly the pods the events leave holding it, nothing
 * else indexed. The readers must never have seen a torn answer (a pinned document's depth changing once seen, a
 * depth deeper than any state published before the answer, a pod moving slots) and no query may outlast the
 * reader's bound (the heartbeat timeout plus a margin).
 */
class CrashCampaignTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";
    /** Readers' heartbeat timeout: a query on a shard a killed daemon left odd gives up after it. */
    private static final long HEARTBEAT_TIMEOUT_MS = 2_000;
    /** The longest a query may take: the heartbeat timeout, a heartbeat check's spins and scheduling slack. */
    private static final long QUERY_BOUND_MS = HEARTBEAT_TIMEOUT_MS + 3_000;

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldRecoverEveryBlockAcrossSigkillRestarts() throws Exception {
        campaign(0xC0FFEEL, 6, 1, 150);
    }

    /** The control: the same stream and checks without a kill (a failure here is the harness's, not recovery's). */
    @Test
    @Tag("slow")
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldMatchTheModelWithoutKills() throws Exception {
        campaign(0xC0FFEEL, 0, 1, 150);
    }

    @Test
    @Tag("slow")
    @Timeout(value = 900, unit = TimeUnit.SECONDS)
    void shouldRecoverEveryBlockAcrossAHundredSigkillRestarts() throws Exception {
        campaign(0xDEC0DEL, 100, 2, 100);
    }

    /** One daemon run of the campaign: how long it lived and how it ended. */
    private record Run(int cycle, long aliveMs, boolean ready, int exit, String opened) {
    }

    private static void campaign(final long seed, final int cycles, final int readers, final int rate)
        throws Exception {
        ChildProcesses.requirePython();
        final SplittableRandom random = new SplittableRandom(seed);
        final Path work = ChildProcesses.shmDir("kvidx-crash");
        final Path logs = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "crash-campaign");
        final Path dir = work.resolve("index");
        final List<Process> children = new ArrayList<>();
        final List<Run> runs = new ArrayList<>();
        boolean passed = false;
        final List<String> pods1 = List.of("cc-a", "cc-b", "cc-c");
        final List<String> pods2 = List.of("cc-d", "cc-e");
        try (PythonPublisher p1 = new PythonPublisher("kv@" + pods1.get(0) + "@" + MODEL, 1_000_000,
            logs.resolve("publisher-1.log"));
            PythonPublisher p2 = new PythonPublisher("kv@" + pods2.get(0) + "@" + MODEL, 1_000_000,
                logs.resolve("publisher-2.log"))) {
            p1.command(String.join(" ", "stream", Long.toString(seed), "100000000", Integer.toString(rate),
                String.join(",", pods1), MODEL, logs.resolve("docs-1").toString(), logs.resolve("log-1").toString()),
                10_000);
            p2.command(String.join(" ", "stream", Long.toString(seed + 1), "100000000", Integer.toString(rate),
                String.join(",", pods2), MODEL, logs.resolve("docs-2").toString(), logs.resolve("log-2").toString()),
                10_000);
            final Path config = logs.resolve("daemon.yaml");
            Files.writeString(config, String.join("\n", "heartbeatIntervalMs: 100", "replayTimeoutMs: 2000", "zmq:",
                "  - endpoint: " + p1.endpoint, "    replay: " + p1.replayEndpoint,
                "  - endpoint: " + p2.endpoint, "    replay: " + p2.replayEndpoint, ""));
            final String[] daemonArgs = {"daemon", "--config", config.toString(), "--dir", dir.toString(),
                "--capacity", "8192", "--pod-timeout-ms", "0", "--checkpoint-ms", "20", "--pod-max-blocks", "4096",
                "--writers", "2", "--idle", "sleeping"};

            final Path stop = logs.resolve("readers.stop");
            final List<Process> readerProcesses = new ArrayList<>();
            for (int r = 0; r < readers; r++) {
                final Process reader = ChildProcesses.start(ChildProcesses.java(CampaignReaderMain.class.getName(),
                    dir.toString(), logs.resolve("reader-" + r + ".out").toString(), stop.toString(), "850",
                    Long.toString(HEARTBEAT_TIMEOUT_MS), Long.toString(seed + 10 + r),
                    logs.resolve("docs-1").toString(), logs.resolve("docs-2").toString()),
                    logs.resolve("reader-" + r + ".log"));
                children.add(reader);
                readerProcesses.add(reader);
            }

            for (int c = 0; c < cycles; c++) {
                final int cycle = c;
                final Path log = logs.resolve("daemon-" + cycle + ".log");
                final long started = System.nanoTime();
                final Process daemon = ChildProcesses.start(ChildProcesses.kvidx(daemonArgs), log);
                children.add(daemon);
                final boolean waitReady = random.nextInt(10) >= 3;
                if (waitReady) {
                    ChildProcesses.await("daemon " + cycle + " ready", 30_000, () -> ChildProcesses.daemonReady(log)
                        || !daemon.isAlive());
                    assertTrue(daemon.isAlive(), () -> "daemon " + cycle + " died: " + ChildProcesses.tail(log, 40));
                    Thread.sleep(100 + random.nextInt(1400));
                } else {
                    // Anywhere in its start: JVM start, attach, repair, replay.
                    Thread.sleep(random.nextInt(1500));
                }
                final boolean ready = ChildProcesses.daemonReady(log);
                final int exit = ChildProcesses.kill(daemon);
                runs.add(new Run(cycle, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started), ready, exit,
                    opened(log)));
                assertEquals(ChildProcesses.SIGKILL_EXIT, exit, () -> "daemon " + cycle + " was not killed by SIGKILL"
                    + " (exit " + exit + "): " + ChildProcesses.tail(log, 40));
                Thread.sleep(random.nextInt(300));
            }
            // The last daemon is not killed: it recovers, follows the live stream a little, then catches up.
            final Path finalLog = logs.resolve("daemon-final.log");
            final Process daemon = ChildProcesses.start(ChildProcesses.kvidx(daemonArgs), finalLog);
            children.add(daemon);
            ChildProcesses.await("final daemon ready", 30_000, () -> ChildProcesses.daemonReady(finalLog)
                || !daemon.isAlive());
            assertTrue(daemon.isAlive(), () -> "final daemon died: " + ChildProcesses.tail(finalLog, 40));
            Thread.sleep(cycles == 0 ? 5_000 : 1_000);
            final long sent1 = Long.parseLong(p1.command("stream-stop", 30_000).split(" ")[2]);
            final long sent2 = Long.parseLong(p2.command("stream-stop", 30_000).split(" ")[2]);
            // An empty batch on each publisher's first pod, as an engine sends now and then: a daemon that never
            // recorded a publisher's progress replays it from 0 on its first live message.
            p1.command("ping", 10_000);
            p2.command("ping", 10_000);

            final KvStreamModel model = new KvStreamModel();
            final int offset1 = model.addDocs(logs.resolve("docs-1"));
            final int offset2 = model.addDocs(logs.resolve("docs-2"));
            model.applyLog(logs.resolve("log-1"), offset1, pods1);
            model.applyLog(logs.resolve("log-2"), offset2, pods2);
            assertEquals(sent1 + sent2, model.batches, "batches logged");

            final List<String> diff = new ArrayList<>();
            final long catchUpMs;
            try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).attachTimeoutMs(10_000)
                .heartbeatTimeoutMs(HEARTBEAT_TIMEOUT_MS))) {
                final long t0 = System.nanoTime();
                final long deadline = t0 + TimeUnit.SECONDS.toNanos(30);
                do {
                    diff.clear();
                    diff.addAll(compare(reader, model));
                    if (!diff.isEmpty()) {
                        Thread.sleep(100);
                    }
                } while (!diff.isEmpty() && System.nanoTime() < deadline);
                catchUpMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertEquals(0, reader.evictions(), "the geometry must hold every block (no eviction): the model"
                    + " does not evict");
            }
            final String runsText = describe(runs);
            assertTrue(diff.isEmpty(), () -> "index differs from the model of the " + model.batches + " batches ("
                + model.events + " events) sent, after " + cycles + " SIGKILL restarts:\n  "
                + String.join("\n  ", diff.subList(0, Math.min(60, diff.size()))) + (diff.size() > 60 ? "\n  ... "
                + (diff.size() - 60) + " more" : "") + "\nruns:\n" + runsText + "\nlogs in " + logs);

            Files.writeString(stop, "stop");
            for (int i = 0; i < readers; i++) {
                final int r = i;
                final Process reader = readerProcesses.get(r);
                final Path readerLog = logs.resolve("reader-" + r + ".log");
                assertTrue(reader.waitFor(60, TimeUnit.SECONDS), "reader " + r + " did not stop (hung?)");
                assertEquals(0, reader.exitValue(), () -> "reader " + r + ": " + ChildProcesses.tail(readerLog, 40));
                checkReader(logs.resolve("reader-" + r + ".out"), model, r, runsText);
            }
            final int exit = ChildProcesses.stop(daemon);
            final String out = ChildProcesses.read(finalLog);
            assertTrue(exit == 0 || exit == ChildProcesses.SIGTERM_EXIT, () -> "final daemon exit " + exit + ": "
                + out);
            // Not "unknown parents" nor "unknown removals": a restarted daemon re-applies the batches after its last
            // checkpoint, and a re-applied BlockStored whose parent a later batch removed is dropped (harmlessly: that
            // batch removed its blocks too). The model comparison above is what counts.
            for (final String counter : List.of("kvidx replay failures", "kvidx agent errors", "kvidx decode errors",
                "kvidx events dropped", "kvidx block map evictions", "kvidx pods rejected", "kvidx framing errors")) {
                assertTrue(out.contains(counter + ": 0\n"), () -> counter + " is not 0 in the final daemon:\n" + out);
            }
            System.out.println("crash campaign: " + cycles + " SIGKILL restarts, " + model.batches + " batches, "
                + model.events + " events, caught up in " + catchUpMs + " ms\n" + runsText);
            passed = true;
        } finally {
            ChildProcesses.destroy(children.toArray(Process[]::new));
            ChildProcesses.deleteTree(work);
            if (passed) {
                ChildProcesses.deleteTree(logs);
            } else {
                System.err.println("crash campaign logs kept in " + logs);
            }
        }
    }

    /** The line the daemon logs when it opened the index (created or re-attached, and the repair). */
    private static String opened(final Path log) {
        return ChildProcesses.read(log).lines().filter(l -> l.startsWith("kvidx: created")
            || l.startsWith("kvidx: re-attached")).findFirst().orElse("(killed before it opened the index)");
    }

    private static String describe(final List<Run> runs) {
        final StringBuilder b = new StringBuilder();
        for (final Run r : runs) {
            b.append("  run ").append(r.cycle()).append(": killed after ").append(r.aliveMs()).append(" ms")
                .append(r.ready() ? " (running)" : " (starting)").append(", exit ").append(r.exit()).append("; ")
                .append(r.opened()).append('\n');
        }
        return b.toString();
    }

    /**
     * @return every difference between the index and the model: per router key of every document, the pods that
     * hold it, and the number of entries.
     */
    private static List<String> compare(final IndexReader reader, final KvStreamModel model) {
        final List<String> diff = new ArrayList<>();
        final Map<String, Integer> slots = new HashMap<>();
        final Map<Integer, String> pods = new HashMap<>();
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            if (reader.isAlive(slot)) {
                final int at = slot;
                final String pod = io.kvidx.daemon.index.TestIndexes.unbusy(() -> reader.pod(at)).podId();
                slots.put(pod, slot);
                pods.put(slot, pod);
            }
        }
        for (final String pod : model.held.keySet()) {
            if (!slots.containsKey(pod)) {
                diff.add("pod " + pod + " is not alive in the index");
            }
        }
        final Map<Long, Set<String>> expected = model.holders();
        final Set<Long> keys = new TreeSet<>();
        model.docs.forEach(d -> {
            for (final long k : d.keys()) {
                keys.add(k);
            }
        });
        final long[] words = new long[4];
        for (final long key : keys) {
            io.kvidx.daemon.index.TestIndexes.unbusy(() -> reader.lookup(key, words));
            final Set<String> actual = new TreeSet<>();
            for (int slot = 0; slot < reader.maxPods(); slot++) {
                if ((words[slot >>> 6] & (1L << slot)) != 0) {
                    actual.add(pods.getOrDefault(slot, "slot-" + slot));
                }
            }
            final Set<String> want = expected.getOrDefault(key, Set.of());
            if (!want.equals(actual)) {
                final Set<String> lost = new TreeSet<>(want);
                lost.removeAll(actual);
                final Set<String> phantom = new TreeSet<>(actual);
                phantom.removeAll(want);
                diff.add(model.where(key) + ": " + (lost.isEmpty() ? "" : "lost for " + lost + " ")
                    + (phantom.isEmpty() ? "" : "phantom for " + phantom));
            }
        }
        if (reader.entryCount() != expected.size()) {
            diff.add("index holds " + reader.entryCount() + " entries, the model " + expected.size()
                + " distinct held keys (" + (reader.entryCount() - expected.size()) + " unexplained)");
        }
        return diff;
    }

    /** Checks a reader's output against the model: every answer allowed by a state published before it. */
    private static void checkReader(final Path out, final KvStreamModel model, final int r, final String runs)
        throws IOException {
        final Map<String, Long> stats = new HashMap<>();
        final Map<Integer, String> slotPods = new HashMap<>();
        final List<String> violations = new ArrayList<>();
        long observations = 0;
        for (final String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
            final String[] f = line.split(" ", 3);
            switch (f[0]) {
                case "stat" -> stats.put(f[1], Long.parseLong(f[2]));
                case "pod" -> slotPods.put(Integer.parseInt(f[1]), f[2]);
                case "violation" -> violations.add(line);
                case "obs" -> {
                    observations++;
                    final String[] o = line.split(" ");
                    final int slot = Integer.parseInt(o[1]);
                    final int doc = Integer.parseInt(o[2]);
                    final int depth = Integer.parseInt(o[3]);
                    final long micros = Long.parseLong(o[4]);
                    final String pod = slotPods.get(slot);
                    if (pod == null || !model.held.containsKey(pod)) {
                        violations.add("answer for slot " + slot + " (" + pod + "), not a pod of the campaign");
                        continue;
                    }
                    final int allowed = model.maxDepthUpTo(pod, doc, micros);
                    if (depth > allowed && violations.size() < 50) {
                        violations.add(pod + " doc " + doc + ": depth " + depth + " seen at " + micros
                            + " µs, deepest published before: " + allowed);
                    }
                }
                default -> violations.add("unreadable line " + line);
            }
        }
        System.out.println("reader " + r + ": " + stats + ", " + observations + " distinct answers");
        assertTrue(violations.isEmpty(), () -> "reader " + r + " saw illegal answers:\n  "
            + String.join("\n  ", violations) + "\nruns:\n" + runs);
        assertTrue(stats.getOrDefault("queries", 0L) > 1_000, "reader " + r + " queried " + stats);
        assertEquals(0, stats.getOrDefault("replaced", -1L), "the daemon re-attaches: the file is never replaced");
        assertEquals(0, stats.getOrDefault("epochChanges", -1L), "the daemon re-attaches: the epoch stays");
        assertTrue(stats.get("maxQueryMicros") < QUERY_BOUND_MS * 1000, () -> "reader " + r + ": a query took "
            + stats.get("maxQueryMicros") + " µs, bound " + QUERY_BOUND_MS + " ms");
    }
}
