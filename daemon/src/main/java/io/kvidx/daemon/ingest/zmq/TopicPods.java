package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.PodIds;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.PodAllowList;
import io.kvidx.daemon.writer.PodDirectory;
import org.agrona.concurrent.status.AtomicCounter;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Names the pod of a ZeroMQ message: the pod configured for its endpoint, or the one its topic
 * {@code kv@<pod>@<model>} names (registered in the {@link PodDirectory} on first sight, remembered per publisher
 * so that a repeated topic costs one comparison and one {@link PodDirectory#isCurrent} read; a remembered handle
 * that is no longer current, its pod having gone down, is resolved again: a new handle). A topic that names no pod
 * is a framing error, counted and logged. With a topic pod allow-list ({@code zmqTopicPods}), a topic naming a pod
 * outside it is dropped before its pod is registered (counted and logged by the {@link PodAllowList}, whose verdict
 * per pod id is cached: a refused topic seen before allocates nothing). A topic whose pod id is not a valid one
 * ({@link PodIds}) is dropped and counted ({@link CounterType#INVALID_POD_IDS}) before its pod is registered.
 *
 * <p><b>Note:</b> used by the ZeroMQ ingest thread only (through its {@link Sequencer}).
 */
final class TopicPods {
    private final PodDirectory directory;
    private final AtomicCounter framingErrors;
    private final AtomicCounter invalidPodIds;
    private final IngestErrors errors;
    private PodAllowList allowList;

    TopicPods(final PodDirectory directory, final AtomicCounter framingErrors, final AtomicCounter invalidPodIds,
        final IngestErrors errors) {
        this.directory = directory;
        this.framingErrors = framingErrors;
        this.invalidPodIds = invalidPodIds;
        this.errors = errors;
    }

    /**
     * @return the pod of a message: the endpoint's, or the one its topic {@code kv@<pod>@<model>} names; -1 (counted,
     * logged) when neither.
     */
    int podOf(final Publisher p, final byte[] topic) {
        if (p.fixedPod >= 0) {
            return p.fixedPod;
        }
        if (Arrays.equals(topic, p.lastTopic) && directory.isCurrent(p.lastTopicPod)) {
            return p.lastTopicPod;
        }
        if (!allowed(allowList, topic) || !validPod(topic, invalidPodIds, errors, p.config.endpoint())) {
            return -1;
        }
        // SGLang publishers with a snapshot endpoint append "\0sgl-kv-epoch=<epoch>" (and barrier markers) to the
        // topic: the pod and model are what precedes the first NUL.
        int end = 0;
        while (end < topic.length && topic[end] != 0) {
            end++;
        }
        final String t = new String(topic, 0, end, StandardCharsets.UTF_8);
        final String[] parts = t.split("@", -1);
        if (parts.length < 2 || !"kv".equals(parts[0]) || parts[1].isEmpty()) {
            framingError(p, "topic '" + t + "' is not kv@<pod>@<model> and no pod is configured for the endpoint");
            return -1;
        }
        final String model = parts.length > 2 ? String.join("@", Arrays.copyOfRange(parts, 2, parts.length))
            : p.config.model();
        final int pod = remember(p, topic, parts[1], model == null || model.isEmpty() ? p.config.model() : model);
        if (pod < 0) {
            framingError(p, "too many pods; topic '" + t + "' dropped");
        }
        return pod;
    }

    /**
     * @return the pod the publisher's batches go to when a batch names none (a replay reply without a topic): the
     * endpoint's, or its last topic's (resolved again when its handle is stale); -1 when neither (or the directory
     * is full, counted and logged).
     */
    int lastPod(final Publisher p) {
        if (p.fixedPod >= 0) {
            return p.fixedPod;
        }
        if (p.lastTopicPod < 0 || directory.isCurrent(p.lastTopicPod)) {
            return p.lastTopicPod;
        }
        final int pod = remember(p, p.lastTopic, p.lastTopicPodId, p.lastTopicModel);
        if (pod < 0) {
            framingError(p, "too many pods; pod " + p.lastTopicPodId + " dropped");
        }
        return pod;
    }

    /**
     * Resolves a pod id to its handle and makes it the publisher's last topic pod, with the topic that named it
     * (empty when the pod came from a daemon restart's record).
     *
     * @return the handle, or -1 when the directory is full (the publisher's last topic pod is then none).
     */
    int remember(final Publisher p, final byte[] topic, final String podId, final String model) {
        final int pod = directory.podNumber(podId, model);
        if (pod >= 0 && !p.pods.containsInt(pod)) {
            p.pods.addInt(pod);
        }
        p.lastTopic = topic;
        p.lastTopicPod = pod;
        p.lastTopicPodId = podId;
        p.lastTopicModel = model;
        return pod;
    }

    /**
     * @param allow the topic pod allow-list, or null to accept every pod.
     */
    void allowList(final PodAllowList allow) {
        this.allowList = allow;
    }

    /**
     * Checks the pod a topic {@code kv@<pod>[@<model>][\0...]} names against an allow-list (without allocating for a
     * pod id seen before); a topic of another shape passes, to be reported as a framing error by its parser.
     *
     * @return false (counted, logged) when the list refuses the pod.
     */
    static boolean allowed(final PodAllowList allow, final byte[] topic) {
        if (allow == null || allow.allowsAll()) {
            return true;
        }
        if (topic.length < 3 || topic[0] != 'k' || topic[1] != 'v' || topic[2] != '@') {
            return true;
        }
        int end = 3;
        while (end < topic.length && topic[end] != '@' && topic[end] != 0) {
            end++;
        }
        return end == 3 || allow.allows(topic, 3, end - 3);
    }

    /**
     * Checks the pod id a topic {@code kv@<pod>[@<model>][\0...]} names ({@link PodIds#isPodId}), without allocating;
     * a topic of another shape passes, to be reported as a framing error by its parser.
     *
     * @param topic     the topic.
     * @param invalid   counts a refusal.
     * @param errors    logs the first refusal of the endpoint (the id escaped and cut: it is a stranger's text).
     * @param where     the endpoint, for the log.
     * @return false (counted, logged) when the pod id is not a valid one: the message is dropped.
     */
    static boolean validPod(final byte[] topic, final AtomicCounter invalid, final IngestErrors errors,
        final String where) {
        if (topic.length < 3 || topic[0] != 'k' || topic[1] != 'v' || topic[2] != '@') {
            return true;
        }
        int end = 3;
        while (end < topic.length && topic[end] != '@' && topic[end] != 0) {
            end++;
        }
        if (end == 3 || PodIds.isPodId(topic, 3, end - 3)) {
            return true;
        }
        invalid.increment();
        final int podEnd = end;
        errors.report(CounterType.INVALID_POD_IDS.typeId(), -1, () -> "ZeroMQ " + where + ": topic pod id '"
            + PodIds.printable(new String(topic, 3, podEnd - 3, StandardCharsets.UTF_8)) + "' is not a valid pod "
            + "id (" + PodIds.CHARACTERS + ", at most " + PodIds.MAX_LENGTH + " bytes, '#' only before a rank); its "
            + "messages are dropped (counted: " + CounterType.INVALID_POD_IDS.label() + ")");
        return false;
    }

    /** Counts a framing error of a publisher's message and logs it (once per distinct text, by the error log). */
    void framingError(final Publisher p, final String what) {
        framingErrors.increment();
        errors.report(CounterType.FRAMING_ERRORS.typeId(), -1 - p.index,
            () -> "ZeroMQ " + p.config.endpoint() + ": " + what + "; dropped");
    }
}
