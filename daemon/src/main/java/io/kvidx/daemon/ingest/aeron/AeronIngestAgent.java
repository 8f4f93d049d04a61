package io.kvidx.daemon.ingest.aeron;

import io.aeron.Aeron;
import io.aeron.FragmentAssembler;
import io.aeron.Subscription;
import io.aeron.logbuffer.FragmentHandler;
import io.aeron.logbuffer.Header;
import io.kvidx.client.index.PodIds;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.PodAllowList;
import io.kvidx.daemon.writer.PodDirectory;
import io.kvidx.daemon.writer.WriterMessages;
import io.kvidx.daemon.writer.WriterPool;
import io.kvidx.sbe.events.AllBlocksClearedDecoder;
import io.kvidx.sbe.events.BlockRemovedDecoder;
import io.kvidx.sbe.events.BlockStoredDecoder;
import io.kvidx.sbe.events.PodDownDecoder;
import io.kvidx.sbe.events.PodHeartbeatDecoder;
import io.kvidx.sbe.events.PodRegisterDecoder;
import org.agrona.CloseHelper;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.status.AtomicCounter;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Subscribes to kvidx SBE events on Aeron channels (IPC and/or UDP) and hands them to the pods' writer agents.
 * Every message is checked by {@link SbeEventFrame} first; a wrong schema id or version, an unknown template, an
 * absurd group size or a truncated message is dropped, counted and logged once.
 *
 * <p>Sequences are tracked per pod: a jump forward is a gap (Aeron delivers reliably, so the publisher itself
 * lost events; no replay exists for SBE): counted, pod marked suspect. A step back is a publisher restart: the pod
 * is cleared first.
 *
 * <p>Pods are {@link PodDirectory} handles. A PodDown frees the pod's number as soon as it is queued, so that the
 * pod's next message (a restart right after) gets a new handle and is queued behind the PodDown; the last pod's
 * cached handle is checked with {@link PodDirectory#isCurrent} before use, and the sequence tracked per number is
 * started again when the number holds another handle.
 *
 * <p>The pod id comes from the wire: with an allow-list ({@code aeron.pods}), a message of a pod outside it is
 * dropped before its pod is registered, counted ({@link CounterType#PODS_NOT_ALLOWED}) and logged once per pod id.
 * The verdict is cached per pod id ({@link PodAllowList}); the last pod's own messages skip the check. A pod id
 * that is not a valid one ({@link PodIds}) is dropped the same way, counted as {@link CounterType#INVALID_POD_IDS}.
 *
 * <p><b>Note:</b> run by one {@link org.agrona.concurrent.AgentRunner}.
 */
public final class AeronIngestAgent implements Agent, FragmentHandler {
    private static final int FRAGMENT_LIMIT = 64;

    private final Aeron aeron;
    private final List<String> channels;
    private final int streamId;
    private final PodDirectory directory;
    private final WriterPool writers;
    private final IngestErrors errors;
    private final AtomicCounter decodeErrors;
    private final AtomicCounter invalidPodIds;
    private final byte[] podIdScratch = new byte[PodIds.MAX_LENGTH];
    private final AtomicCounter gaps;
    private final AtomicCounter resets;
    private final PodAllowList allowList;
    private final SbeEventFrame frame = new SbeEventFrame();
    private final FragmentAssembler assembler = new FragmentAssembler(this);
    private final List<Subscription> subscriptions = new ArrayList<>();
    private Subscription[] polled = new Subscription[0];
    private byte[] lastPodId = new byte[0];
    private int lastPodIdLength = -1;
    private int lastPod = -1;
    private long[] lastSequence = new long[16];
    /** The handle whose sequence {@link #lastSequence} tracks, per pod number. */
    private int[] sequencePod = new int[16];

    /**
     * @param aeron       Aeron client.
     * @param channels    channels to subscribe to, e.g. {@code aeron:ipc} or
     *                    {@code aeron:udp?endpoint=127.0.0.1:40456}.
     * @param streamId    stream id.
     * @param directory   pod ids.
     * @param writers     writer agents.
     * @param counters    counters.
     * @param errors      error log.
     * @param allowedPods pod ids or globs whose messages are accepted; empty accepts every pod.
     * @param setting     the allow-list's YAML key, named in the log.
     */
    public AeronIngestAgent(final Aeron aeron, final List<String> channels, final int streamId,
        final PodDirectory directory, final WriterPool writers, final IngestCounters counters,
        final IngestErrors errors, final List<String> allowedPods, final String setting) {
        this.aeron = aeron;
        this.channels = List.copyOf(channels);
        this.streamId = streamId;
        this.directory = directory;
        this.writers = writers;
        this.errors = errors;
        this.decodeErrors = counters.get(CounterType.DECODE_ERRORS);
        this.invalidPodIds = counters.get(CounterType.INVALID_POD_IDS);
        this.gaps = counters.get(CounterType.SEQUENCE_GAPS);
        this.resets = counters.get(CounterType.SEQUENCE_RESETS);
        this.allowList = new PodAllowList("Aeron stream " + streamId, setting,
            allowedPods, counters.get(CounterType.PODS_NOT_ALLOWED), errors,
            CounterType.PODS_NOT_ALLOWED.typeId() * 64);
        Arrays.fill(lastSequence, -1);
    }

    @Override
    public void onStart() {
        for (final String channel : channels) {
            subscriptions.add(aeron.addSubscription(channel, streamId));
        }
        polled = subscriptions.toArray(new Subscription[0]);
    }

    @Override
    public int doWork() {
        int work = 0;
        for (final Subscription s : polled) {
            work += s.poll(assembler, FRAGMENT_LIMIT);
        }
        return work;
    }

    @Override
    public void onFragment(final DirectBuffer buffer, final int offset, final int length, final Header header) {
        final long received = System.nanoTime();
        final int problem = frame.check(buffer, offset, length);
        if (problem != SbeEventFrame.OK) {
            decodeErrors.increment();
            errors.report(CounterType.DECODE_ERRORS.typeId() * 64 + problem, -1 - header.sessionId(),
                () -> "Aeron stream " + streamId + " session " + header.sessionId() + ": "
                    + SbeEventFrame.describe(problem) + "; message dropped");
            return;
        }
        final int pod = resolvePod(buffer);
        if (pod < 0) {
            return;
        }
        track(pod, frame.sequence());
        switch (frame.templateId()) {
            case BlockStoredDecoder.TEMPLATE_ID, BlockRemovedDecoder.TEMPLATE_ID, AllBlocksClearedDecoder.TEMPLATE_ID ->
                writers.offer(pod, WriterMessages.SBE_EVENT, buffer, offset, length, received, frame.sequence());
            case PodRegisterDecoder.TEMPLATE_ID -> writers.offer(pod, WriterMessages.REGISTER);
            case PodHeartbeatDecoder.TEMPLATE_ID -> writers.offer(pod, WriterMessages.HEARTBEAT);
            case PodDownDecoder.TEMPLATE_ID -> {
                writers.offer(pod, WriterMessages.POD_DOWN);
                // Its writer applies the POD_DOWN for the state this handle names; a pinned pod keeps its number.
                directory.release(pod);
            }
            default -> decodeErrors.increment();
        }
    }

    private void track(final int pod, final long sequence) {
        final int number = PodDirectory.number(pod);
        if (number >= lastSequence.length) {
            final int old = lastSequence.length;
            lastSequence = Arrays.copyOf(lastSequence, Math.max(number + 1, old * 2));
            sequencePod = Arrays.copyOf(sequencePod, lastSequence.length);
            Arrays.fill(lastSequence, old, lastSequence.length, -1);
        }
        if (sequencePod[number] != pod) {
            // The number's previous pod is gone: this one's sequence starts here.
            sequencePod[number] = pod;
            lastSequence[number] = -1;
        }
        final long last = lastSequence[number];
        if (last >= 0) {
            if (sequence <= last) {
                resets.increment();
                errors.report(CounterType.SEQUENCE_RESETS.typeId(), number, () -> "Aeron pod " + directory.podId(pod)
                    + ": sequence went back from " + last + " to " + sequence + " (publisher restart); pod cleared");
                writers.offer(pod, WriterMessages.CLEAR_POD);
            } else if (sequence > last + 1) {
                gaps.increment();
                errors.report(CounterType.SEQUENCE_GAPS.typeId(), number, () -> "Aeron pod " + directory.podId(pod)
                    + ": sequence gap " + (last + 1) + ".." + (sequence - 1) + " (the publisher lost events; no "
                    + "replay over Aeron); pod marked suspect");
                writers.offer(pod, WriterMessages.MARK_SUSPECT);
            }
        }
        lastSequence[number] = sequence;
    }

    private int resolvePod(final DirectBuffer buffer) {
        final int off = frame.podIdOffset();
        final int len = frame.podIdLength();
        if (len == lastPodIdLength) {
            boolean same = true;
            for (int i = 0; i < len; i++) {
                if (buffer.getByte(off + i) != lastPodId[i]) {
                    same = false;
                    break;
                }
            }
            if (same && directory.isCurrent(lastPod)) {
                return lastPod;
            }
        }
        if (!allowList.allows(buffer, off, len)) {
            return -1;
        }
        if (len <= 0 || len > PodIds.MAX_LENGTH) {
            return invalidPodId(buffer, off, Math.clamp(len, 0, PodIds.MAX_LENGTH));
        }
        buffer.getBytes(off, podIdScratch, 0, len);
        if (!PodIds.isPodId(podIdScratch, 0, len)) {
            return invalidPodId(buffer, off, len);
        }
        final byte[] id = new byte[len];
        buffer.getBytes(off, id);
        final String podId = new String(id, StandardCharsets.UTF_8);
        final String model = frame.modelLength() == 0 ? null
            : buffer.getStringWithoutLengthUtf8(frame.modelOffset(), frame.modelLength());
        final int pod = directory.podNumber(podId, model);
        if (pod < 0) {
            decodeErrors.increment();
            errors.report(CounterType.PODS_REJECTED.typeId(), -1, () -> "Aeron: too many pods; " + podId
                + " dropped");
            return -1;
        }
        lastPodId = id;
        lastPodIdLength = len;
        lastPod = pod;
        return pod;
    }

    /** Drops a message whose pod id is not a valid one: counted, the first logged (escaped, cut). */
    private int invalidPodId(final DirectBuffer buffer, final int off, final int len) {
        invalidPodIds.increment();
        errors.report(CounterType.INVALID_POD_IDS.typeId(), -1, () -> "Aeron stream " + streamId + ": pod id '"
            + PodIds.printable(buffer.getStringWithoutLengthUtf8(off, len)) + "' is not a valid pod id ("
            + PodIds.CHARACTERS + ", at most " + PodIds.MAX_LENGTH + " bytes, '#' only before a rank); its messages "
            + "are dropped (counted: " + CounterType.INVALID_POD_IDS.label() + ")");
        return -1;
    }

    @Override
    public void onClose() {
        CloseHelper.closeAll(subscriptions);
    }

    @Override
    public String roleName() {
        return "kvidx-aeron-ingest";
    }
}
