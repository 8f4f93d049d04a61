package io.kvidx.bench.trace;

import io.kvidx.bench.BenchFlags;
import io.kvidx.bench.BenchMain;
import io.kvidx.bench.Json;
import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ops.CountersFile;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ToLongFunction;

/**
 * One point of the rate sweep, through the real ingestion path: a {@code kvidx daemon} in its own JVM receives
 * this process's events ({@link EventTransport}: vLLM batches on JeroMQ PUB sockets, pods spread over a few sockets,
 * topic {@code kv@<pod>@<model>}; or kvidx SBE messages on an Aeron publication), a router JVM
 * ({@link TraceRouter}) queries the daemon's index through ipc-client, and this process sends each request's batch
 * at the request's place in the replay window. The trace's span is squeezed into the window;
 * the offered load is the plan's block operations / window.
 *
 * <p>Validity: the writer falls behind when the last end marker becomes visible later than 10 % of the window
 * after the window's end; the publisher falls behind when it sends a batch later than 10 % of the window after its
 * place (the offered load was not offered). Either makes the point invalid; so do lost end markers and probes, and
 * a daemon whose counters show an error or fewer applied blocks than the plan sent ({@link DaemonCounts}).
 */
final class TraceReplay {
    /** The daemon's cell. */
    static final String CELL = "trace";
    /** Allowed lag, as a fraction of the window. */
    static final double LAG_LIMIT = 0.10;
    /** How long the daemon and its subscriptions have to come up. */
    static final long ATTACH_LIMIT_MS = 60_000;
    /** How long after the last batch the writers have to apply everything. */
    static final long DRAIN_LIMIT_MS = 60_000;

    /**
     * Outcome of one point.
     *
     * @param windowMs        replay window.
     * @param offeredOpsPerS  block operations / window.
     * @param blockOpsPerS    block operations / (drain end - start).
     * @param writerLagMs     drain end - window end.
     * @param publisherLagMs  worst lateness of a send.
     * @param valid           within the lag limits, every marker seen, every batch applied without an error.
     * @param router          the router process's JSON result.
     * @param daemon          what the daemon's counters say it applied.
     * @param stages          the writers' per-stage times of the replay's batches ({@link StageLatencies}).
     */
    record Point(long windowMs, double offeredOpsPerS, double blockOpsPerS, double writerLagMs, double publisherLagMs,
        boolean valid, String router, DaemonCounts daemon, StageLatencies stages) {
    }

    /**
     * The daemon's own account of the replay, read from its counters before it stops.
     *
     * @param stored  block stores applied (new or re-stored), markers included.
     * @param removed block removals applied (held or not).
     * @param errors  sequence gaps, decode, framing and oversized-message errors, dropped events, unknown parents,
     *                block size and token count mismatches, rejected pods, sequence resets and pod clears: each
     *                one means lost, refused or wiped work (the replay restarts and clears nothing).
     */
    record DaemonCounts(long stored, long removed, long errors) {
        private static final CounterType[] ERRORS = {CounterType.SEQUENCE_GAPS, CounterType.DECODE_ERRORS,
            CounterType.FRAMING_ERRORS, CounterType.OVERSIZED_MESSAGES, CounterType.EVENTS_DROPPED,
            CounterType.UNKNOWN_PARENTS, CounterType.BLOCK_SIZE_MISMATCHES, CounterType.TOKEN_COUNT_MISMATCHES,
            CounterType.PODS_REJECTED, CounterType.SEQUENCE_RESETS, CounterType.POD_CLEARS};

        static DaemonCounts read(final Path indexDir) {
            try (CountersFile.Reader c = CountersFile.open(IndexConfiguration.indexFile(indexDir, CELL)
                .getParent())) {
                return of(t -> c.value(t.typeId()));
            }
        }

        /**
         * @param value a counter's value: the daemon's counters file, or the counters an in-process writer pool
         *              was given ({@link InprocReplay}); the same sums either way.
         * @return the counts.
         */
        static DaemonCounts of(final ToLongFunction<CounterType> value) {
            long errors = 0;
            for (final CounterType t : ERRORS) {
                errors += Math.max(0, value.applyAsLong(t));
            }
            return new DaemonCounts(value.applyAsLong(CounterType.BLOCKS_STORED)
                + value.applyAsLong(CounterType.DUPLICATE_BLOCKS), value.applyAsLong(CounterType.BLOCKS_REMOVED)
                + value.applyAsLong(CounterType.UNKNOWN_REMOVALS), errors);
        }

        /**
         * @param before counts read earlier from the same daemon (after its warm-up).
         * @return what was counted since.
         */
        DaemonCounts minus(final DaemonCounts before) {
            return new DaemonCounts(stored - before.stored, removed - before.removed, errors - before.errors);
        }

        /** @return the counts as JSON. */
        Json json() {
            return new Json().put("blocks_stored", stored).put("blocks_removed", removed).put("errors", errors);
        }
    }

    private TraceReplay() {
    }

    /**
     * @param plan the replay.
     * @return the index capacity a point's writer gets (the daemon's {@code --capacity-blocks}, or the in-process
     * index's): room for every block the plan stores, and at least 1M.
     */
    static long capacityBlocks(final TracePlan plan) {
        return Math.max(1L << 20, 4L * plan.blocksStored() / 3);
    }

    /**
     * @param plan     the replay.
     * @param windowMs  replay window.
     * @param transport how events reach the daemon (the plan was encoded for it).
     * @param base      run directory (index, logs, files).
     * @param run      point number (names the subdirectory).
     * @param log      progress output.
     * @return the point.
     * @throws Exception when a process fails to start or answer in time.
     */
    static Point run(final TracePlan plan, final long windowMs, final TransportChoice transport, final Path base,
        final int run, final java.io.PrintStream log) throws Exception {
        return run(plan, windowMs, transport, base, run, log, List.of(), null, TraceRouter.Options.DEFAULT);
    }

    /**
     * @param plan       the replay.
     * @param windowMs   replay window.
     * @param transport  how events reach the daemon (the plan was encoded for it).
     * @param base       run directory (index, logs, files).
     * @param run        point number (names the subdirectory).
     * @param log        progress output.
     * @param daemonArgs extra options for the daemon (after the bench's own: e.g. {@code --writers=4}).
     * @param warm       the warm-up ({@link #warmUpPlan}), applied untimed before the replay, or null for none.
     * @param querying   how the router process queries ({@link TraceRouter.Options}).
     * @return the point.
     * @throws Exception when a process fails to start or answer in time.
     */
    static Point run(final TracePlan plan, final long windowMs, final TransportChoice transport, final Path base,
        final int run, final java.io.PrintStream log, final List<String> daemonArgs, final TracePlan warm,
        final TraceRouter.Options querying) throws Exception {
        final Path runDir = base.resolve("run-" + run);
        java.nio.file.Files.createDirectories(runDir);
        final Path indexDir = runDir.resolve("index");
        final int pods = plan.pods();
        final BatchEncoder encoder = transport.encoder();
        final MarkerBatch[] markers = new MarkerBatch[pods];
        final long[] markerKeys = new long[pods];
        for (int p = 0; p < pods; p++) {
            markers[p] = MarkerBatch.of(1_000 + p, plan.blockSize(), encoder, p);
            markerKeys[p] = markers[p].routerKey();
        }
        final Path queries = base.resolve("queries.bin");
        if (!java.nio.file.Files.exists(queries)) {
            plan.writeQueries(queries, markerKeys);
        }
        final Path sendFile = runDir.resolve("send-times.bin");
        final SendTimes sent = SendTimes.map(sendFile, plan.requests() + pods);
        Process daemon = null;
        Process router = null;
        try (EventTransport events = transport.open(runDir)) {
            final int metricsPort = BenchFlags.freeLoopbackPort();
            final List<String> args = new ArrayList<>(List.of("daemon", "--dir", indexDir.toString(), "--cell",
                CELL, "--block-size", Integer.toString(plan.blockSize()), "--max-pods", Integer.toString(pods),
                "--capacity-blocks", Long.toString(capacityBlocks(plan)), "--metrics", "127.0.0.1:" + metricsPort));
            args.addAll(events.daemonArgs());
            args.addAll(daemonArgs);
            daemon = start(java("io.kvidx.daemon.cli.KvidxCli", args), runDir.resolve("daemon.log"));
            events.connect(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ATTACH_LIMIT_MS));
            try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(indexDir).cell(CELL)
                .attachTimeoutMs(ATTACH_LIMIT_MS))) {
                warmUp(reader, events, encoder, plan, run);
            }
            if (warm != null) {
                warmUpDaemon(warm, events, encoder, indexDir, run);
            }
            final DaemonCounts warmCounts = DaemonCounts.read(indexDir);
            final StageLatencies warmedUp = StageLatencies.scrape(metricsPort);
            router = new ProcessBuilder(java(BenchMain.class.getName(), List.of(TraceRouter.COMMAND,
                indexDir.toString(), CELL, queries.toString(), sendFile.toString(), Long.toString(windowMs),
                Long.toString(DRAIN_LIMIT_MS), Boolean.toString(querying.busy()),
                Long.toString(querying.warmUpQueries()), Long.toString(querying.leadMs()))))
                .redirectError(runDir.resolve("router.err").toFile()).start();
            final BufferedReader routerOut = new BufferedReader(new InputStreamReader(router.getInputStream(),
                StandardCharsets.UTF_8));
            final String attached = routerOut.readLine();
            if (!"ATTACHED".equals(attached)) {
                throw new IllegalStateException("router process did not attach: " + attached + " (see "
                    + runDir.resolve("router.err") + ")");
            }
            final long t0 = System.nanoTime() + 300_000_000L;
            final OutputStream toRouter = router.getOutputStream();
            toRouter.write(("START " + t0 + "\n").getBytes(StandardCharsets.US_ASCII));
            toRouter.flush();
            final long windowNs = windowMs * 1_000_000L;
            final long span = plan.spanMs();
            long publisherLag = 0;
            for (int i = 0; i < plan.requests(); i++) {
                publisherLag = Math.max(publisherLag, waitUntil(t0 + plan.offsetMs(i) * windowNs / span));
                final byte[] payload = plan.payload(i);
                final int pod = plan.pod(i);
                sent.set(i, System.nanoTime());
                if (payload != null) {
                    events.send(pod, payload);
                }
            }
            for (int p = 0; p < pods; p++) {
                sent.set(plan.requests() + p, System.nanoTime());
                events.send(p, markers[p].payload());
            }
            String result = null;
            String line;
            while ((line = routerOut.readLine()) != null) {
                if (line.startsWith("RESULT ")) {
                    result = line.substring(7);
                    break;
                }
                log.println("router: " + line);
            }
            if (result == null) {
                throw new IllegalStateException("router process ended without a result (see "
                    + runDir.resolve("router.err") + ")");
            }
            final DaemonCounts counts = DaemonCounts.read(indexDir).minus(warmCounts);
            final StageLatencies stages = StageLatencies.scrape(metricsPort).minus(warmedUp);
            final long drainEnd = field(result, "drain_end_ns");
            final boolean allMarkers = field(result, "markers_seen") == field(result, "markers");
            // Every stored and removed block reached the writer (warm-up markers may add stores, never removals).
            final boolean applied = counts.errors() == 0 && counts.removed() == plan.blocksRemoved()
                && counts.stored() >= plan.blocksStored() + pods;
            if (!applied) {
                log.println("daemon counters: " + counts + " for a plan of " + plan.blocksStored() + " stores (+ "
                    + pods + " markers) and " + plan.blocksRemoved() + " removals: the point is invalid; the daemon's "
                    + "log ends:");
                final List<String> daemonLog = java.nio.file.Files.readAllLines(runDir.resolve("daemon.log"));
                daemonLog.subList(Math.max(0, daemonLog.size() - 20), daemonLog.size())
                    .forEach(l -> log.println("  " + l));
            }
            final double writerLagMs = (drainEnd - (t0 + windowNs)) / 1e6;
            final double elapsed = (drainEnd - t0) / 1e9;
            final boolean valid = allMarkers && applied && field(result, "probes_lost") == 0
                && writerLagMs <= LAG_LIMIT * windowMs && publisherLag / 1e6 <= LAG_LIMIT * windowMs;
            return new Point(windowMs, plan.blockOps() / (windowMs / 1e3), plan.blockOps() / elapsed, writerLagMs,
                publisherLag / 1e6, valid, result, counts, stages);
        } finally {
            stop(router);
            stop(daemon);
        }
    }

    /** The hash-id offset of the warm-up copy: above every {@code --scale} copy's (copy c adds c x 2^40). */
    static final long WARM_UP_HASH_OFFSET = 1023L << 40;

    /**
     * The warm-up: the trace's first requests again, in a hash space of their own, on the same pods. Applied at full
     * speed before each point's replay and then cleared, it leaves the daemon's code compiled and its pods' block
     * maps grown, as in a daemon that has been running (an in-process harness is warm in the same way), and none of
     * its blocks indexed.
     *
     * @param trace     requests sorted by timestamp.
     * @param requests  how many of the first requests to replay (0: no warm-up).
     * @param pods      pods of one copy.
     * @param blockSize engine block size.
     * @param budget    blocks per engine.
     * @param maxChain  longest chain.
     * @param seed      the plan's seed.
     * @param encoder   the transport's encoder.
     * @return the warm-up's plan, or null for none.
     */
    static TracePlan warmUpPlan(final List<TraceRequest> trace, final int requests, final int pods,
        final int blockSize, final int budget, final int maxChain, final long seed, final BatchEncoder encoder) {
        if (requests <= 0) {
            return null;
        }
        final List<TraceRequest> warm = new ArrayList<>();
        for (final TraceRequest r : trace.subList(0, Math.min(requests, trace.size()))) {
            final long[] ids = r.hashIds().clone();
            for (int i = 0; i < ids.length; i++) {
                ids[i] += WARM_UP_HASH_OFFSET;
            }
            warm.add(new TraceRequest(r.timestampMs(), r.inputLength(), r.outputLength(), ids));
        }
        return TracePlan.build(warm, pods, blockSize, budget, maxChain, seed, encoder);
    }

    /**
     * Sends the warm-up's batches as fast as the transport takes them, then an AllBlocksCleared per pod, and waits
     * until the daemon applied every clear.
     */
    private static void warmUpDaemon(final TracePlan warm, final EventTransport events, final BatchEncoder encoder,
        final Path indexDir, final int run) throws InterruptedException {
        final long clearsBefore = counter(indexDir, CounterType.POD_CLEARS);
        for (int i = 0; i < warm.requests(); i++) {
            final byte[] payload = warm.payload(i);
            if (payload != null) {
                events.send(warm.pod(i), payload);
            }
        }
        for (int p = 0; p < warm.pods(); p++) {
            events.send(p, encoder.cleared(p));
        }
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DRAIN_LIMIT_MS);
        while (counter(indexDir, CounterType.POD_CLEARS) - clearsBefore < warm.pods()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the daemon did not apply the warm-up's clears within "
                    + DRAIN_LIMIT_MS + " ms (run " + run + ")");
            }
            Thread.sleep(5);
        }
    }

    private static long counter(final Path indexDir, final CounterType type) {
        try (CountersFile.Reader c = CountersFile.open(IndexConfiguration.indexFile(indexDir, CELL).getParent())) {
            return c.value(type.typeId());
        }
    }

    /** Sends each warm-up pod a marker until the daemon shows it: the subscription is up. */
    private static void warmUp(final IndexReader reader, final EventTransport events, final BatchEncoder encoder,
        final TracePlan plan, final int run) {
        for (final int pod : events.warmUpPods(plan.pods())) {
            awaitMarker(reader, events, MarkerBatch.of(100 + pod, plan.blockSize(), encoder, pod), pod,
                "run " + run);
        }
    }

    /**
     * Sends a pod's marker batch until the daemon indexes it (every 100 ms, at most {@value #ATTACH_LIMIT_MS} ms).
     *
     * @param reader the daemon's index.
     * @param events the transport.
     * @param marker the marker, encoded for the transport.
     * @param pod    the pod.
     * @param what   names the run in the error.
     * @return the pod bits of the marker's entry (the pod's slot is its bit).
     * @throws IllegalStateException when the daemon does not show it in time.
     */
    static long[] awaitMarker(final IndexReader reader, final EventTransport events, final MarkerBatch marker,
        final int pod, final String what) {
        final long[] bits = new long[4];
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ATTACH_LIMIT_MS);
        while (System.nanoTime() < deadline) {
            events.send(pod, marker.payload());
            final long until = System.nanoTime() + 100_000_000L;
            while (System.nanoTime() < until) {
                try {
                    if (reader.lookup(marker.routerKey(), bits)) {
                        return bits;
                    }
                } catch (final IndexBusyException ex) {
                    // The shard is being written: look again.
                }
                LockSupport.parkNanos(1_000_000);
            }
        }
        throw new IllegalStateException("the daemon did not receive pod " + pod + "'s marker within "
            + ATTACH_LIMIT_MS + " ms (" + what + ")");
    }

    private static long field(final String json, final String name) {
        final double v = TraceReport.num(json, name);
        if (Double.isNaN(v)) {
            throw new IllegalStateException("router result has no " + name + ": " + json);
        }
        return (long) v;
    }

    /**
     * Waits for a request's place in the window (parking at most 0.2 ms at a time, so the lateness stays small).
     *
     * @param target {@link System#nanoTime()} to wait for.
     * @return how late it returned, ns.
     */
    static long waitUntil(final long target) {
        long now = System.nanoTime();
        while (now < target) {
            LockSupport.parkNanos(Math.min(target - now, 200_000));
            now = System.nanoTime();
        }
        return now - target;
    }

    static List<String> java(final String main, final List<String> args) {
        return BenchFlags.javaCommand(main, List.of(), args);
    }

    static Process start(final List<String> cmd, final Path log) throws IOException {
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    static void stop(final Process p) throws InterruptedException {
        if (p == null) {
            return;
        }
        p.destroy();
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
