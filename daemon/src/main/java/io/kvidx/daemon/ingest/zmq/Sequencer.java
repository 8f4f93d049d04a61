package io.kvidx.daemon.ingest.zmq;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.PodAllowList;
import io.kvidx.daemon.state.PublisherProgress;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;


/**
 * The sequence rules of the ZeroMQ ingest thread: which batch of a publisher is dispatched to the writers, when,
 * and what a gap, a replay, a publisher restart or a restart the daemon did not see does to its pods. Every batch
 * of a publisher is dispatched by this one thread, in sequence order, whether it came live, from a replay, or was
 * held; the writers apply a pod's batches in the order they were dispatched.
 *
 * <p>Replays run on the replay thread ({@link ZmqReplayAgent}); the ingest thread never waits for one. While a
 * publisher's replay is in flight its live batches are held ({@link HeldBatches}, bounded) and applied after the
 * replayed ones; other publishers' batches flow as usual. A replay that continues a stream asks for the batch
 * applied last too, and checks by its {@link BatchFingerprint} that the engine answering is the one that published
 * it (see docs/ingestion.md, "Sequence numbers and replay").
 *
 * <p><b>Note:</b> used by the ZeroMQ ingest thread only.
 */
final class Sequencer implements MessageHandler {
    /** Replay mode: the first message of a publisher (nothing applied yet): catch up with its buffer. */
    static final int INITIAL = 0;
    /** Replay mode: a gap in the live stream (or a check after a disconnect): fill it. */
    static final int GAP = 1;
    /** Replay mode: after a daemon restart, the batches after the recorded sequence. */
    static final int RECOVERY = 2;
    /** Replay mode: the engine restarted; its pods were cleared: rebuild them from its buffer. */
    static final int RESYNC = 3;

    private final WriterPool writers;
    private final IngestErrors errors;
    private final ReplayChannel channel;
    private final boolean clearOnReplayGap;
    private final int replayTimeoutMs;
    private final TopicPods topicPods;
    private final AtomicCounter gaps;
    private final AtomicCounter replays;
    private final AtomicCounter replayFailures;
    private final AtomicCounter resets;
    private final AtomicCounter duplicates;
    private final AtomicCounter replayGapClears;
    private final AtomicCounter engineResyncs;
    private final AtomicCounter holdOverflows;
    /** When the transport thread took the message being handled (live or replayed), for the writer's stages. */
    private long receivedNanos;
    private final UnsafeBuffer payloadBuffer = new UnsafeBuffer(new byte[0]);
    private final RankedPods rankedPods;
    private final UnsafeBuffer scratch = new UnsafeBuffer(new byte[0]);
    private Publisher[] publishers;

    /**
     * @param clearOnReplayGap true: a replay that no longer reaches back clears the pods (policy clear); false:
     *                         keep them and mark them suspect (policy keep).
     */
    Sequencer(final PodDirectory directory, final WriterPool writers, final IngestCounters counters,
        final IngestErrors errors, final ReplayChannel channel, final boolean clearOnReplayGap,
        final int replayTimeoutMs) {
        this.writers = writers;
        this.errors = errors;
        this.channel = channel;
        this.clearOnReplayGap = clearOnReplayGap;
        this.replayTimeoutMs = replayTimeoutMs;
        this.topicPods = new TopicPods(directory, counters.get(CounterType.FRAMING_ERRORS),
            counters.get(CounterType.INVALID_POD_IDS), errors);
        this.gaps = counters.get(CounterType.SEQUENCE_GAPS);
        this.replays = counters.get(CounterType.REPLAYS);
        this.replayFailures = counters.get(CounterType.REPLAY_FAILURES);
        this.resets = counters.get(CounterType.SEQUENCE_RESETS);
        this.duplicates = counters.get(CounterType.DUPLICATE_MESSAGES);
        this.replayGapClears = counters.get(CounterType.REPLAY_GAP_CLEARS);
        this.engineResyncs = counters.get(CounterType.ENGINE_RESYNCS);
        this.holdOverflows = counters.get(CounterType.REPLAY_HOLD_OVERFLOWS);
        this.rankedPods = new RankedPods(directory, counters, errors);
    }

    /**
     * @param allow the topic pod allow-list, or null to accept every pod.
     */
    void topicPodAllowList(final PodAllowList allow) {
        topicPods.allowList(allow);
    }

    void publishers(final Publisher[] all) {
        this.publishers = all;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Live messages
    // ---------------------------------------------------------------------------------------------------------

    /**
     * A live message {@code [topic, seq, payload]}.
     */
    void onLive(final Publisher p, final byte[] topic, final long seq, final byte[] payload) {
        receivedNanos = System.nanoTime();
        final int pod = topicPods.podOf(p, topic);
        if (pod < 0) {
            return;
        }
        if (p.replaying) {
            if (seq > p.lastLive) {
                p.lastLive = seq;
                hold(p, seq, pod, payload);
                return;
            }
            // The stream went back while the replay was in flight: the engine restarted. Its held batches belong
            // to the previous run, whose pods are cleared below.
            cancelReplay(p);
        }
        if (p.next < 0) {
            p.lastLive = seq;
            if (seq > 0 && p.hasReplay() && startReplay(p, INITIAL, 0, -1)) {
                hold(p, seq, pod, payload);
                return;
            }
            applyLive(p, pod, seq, payload);
            return;
        }
        if (seq <= p.lastLive) {
            reset(p, pod, seq, payload);
            return;
        }
        p.lastLive = seq;
        if (seq < p.next) {
            duplicates.increment(); // replay overlap: applied already
            return;
        }
        final boolean gap = seq > p.next;
        if (gap || p.verifyOnNext) {
            p.verifyOnNext = false;
            if (gap) {
                gaps.increment();
            }
            if (p.hasReplay()) {
                if (startReplay(p, GAP, p.next, p.next - 1)) {
                    hold(p, seq, pod, payload);
                    return;
                }
            } else if (gap) {
                replayFailed(p, "sequence gap " + p.next + ".." + (seq - 1) + " and no replay endpoint configured");
            }
        }
        applyLive(p, pod, seq, payload);
    }

    /** The live stream went back: the publisher restarted. Its pods are cleared and the new stream applies. */
    private void reset(final Publisher p, final int pod, final long seq, final byte[] payload) {
        resets.increment();
        final long last = p.lastLive;
        errors.report(CounterType.SEQUENCE_RESETS.typeId(), -1 - p.index, () -> "ZeroMQ " + p.config.endpoint()
            + ": sequence went back from " + last + " to " + seq + " (publisher restart); clearing its pods");
        clearPods(p, pod);
        p.restartSequence();
        p.lastLive = seq;
        p.verifyOnNext = false;
        if (seq > 0) {
            if (p.hasReplay() && startReplay(p, RESYNC, 0, -1)) {
                hold(p, seq, pod, payload);
                return;
            }
            gaps.increment();
            replayFailed(p, "sequence gap 0.." + (seq - 1) + " after a publisher restart and no replay");
        }
        applyLive(p, pod, seq, payload);
    }

    private void hold(final Publisher p, final long seq, final int pod, final byte[] payload) {
        if (!p.held.add(seq, pod, payload)) {
            // Dropped; a follow-up replay fetches it once this one is done (lastLive >= next then).
            holdOverflows.increment();
            if (!p.holdOverflowed) {
                p.holdOverflowed = true;
                errors.report(CounterType.REPLAY_HOLD_OVERFLOWS.typeId(), -1 - p.index, () -> "ZeroMQ "
                    + p.config.endpoint() + ": live batches while its replay is in flight exceed the hold buffer; "
                    + "the excess is fetched by a follow-up replay");
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Replays
    // ---------------------------------------------------------------------------------------------------------

    /** Asks the engine for its batches from {@code from}, first checking it holds batch {@code verify}. */
    private boolean startReplay(final Publisher p, final int mode, final long from, final long verify) {
        final long expect = verify >= 0 ? p.fingerprint(scratch) : BatchFingerprint.NONE;
        p.replayId++;
        p.replayMode = mode;
        p.replayFrom = from;
        p.replayExpect = expect;
        p.replayVerify = expect != BatchFingerprint.NONE ? verify : -1;
        p.replayFirst = -1;
        p.replayStartNext = p.next;
        p.holdOverflowed = false;
        replays.increment();
        final int index = channel.requests.tryClaim(ReplayChannel.REQUEST, ReplayChannel.REQUEST_LENGTH);
        if (index < 0) {
            replayFailed(p, "the replay thread takes no more requests");
            return false;
        }
        final MutableDirectBuffer b = channel.requests.buffer();
        b.putInt(index + ReplayChannel.PUBLISHER_OFFSET, p.index);
        b.putInt(index + ReplayChannel.REPLAY_ID_OFFSET, p.replayId);
        b.putLong(index + ReplayChannel.SEQ_OFFSET, p.replayVerify >= 0 ? p.replayVerify : from);
        channel.requests.commit(index);
        p.replaying = true;
        return true;
    }

    /** A publisher is being removed: its replay in flight, if any, is cancelled (its replies are stale). */
    void forget(final Publisher p) {
        if (p.replaying) {
            cancelReplay(p);
        }
    }

    private void cancelReplay(final Publisher p) {
        final int index = channel.requests.tryClaim(ReplayChannel.CANCEL, ReplayChannel.CANCEL_LENGTH);
        if (index >= 0) {
            channel.requests.buffer().putInt(index + ReplayChannel.PUBLISHER_OFFSET, p.index);
            channel.requests.buffer().putInt(index + ReplayChannel.REPLAY_ID_OFFSET, p.replayId);
            channel.requests.commit(index);
        }
        // Without the cancel the replay thread finishes the old replay; its replies are stale and ignored.
        p.replaying = false;
        p.held.clear();
    }

    /** A reply from the replay thread. */
    @Override
    public void onMessage(final int type, final MutableDirectBuffer buffer, final int index, final int length) {
        final int publisher = buffer.getInt(index + ReplayChannel.PUBLISHER_OFFSET);
        final Publisher p = publisher < publishers.length ? publishers[publisher] : null;
        if (p == null || !p.replaying || buffer.getInt(index + ReplayChannel.REPLAY_ID_OFFSET) != p.replayId) {
            return; // a replay given up or replaced
        }
        switch (type) {
            case ReplayChannel.BATCH -> {
                final int topicLength = buffer.getInt(index + ReplayChannel.TOPIC_LENGTH_OFFSET);
                final int payload = index + ReplayChannel.TOPIC_OFFSET + topicLength;
                onReplayed(p, buffer.getLong(index + ReplayChannel.SEQ_OFFSET), buffer,
                    index + ReplayChannel.TOPIC_OFFSET, topicLength, payload, length - (payload - index));
            }
            case ReplayChannel.SKIPPED -> onReplayed(p, buffer.getLong(index + ReplayChannel.SEQ_OFFSET), buffer,
                0, 0, 0, -1);
            case ReplayChannel.END -> onReplayEnd(p, buffer.getInt(index + ReplayChannel.STATUS_OFFSET));
            default -> {
                // no other type is written
            }
        }
    }

    /** A replayed batch ({@code length} -1: dropped as too large by the replay thread). */
    private void onReplayed(final Publisher p, final long seq, final DirectBuffer buffer, final int topic,
        final int topicLength, final int offset, final int length) {
        receivedNanos = System.nanoTime();
        if (p.replayFirst < 0) {
            p.replayFirst = seq;
            if (seq == p.replayVerify && length >= 0) {
                if (BatchFingerprint.of(buffer, offset, length) == p.replayExpect) {
                    return; // the engine still holds the batch applied last: the same run of the engine
                }
                engineRestarted(p, "its batch " + seq + " is not the one applied under that sequence");
                return;
            }
            if ((p.replayMode == GAP || p.replayMode == RECOVERY) && seq > p.replayFrom) {
                bufferGap(p, seq);
            }
        }
        if (seq < p.next) {
            return; // applied already (overlap)
        }
        if (length < 0) {
            p.dispatched(seq, BatchFingerprint.NONE);
            return;
        }
        final int pod = topicLength > 0 ? topicPods.podOf(p, topicBytes(p, buffer, topic, topicLength))
            : topicPods.lastPod(p);
        if (pod < 0) {
            if (topicLength == 0) {
                framingError(p, "replayed batch without a pod (no topic, no pod configured)");
            }
        } else {
            apply(p, pod, buffer, offset, length, true, seq);
        }
        p.dispatched(seq, pod < 0 ? BatchFingerprint.NONE : BatchFingerprint.of(buffer, offset, length));
    }

    private byte[] topicBytes(final Publisher p, final DirectBuffer buffer, final int offset, final int length) {
        if (p.fixedPod >= 0) {
            return p.lastTopic; // unused: the endpoint names the pod
        }
        final byte[] topic = new byte[length];
        buffer.getBytes(offset, topic);
        return topic;
    }

    private void onReplayEnd(final Publisher p, final int status) {
        p.replaying = false;
        if (status != ReplayChannel.COMPLETE) {
            replayFailed(p, "replay from " + p.replayFrom + " got no end marker in " + ZmqReplayAgent.REPLAY_ATTEMPTS
                + " attempts of " + replayTimeoutMs + " ms");
            drainHeld(p, true);
            return;
        }
        if (p.replayFirst < 0) {
            if (p.replayVerify >= 0) {
                // An engine keeps its latest batches: one that no longer holds the batch applied last restarted.
                engineRestarted(p, "it no longer holds batch " + p.replayVerify + ", the last one applied");
                return;
            }
            if (p.replayMode == GAP) {
                replayFailed(p, "replay from " + p.replayFrom + " returned nothing (the engine's buffer no longer "
                    + "holds the gap)");
            }
            // RECOVERY: nothing published since the recorded sequence; INITIAL, RESYNC: the engine buffers nothing.
        }
        drainHeld(p, false);
    }

    /**
     * Applies the batches held during the replay, in order. A gap left before one of them is fetched by a follow-up
     * replay when this one made progress; otherwise (or when {@code acceptGaps}: the replay failed) it is accepted.
     */
    private void drainHeld(final Publisher p, final boolean acceptGaps) {
        final HeldBatches h = p.held;
        boolean accept = acceptGaps;
        if (p.next < 0 && !h.isEmpty()) {
            p.next = h.seq(0); // a first replay that brought nothing: the stream starts here
        }
        int pos = 0;
        while (pos < h.end()) {
            final long seq = h.seq(pos);
            if (seq < p.next) {
                duplicates.increment();
                pos = h.next(pos);
                continue;
            }
            if (seq > p.next && !accept) {
                if (p.next != p.replayStartNext) {
                    h.dropBefore(pos);
                    pos = 0;
                    gaps.increment();
                    if (startReplay(p, GAP, p.next, p.next - 1)) {
                        return;
                    }
                } else {
                    replayFailed(p, "replay from " + p.replayFrom + " did not reach live batch " + seq);
                }
                accept = true;
            }
            final DirectBuffer b = h.buffer();
            final int offset = h.payloadOffset(pos);
            final int length = h.payloadLength(pos);
            // Held live batches: the replay delayed their visibility, which their event-to-visible time shows.
            apply(p, h.pod(pos), b, offset, length, false, seq);
            p.dispatched(seq, BatchFingerprint.of(b, offset, length));
            pos = h.next(pos);
        }
        h.clear();
        if (p.lastLive >= p.next) {
            // Live batches that did not fit the hold buffer.
            if (!accept && p.next != p.replayStartNext) {
                gaps.increment();
                if (startReplay(p, GAP, p.next, p.next - 1)) {
                    return;
                }
            } else if (!accept) {
                replayFailed(p, "replay from " + p.replayFrom + " did not reach live batch " + p.lastLive);
            }
            p.dispatched(p.lastLive, BatchFingerprint.NONE);
        }
    }

    /** The engine's buffer starts after the first batch the replay had to bring: the replay gap policy. */
    private void bufferGap(final Publisher p, final long first) {
        final long from = p.replayFrom;
        if (!clearOnReplayGap) {
            replayFailed(p, "replay from " + from + " started at " + first + " (the engine's buffer no longer holds "
                + "the gap)");
            return;
        }
        // Policy clear: the pods' blocks may include some the engine dropped meanwhile: clear them, then rebuild
        // them from the replayed batches.
        replayGapClears.increment();
        errors.report(CounterType.REPLAY_GAP_CLEARS.typeId(), -1 - p.index, () -> "ZeroMQ " + p.config.endpoint()
            + ": replay from " + from + " starts at " + first + " (the engine no longer buffers the gap); its pods "
            + "are cleared and rebuilt from the replay");
        clearPods(p, -1);
    }

    /**
     * The engine answering the replay is not the run that published the batches applied: it restarted while the
     * daemon was down or disconnected, and its sequence passed the one the daemon knew. Its pods are cleared and
     * rebuilt from everything it still buffers; its live batches held meanwhile stay held.
     */
    private void engineRestarted(final Publisher p, final String why) {
        engineResyncs.increment();
        errors.report(CounterType.ENGINE_RESYNCS.typeId(), -1 - p.index, () -> "ZeroMQ " + p.config.endpoint()
            + ": the engine restarted unseen (" + why + "); its pods are cleared and resynced from its replay buffer");
        clearPods(p, -1);
        p.restartSequence();
        if (!startReplay(p, RESYNC, 0, -1)) {
            p.replaying = false;
            drainHeld(p, true);
        }
    }

    private void replayFailed(final Publisher p, final String why) {
        replayFailures.increment();
        errors.report(CounterType.REPLAY_FAILURES.typeId(), -1 - p.index,
            () -> "ZeroMQ " + p.config.endpoint() + ": " + why + "; its pods are marked suspect");
        for (int i = 0; i < p.pods.size(); i++) {
            writers.offer(p.pods.getInt(i), WriterMessages.MARK_SUSPECT);
        }
    }

    /**
     * After a daemon restart: resumes the publisher after its recorded sequence and, before applying any live
     * message of it, replays what the engine published since (checking the engine still holds the recorded batch).
     */
    void recover(final Publisher p, final PublisherProgress.Entry e) {
        p.resume(e.sequence(), e.fingerprint());
        if (p.fixedPod < 0 && e.podId() != null) {
            // A fresh handle (the directory is new); resolved again by its id should it go stale before it is used.
            final int pod = topicPods.remember(p, p.lastTopic, e.podId(), p.config.model());
            if (pod >= 0) {
                writers.offer(pod, WriterMessages.REGISTER);
            }
        }
        if (p.hasReplay()) {
            startReplay(p, RECOVERY, p.next, e.fingerprint() != PublisherProgress.NO_FINGERPRINT ? e.sequence() : -1);
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Pods and dispatch
    // ---------------------------------------------------------------------------------------------------------

    void framingError(final Publisher p, final String what) {
        topicPods.framingError(p, what);
    }

    private void clearPods(final Publisher p, final int extraPod) {
        for (int i = 0; i < p.pods.size(); i++) {
            writers.offer(p.pods.getInt(i), WriterMessages.CLEAR_POD);
        }
        if (extraPod >= 0 && !p.pods.containsInt(extraPod)) {
            writers.offer(extraPod, WriterMessages.CLEAR_POD);
        }
    }

    private void applyLive(final Publisher p, final int pod, final long seq, final byte[] payload) {
        payloadBuffer.wrap(payload);
        apply(p, pod, payloadBuffer, 0, payload.length, false, seq);
        p.dispatched(seq, payload);
    }

    /**
     * Queues one batch for the writer of its pod: the pod the topic or endpoint names, refined by the batch's
     * data-parallel rank ({@link RankedPods}: {@code <pod>#<r>} for rank r > 0, added to the publisher's pods),
     * decoded by the writer in the endpoint's engine format. A batch whose rank pod cannot be registered is dropped
     * (counted there). A replayed batch is queued as such ({@link WriterMessages#VLLM_BATCH_REPLAYED}): its timestamp
     * is as old as the gap or the daemon's downtime, so the writer does not observe it as event-to-visible time.
     * The batch's sequence goes with it to the pool's tap (a JetStream relay's, {@link WriterPool#tap}).
     */
    private void apply(final Publisher p, final int pod, final DirectBuffer payload, final int offset,
        final int length, final boolean replayed, final long seq) {
        // An engine registered for one rank (its pod id names it) is that rank's pod, whatever the batch says.
        final int ranked = p.rankFixed ? pod : rankedPods.podOf(pod, payload, offset, length);
        if (ranked < 0) {
            return;
        }
        p.lastFedPod = ranked;
        if (ranked != pod && !p.pods.containsInt(ranked)) {
            p.pods.addInt(ranked);
        }
        writers.offer(ranked, WriterMessages.batchType(p.config.engine() == ZmqEndpoint.Engine.SGLANG, replayed),
            payload, offset, length, receivedNanos, seq);
    }
}
