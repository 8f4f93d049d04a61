package io.kvidx.daemon.snapshot;

import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.WriterPool;
import io.kvidx.daemon.writer.WriterTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Takes snapshots of a running daemon ({@link SnapshotDescriptor}'s format) for a replica to catch up from, without
 * blocking the caller (an HTTP event loop) or stopping ingestion.
 *
 * <p>Consistency rule, in this order:
 * <ol>
 *   <li>Read each ZeroMQ publisher's latest recorded progress ({@link PublisherProgress}, written by the ingest
 *   agent's checkpoints): its sequence S is recorded only once every writer has applied every batch dispatched up
 *   to S (a barrier on the writer queues' positions), so every batch up to S is already in the pods' maps.</li>
 *   <li>Then take each writer queue's producer position and hand every writer a task ({@link WriterTask}); a
 *   writer starts it once it has applied everything queued before that position (so pods registered by earlier
 *   messages are registered), then serialises one registered pod per duty cycle from its engine-hash map, the
 *   parent key the index recorded for each block, its main KV cache group and suspect flag.</li>
 *   <li>When every writer has answered, the records, the progress of step 1 and the membership section are
 *   encoded into one buffer sized from them; above the limit the snapshot is refused.</li>
 * </ol>
 * The maps are therefore read after every batch up to S was applied, and possibly after some later batches too.
 * That is harmless: a replica that loads the snapshot asks each engine to replay from S + 1, and re-applying those
 * batches in order ends in the publisher's state, because each event sets a fact (block held on a medium, not held,
 * pod cleared) that the last event about it decides, whatever the state it finds (docs/snapshot-format.md gives the
 * argument in full).
 *
 * <p>Concurrent requests share the snapshot in flight. A writer that does not answer within the timeout (stopped,
 * or its inbox full) fails the snapshot; so does the size limit.
 *
 * <p><b>Note:</b> {@link #snapshot()} is thread safe; the pod records are made on the writers' threads, the rest on
 * the service's own thread ({@code kvidx-snapshot}).
 */
public final class SnapshotService implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotService.class);

    private final IndexWriter index;
    private final WriterPool writers;
    private final PublisherProgress progress;
    private final long maxBytes;
    private final long timeoutMs;
    private final ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1,
        r -> Thread.ofPlatform().daemon().name("kvidx-snapshot").unstarted(r));
    private final AtomicReference<CompletableFuture<byte[]>> inFlight = new AtomicReference<>();
    private volatile Supplier<byte[]> membership = () -> new byte[0];

    /**
     * @param index     the index (geometry; parent keys, read under its shard locks).
     * @param writers   the writer agents that own the pods' maps.
     * @param progress  where the ZeroMQ ingest agent records each publisher's applied sequence.
     * @param maxBytes  longest snapshot.
     * @param timeoutMs how long the writers have to answer.
     */
    public SnapshotService(final IndexWriter index, final WriterPool writers, final PublisherProgress progress,
        final long maxBytes, final long timeoutMs) {
        this.index = index;
        this.writers = writers;
        this.progress = progress;
        this.maxBytes = maxBytes;
        this.timeoutMs = timeoutMs;
        executor.setRemoveOnCancelPolicy(true);
    }

    /**
     * @param supplier the registered engines, encoded by their owner, for the snapshot's opaque membership section;
     *                 called on the service's thread once per snapshot.
     */
    public void membership(final Supplier<byte[]> supplier) {
        this.membership = supplier == null ? () -> new byte[0] : supplier;
    }

    /**
     * Starts a snapshot, or joins the one in flight.
     *
     * @return the snapshot's bytes when every writer has answered; completed exceptionally with a
     * {@link SnapshotException} when a writer did not answer in time, the snapshot exceeds the limit, or the daemon
     * closed. Never blocks.
     */
    public CompletableFuture<byte[]> snapshot() {
        while (true) {
            final CompletableFuture<byte[]> current = inFlight.get();
            if (current != null && !current.isDone()) {
                return current.copy();
            }
            final CompletableFuture<byte[]> fresh = new CompletableFuture<>();
            if (inFlight.compareAndSet(current, fresh)) {
                try {
                    final ScheduledFuture<?> timer = executor.schedule(() -> fresh.completeExceptionally(
                        new SnapshotException("snapshot not taken within " + timeoutMs + " ms: a writer did not "
                            + "answer (stopped, or too busy)")), timeoutMs, TimeUnit.MILLISECONDS);
                    // Done: neither the timer nor the service keeps the bytes (the callers' copies do).
                    fresh.whenComplete((bytes, failure) -> {
                        timer.cancel(false);
                        inFlight.compareAndSet(fresh, null);
                    });
                    executor.execute(() -> take(fresh));
                } catch (final RejectedExecutionException ex) {
                    fresh.completeExceptionally(new SnapshotException("the daemon is closing"));
                }
                return fresh.copy();
            }
        }
    }

    private void take(final CompletableFuture<byte[]> result) {
        try {
            final long start = System.nanoTime();
            // The publishers' progress first: every batch up to each recorded sequence is applied by now.
            final List<PublisherProgress.Entry> publishers = new ArrayList<>(progress.read().values());
            final long[] positions = writers.producerPositions();
            final AtomicLong bytes = new AtomicLong(SnapshotDescriptor.MIN_LENGTH);
            final int writerCount = writers.writerCount();
            final List<CompletableFuture<List<byte[]>>> parts = new ArrayList<>(writerCount);
            // The writers' positions only (a relay's tap appends its own, which a snapshot does not wait for).
            for (int w = 0; w < writerCount; w++) {
                final CompletableFuture<List<byte[]>> part = new CompletableFuture<>();
                parts.add(part);
                if (!writers.submit(w, new PodsTask(positions[w], result, part, bytes))) {
                    throw new SnapshotException("writer " + w + " cannot take the snapshot's task now (its inbox is"
                        + " full or it is closed)");
                }
            }
            final CompletableFuture<?>[] all = parts.toArray(new CompletableFuture<?>[0]);
            CompletableFuture.allOf(all).whenCompleteAsync((ignored, failure) -> {
                if (failure != null) {
                    result.completeExceptionally(unwrap(failure));
                } else {
                    assemble(result, publishers, parts, start);
                }
            }, executor);
        } catch (final SnapshotException | RuntimeException ex) {
            result.completeExceptionally(ex);
        }
    }

    private void assemble(final CompletableFuture<byte[]> result, final List<PublisherProgress.Entry> publishers,
        final List<CompletableFuture<List<byte[]>>> parts, final long start) {
        try {
            final List<byte[]> pods = new ArrayList<>();
            for (final CompletableFuture<List<byte[]>> part : parts) {
                pods.addAll(part.join());
            }
            final byte[] members = membership.get();
            final var context = index.context();
            final byte[] snapshot = SnapshotEncoder.encode(new SnapshotEncoder.Geometry(context.blockSize(),
                context.keyScheme(), context.maxPods()), System.currentTimeMillis(), publishers, pods,
                members == null ? new byte[0] : members, maxBytes);
            if (result.complete(snapshot)) {
                LOG.info("snapshot taken: {} pods, {} publishers, {} bytes in {} ms", pods.size(), publishers.size(),
                    snapshot.length, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
            }
        } catch (final SnapshotException | RuntimeException ex) {
            result.completeExceptionally(ex);
        }
    }

    private static Throwable unwrap(final Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    /**
     * Fails the snapshot in flight and stops the service's thread.
     */
    @Override
    public void close() {
        final CompletableFuture<byte[]> current = inFlight.get();
        if (current != null) {
            current.completeExceptionally(new SnapshotException("the daemon closed"));
        }
        executor.shutdownNow();
    }

    /**
     * One writer's part: once the writer has applied what was queued before the request, its registered pods'
     * records, one pod per step.
     */
    private final class PodsTask implements WriterTask {
        private final long position;
        private final CompletableFuture<byte[]> result;
        private final CompletableFuture<List<byte[]>> part;
        private final AtomicLong bytes;
        private final List<byte[]> records = new ArrayList<>();
        private ArrayDeque<String> todo;

        PodsTask(final long position, final CompletableFuture<byte[]> result,
            final CompletableFuture<List<byte[]>> part, final AtomicLong bytes) {
            this.position = position;
            this.result = result;
            this.part = part;
            this.bytes = bytes;
        }

        @Override
        public boolean step(final Pods pods) {
            if (result.isDone()) {
                // Timed out or failed elsewhere: nothing waits for this part any more.
                part.cancel(false);
                return true;
            }
            if (pods.consumerPosition() < position) {
                return false;
            }
            if (todo == null) {
                todo = new ArrayDeque<>(pods.count());
                for (int i = 0; i < pods.count(); i++) {
                    todo.add(pods.podId(i));
                }
            }
            while (!todo.isEmpty()) {
                final String podId = todo.poll();
                for (int i = 0; i < pods.count(); i++) {
                    if (podId.equals(pods.podId(i))) {
                        // A pod taken down since the first step is left out: its blocks left the source too.
                        record(pods, i);
                        if (!todo.isEmpty()) {
                            return false;
                        }
                        break;
                    }
                }
            }
            part.complete(records);
            return true;
        }

        private void record(final Pods pods, final int i) {
            final int slot = pods.slot(i);
            final boolean suspect = pods.suspect(i) || index.isSuspect(slot);
            try {
                final byte[] record = SnapshotEncoder.podRecord(pods.podId(i), index.model(slot),
                    suspect ? SnapshotDescriptor.POD_FLAG_SUSPECT : 0, pods.blocks(i), index::parentOf, maxBytes);
                if (bytes.addAndGet(record.length) > maxBytes) {
                    throw new SnapshotException("snapshot exceeds the limit of " + maxBytes + " bytes (at pod "
                        + pods.podId(i) + ", " + bytes.get() + " bytes so far); raise snapshotMaxBytes "
                        + "(--snapshot-max-bytes)");
                }
                records.add(record);
            } catch (final SnapshotException ex) {
                throw new CompletionException(ex);
            }
        }

        @Override
        public void abandon(final Throwable cause) {
            part.completeExceptionally(unwrap(cause));
        }
    }
}
