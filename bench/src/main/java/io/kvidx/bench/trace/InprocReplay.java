package io.kvidx.bench.trace;

import io.kvidx.bench.Json;
import io.kvidx.daemon.config.DaemonConfiguration;
import io.kvidx.daemon.config.IdleStrategies;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.EngineDecoders;
import io.kvidx.daemon.metrics.DaemonMetrics;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.CloseHelper;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * One point of the rate sweep with no transport and no second process ({@code --transport inproc}): the plan's vLLM
 * batches, exactly those the ZeroMQ transport sends, offered at each request's place in the replay window to a
 * {@link WriterPool} in this process, over a fresh {@link IndexWriter} in a temporary cell under {@code /dev/shm}.
 * The pool is built as the daemon builds its own: the daemon's writer queue length and idle strategies, the index
 * sized as the bench's daemon is ({@link TraceReplay#capacityBlocks}, {@code --max-pods} = the plan's pods), every
 * pod of the plan in the pod directory (id {@link BatchEncoder#podId}, model {@link TraceBlocks#MODEL}, as the
 * ZeroMQ topics name them), {@code writers} writer threads. Pods never time out (the daemon's transports beat their
 * pods' heartbeats; here no one would).
 *
 * <p>Measured as {@link TraceReplay} measures: offered = block operations / window; achieved = block operations /
 * (drain end - start), the drain end being when every writer has applied every batch queued
 * ({@link WriterPool#appliedUpTo}); writer lag = drain end - window end; publisher lag = the worst lateness of an
 * offer (a full queue makes {@link WriterPool#offer} wait, and the wait makes the next offers late); valid = both
 * lags within 10 % of the window, the drain within its limit, no offer refused, and the pool's counters
 * ({@link TraceReplay.DaemonCounts}, the same sums as the daemon's) showing every stored and removed block of the
 * plan applied with no error. No router: no query or event-to-visible timing.
 */
final class InprocReplay {
    /** Start of the replay after the pool is up, as the process replay gives its router. */
    private static final long START_LEAD_NS = 300_000_000L;
    /** Poll interval of the drain. */
    private static final long DRAIN_POLL_NS = 20_000;

    private InprocReplay() {
    }

    /**
     * @param plan     the replay (encoded as vLLM batches).
     * @param windowMs replay window.
     * @param writers  writer threads of the pool.
     * @param base     run directory (under {@code /dev/shm} when there is one).
     * @param run      point number (names the cell's directory).
     * @param log      progress output.
     * @param warm     the warm-up ({@link TraceReplay#warmUpPlan}), applied untimed and cleared first, or null.
     * @return the point; its {@code router} field holds this mode's JSON result (drain, index, writers).
     * @throws IOException when the cell's directory cannot be made or removed.
     */
    static TraceReplay.Point run(final TracePlan plan, final long windowMs, final int writers, final Path base,
        final int run, final PrintStream log, final TracePlan warm) throws IOException {
        final Path runDir = base.resolve("run-" + run);
        Files.createDirectories(runDir);
        final int pods = plan.pods();
        final IngestCounters counters = IngestCounters.local();
        // The daemon's own histograms, observed by the pool as in the daemon, read without a server.
        final DaemonMetrics metrics = new DaemonMetrics();
        IndexWriter index = null;
        WriterPool pool = null;
        try {
            index = IndexWriter.create(new IndexWriterContext().dir(runDir.resolve("index")).cell(TraceReplay.CELL)
                .blockSize(plan.blockSize()).maxPods(pods).capacityBlocks(TraceReplay.capacityBlocks(plan))
                .maxChainLength(IndexWriterContext.Configuration.MAX_CHAIN_LENGTH_DEFAULT));
            final PodDirectory directory = new PodDirectory(PodDirectory.MAX_PODS_DEFAULT);
            final int[] handles = new int[pods];
            for (int p = 0; p < pods; p++) {
                handles[p] = directory.podNumber(BatchEncoder.podId(p), TraceBlocks.MODEL);
                if (handles[p] < 0) {
                    throw new IllegalStateException("the pod directory refused " + BatchEncoder.podId(p));
                }
            }
            pool = new WriterPool(writers, DaemonConfiguration.WRITER_QUEUE_LENGTH_DEFAULT, index, directory,
                counters, new IngestErrors(), SystemEpochClock.INSTANCE, 0,
                IdleStrategies.supplier(IdleStrategies.BACKOFF), IdleStrategies.supplier(IdleStrategies.BACKOFF),
                EngineDecoders.standard())
                .observe(null, metrics.observer()).start();
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[0]);
            if (warm != null) {
                for (int i = 0; i < warm.requests(); i++) {
                    final byte[] payload = warm.payload(i);
                    if (payload != null) {
                        buffer.wrap(payload);
                        pool.offer(handles[warm.pod(i)], WriterMessages.VLLM_BATCH, buffer, 0, payload.length);
                    }
                }
                for (int p = 0; p < pods; p++) {
                    pool.offer(handles[p], WriterMessages.CLEAR_POD);
                }
                final long[] warmed = pool.producerPositions();
                final long warmLimit = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TraceReplay.DRAIN_LIMIT_MS);
                while (!pool.appliedUpTo(warmed)) {
                    if (System.nanoTime() > warmLimit) {
                        throw new IllegalStateException("the writers did not apply the warm-up within "
                            + TraceReplay.DRAIN_LIMIT_MS + " ms (run " + run + ")");
                    }
                    LockSupport.parkNanos(DRAIN_POLL_NS);
                }
            }
            final TraceReplay.DaemonCounts warmCounts = TraceReplay.DaemonCounts.of(counters::value);
            final java.io.ByteArrayOutputStream warmScrape = new java.io.ByteArrayOutputStream();
            metrics.scrape(warmScrape);
            final StageLatencies warmStages = StageLatencies.parse(warmScrape.toString(StandardCharsets.UTF_8));
            final long t0 = System.nanoTime() + START_LEAD_NS;
            final long windowNs = windowMs * 1_000_000L;
            final long span = plan.spanMs();
            long publisherLag = 0;
            long refused = 0;
            for (int i = 0; i < plan.requests(); i++) {
                publisherLag = Math.max(publisherLag, TraceReplay.waitUntil(t0 + plan.offsetMs(i) * windowNs / span));
                final byte[] payload = plan.payload(i);
                if (payload != null) {
                    buffer.wrap(payload);
                    // Waits while the pod's writer queue is full, as the daemon's ingest agents do.
                    if (!pool.offer(handles[plan.pod(i)], WriterMessages.VLLM_BATCH, buffer, 0, payload.length)) {
                        refused++;
                    }
                }
            }
            final long[] queued = pool.producerPositions();
            final long drainLimit = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TraceReplay.DRAIN_LIMIT_MS);
            boolean drained = pool.appliedUpTo(queued);
            long drainEnd = System.nanoTime();
            while (!drained && drainEnd < drainLimit) {
                LockSupport.parkNanos(DRAIN_POLL_NS);
                drained = pool.appliedUpTo(queued);
                drainEnd = System.nanoTime();
            }
            final TraceReplay.DaemonCounts counts = TraceReplay.DaemonCounts.of(counters::value).minus(warmCounts);
            final java.io.ByteArrayOutputStream scraped = new java.io.ByteArrayOutputStream();
            metrics.scrape(scraped);
            final StageLatencies stages = StageLatencies.parse(scraped.toString(StandardCharsets.UTF_8))
                .minus(warmStages);
            // Exactly the plan went in (no warm-up or end markers here): every store and removal applied.
            final boolean applied = drained && refused == 0 && counts.errors() == 0
                && counts.removed() == plan.blocksRemoved() && counts.stored() >= plan.blocksStored();
            if (!applied) {
                log.println("in-process writers: " + counts + ", drained " + drained + ", " + refused
                    + " offers refused, for a plan of " + plan.blocksStored() + " stores and " + plan.blocksRemoved()
                    + " removals: the point is invalid; counters: " + counters.describe());
            }
            final double writerLagMs = (drainEnd - (t0 + windowNs)) / 1e6;
            final double elapsed = (drainEnd - t0) / 1e9;
            final boolean valid = applied && writerLagMs <= TraceReplay.LAG_LIMIT * windowMs
                && publisherLag / 1e6 <= TraceReplay.LAG_LIMIT * windowMs;
            final String result = new Json().put("mode", TransportChoice.INPROC).put("writers", writers)
                .put("drained", drained).put("drain_end_ns", drainEnd).put("offers_refused", refused)
                .put("index_entries", index.entryCount())
                .put("index_bytes", Files.size(index.context().indexFile())).toString();
            return new TraceReplay.Point(windowMs, plan.blockOps() / (windowMs / 1e3), plan.blockOps() / elapsed,
                writerLagMs, publisherLag / 1e6, valid, result, counts, stages);
        } finally {
            CloseHelper.closeAll(pool, index, counters, metrics);
            try (Stream<Path> files = Files.walk(runDir)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }
}
