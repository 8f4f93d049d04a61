package io.kvidx.daemon.serve;

import io.kvidx.discovery.DiscoveryStatus;
import io.kvidx.client.index.IndexReader;
import io.kvidx.serve.Responses;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;

import java.io.IOException;

/**
 * {@code GET /health}, {@code GET /metrics} and {@code GET /dump}: what operators and peers read. Health and metrics
 * read the index and the daemon's registry on the event loop (bounded reads, no locks, no file opened: whether the
 * index file was replaced comes from {@link IndexFileWatch}); a dump is taken on the daemon's threads and written when
 * its future completes, one snapshot shared by all callers per {@link FleetApi#dumpMinIntervalMs()}
 * ({@link SnapshotCache}).
 *
 * <p><b>Note:</b> called on event-loop threads; its state is the thread-safe {@link SnapshotCache}.
 */
final class OperationsHandler {
    private final IndexReader reader;
    private final FleetApi fleet;
    private final IndexFileWatch file;
    private final SnapshotCache dumps;

    OperationsHandler(final IndexReader reader, final FleetApi fleet, final IndexFileWatch file) {
        this.reader = reader;
        this.fleet = fleet;
        this.file = file;
        this.dumps = new SnapshotCache(fleet::snapshot, fleet.dumpMinIntervalMs(), System::currentTimeMillis);
    }

    void health(final ChannelHandlerContext ctx, final boolean keepAlive) {
        final long age = reader.heartbeatAgeMs();
        // Kept current off the event loop: no file is opened here.
        final String fileProblem = file.problem();
        final boolean stale = reader.isWriterStale() || age < 0 || age > fleet.healthMaxHeartbeatAgeMs();
        final DiscoveryStatus discovery = fleet.discovery();
        final boolean unsynced = discovery != null && !discovery.synced();
        final String streamProblem = fleet.jetstreamProblem();
        final boolean ok = fileProblem == null && !stale && !unsynced && streamProblem == null;
        Responses.health(ctx, keepAlive, ok, ok ? "ok" : "unhealthy", g -> {
            if (!ok) {
                g.writeStringField("reason", fileProblem != null ? fileProblem : stale
                    ? "the writer's heartbeat is " + (age < 0 ? "missing" : age + " ms old")
                    : unsynced ? "pod discovery has not listed the pods yet" + (discovery.lastError() == null ? ""
                    : " (" + discovery.lastError() + ")") : streamProblem);
            }
            if (discovery != null) {
                g.writeObjectFieldStart("discovery");
                g.writeBooleanField("synced", discovery.synced());
                g.writeStringField("selector", discovery.selector());
                g.writeNumberField("pods_seen", discovery.podsSeen());
                g.writeNumberField("pods_ready", discovery.podsReady());
                g.writeNumberField("engines", discovery.engines());
                g.writeNumberField("pods_rejected", discovery.podsRejected());
                g.writeNumberField("watch_restarts", discovery.watchRestarts());
                g.writeNumberField("last_sync_ms", discovery.lastSyncMs());
                g.writeStringField("last_error", discovery.lastError());
                g.writeEndObject();
            }
            g.writeNumberField("heartbeat_age_ms", age);
            g.writeNumberField("entries", reader.entryCount());
            int alive = 0;
            for (int slot = 0; slot < reader.maxPods(); slot++) {
                if (reader.isAlive(slot)) {
                    alive++;
                }
            }
            g.writeNumberField("pods_alive", alive);
            g.writeNumberField("block_size", reader.blockSize());
        });
    }

    void metrics(final ChannelHandlerContext ctx, final boolean keepAlive) throws IOException {
        Responses.prometheus(ctx, keepAlive, fleet::scrapeMetrics);
    }

    void dump(final ChannelHandlerContext ctx, final boolean keepAlive) {
        dumps.get().whenComplete((bytes, failure) -> {
            if (failure != null) {
                ApiHandler.error(ctx, keepAlive, new ApiException(503, ApiException.UNAVAILABLE,
                    "snapshot failed: " + (failure.getCause() != null ? failure.getCause().getMessage()
                        : failure.getMessage())));
            } else {
                Responses.send(ctx, keepAlive, 200, Unpooled.wrappedBuffer(bytes), "application/octet-stream");
            }
        });
    }
}
