package io.kvidx.bench.trace;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.profiles.RoutingProfiles;
import io.kvidx.daemon.index.IndexWriterContext;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The cache-aware policy's hit rate through the live path, beside {@link RoutingSim}'s zero-delay one: a
 * {@code kvidx daemon} in its own JVM receives the engines' events over the replay's transport, and this process
 * routes each request, at its place in the window, from the daemon's index as it is at that moment (ipc-client, the
 * same cache-aware profile and load model as the simulation), serves it on the chosen pod's simulated engine and
 * sends that engine's events. A request that arrives before the events of an earlier one are visible is routed
 * without them: the hit rate a live fleet gets at this request rate.
 *
 * <p><b>Note:</b> one thread; a run owns its daemon.
 */
final class LiveRouting {
    /** The policy name in results. */
    static final String POLICY = "cache_aware_live";
    private static final long MARKER_ID_BASE = 200;

    private LiveRouting() {
    }

    /**
     * @param trace      requests sorted by timestamp (one copy of the trace).
     * @param pods       pods.
     * @param blockSize  engine block size.
     * @param budget     blocks per engine.
     * @param windowMs   the window the trace's span is squeezed into.
     * @param transport  how events reach the daemon.
     * @param base       run directory.
     * @param log        progress output.
     * @param daemonArgs extra daemon options.
     * @return the outcome, named {@link #POLICY}; its {@code seconds} is the routing run's wall time.
     * @throws Exception when the daemon or the transport fails.
     */
    static Result run(final List<TraceRequest> trace, final int pods, final int blockSize, final int budget,
        final long windowMs, final TransportChoice transport, final Path base, final PrintStream log,
        final List<String> daemonArgs) throws Exception {
        final long started = System.nanoTime();
        final Path runDir = base.resolve("live-routing");
        Files.createDirectories(runDir);
        final Path indexDir = runDir.resolve("index");
        final int maxBlocks = Math.min(budget, IndexWriterContext.Configuration.MAX_CHAIN_LENGTH_DEFAULT);
        final BatchEncoder encoder = transport.encoder();
        final List<String> args = new ArrayList<>(List.of("daemon", "--dir", indexDir.toString(), "--cell",
            TraceReplay.CELL, "--block-size", Integer.toString(blockSize), "--max-pods", Integer.toString(pods),
            "--capacity-blocks", Long.toString(Math.max(1L << 20, 2L * pods * budget))));
        Process daemon = null;
        try (EventTransport events = transport.open(runDir)) {
            args.addAll(events.daemonArgs());
            args.addAll(daemonArgs);
            daemon = TraceReplay.start(TraceReplay.java("io.kvidx.daemon.cli.KvidxCli", args),
                runDir.resolve("daemon.log"));
            events.connect(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TraceReplay.ATTACH_LIMIT_MS));
            final IndexReaderContext readerContext = new IndexReaderContext().dir(indexDir).cell(TraceReplay.CELL)
                .attachTimeoutMs(TraceReplay.ATTACH_LIMIT_MS);
            final PodRegistry registry = new PodRegistry();
            final SimFleet fleet = new SimFleet(registry, pods, blockSize, budget, maxBlocks);
            try (IndexReader reader = IndexReader.attach(readerContext)) {
                // Every pod registers with a marker of its own; its slot is the bit the marker's key shows.
                for (int p = 0; p < pods; p++) {
                    fleet.register(p, register(reader, events, encoder, blockSize, p));
                }
            }
            try (IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(readerContext), 1_000)) {
                final Router router = RoutingProfiles.single(RoutingSim.profile("cache_aware", index, registry,
                    blockSize), registry, index);
                final RoutingContext ctx = router.newContext();
                final TraceBlocks blocks = new TraceBlocks(blockSize, maxBlocks);
                final long first = trace.get(0).timestampMs();
                final long span = Math.max(1, trace.get(trace.size() - 1).timestampMs() - first);
                final long windowNs = windowMs * 1_000_000L;
                final long t0 = System.nanoTime() + 300_000_000L;
                long lag = 0;
                for (final TraceRequest r : trace) {
                    lag = Math.max(lag, TraceReplay.waitUntil(t0 + (r.timestampMs() - first) * windowNs / span));
                    final int n = blocks.load(r);
                    final int pod = fleet.route(r, blocks, n, router, ctx);
                    final byte[] payload = encoder.encode(blocks, fleet.engine(pod), r.timestampMs() / 1e3, pod);
                    if (payload != null) {
                        events.send(pod, payload);
                    }
                }
                return new Result(fleet.result(POLICY, trace.size(), (System.nanoTime() - started) / 1e9), windowMs,
                    lag / 1e6);
            }
        } finally {
            TraceReplay.stop(daemon);
            if (log != null) {
                log.flush();
            }
        }
    }

    /**
     * The live run's outcome.
     *
     * @param routing          hit rate and counts, as the simulation reports them.
     * @param windowMs         the window the trace was squeezed into.
     * @param publisherLagMs   the latest a request was routed after its place in the window.
     */
    record Result(RoutingSim.Result routing, long windowMs, double publisherLagMs) {
    }

    /** Sends pod {@code p} a marker until the daemon indexes it; returns the pod's slot. */
    private static int register(final IndexReader reader, final EventTransport events, final BatchEncoder encoder,
        final int blockSize, final int p) {
        final long[] bits = TraceReplay.awaitMarker(reader, events, MarkerBatch.of(MARKER_ID_BASE + p, blockSize,
            encoder, p), p, "live routing");
        for (int w = 0; w < bits.length; w++) {
            if (bits[w] != 0) {
                return w * 64 + Long.numberOfTrailingZeros(bits[w]);
            }
        }
        throw new IllegalStateException("pod " + p + "'s marker is indexed without a pod bit");
    }
}
