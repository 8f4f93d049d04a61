package io.kvidx.daemon.jetstream;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.writer.WriterMessages;
import io.nats.client.JetStreamManagement;
import io.nats.client.KeyValue;
import org.agrona.concurrent.status.AtomicCounter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * The relays' per-pod leases (ADR 0024, "Relay lease"): of the relays subscribed to the same engines, only the one
 * holding a pod's lease publishes the pod's messages; the others keep them in a backlog and stand by. A lease is a key
 * of a JetStream KV bucket whose TTL is the lease's ({@code jetstream.leaseTtlMs}): taken with {@code create} (only
 * when the key is absent, i.e. expired or released), renewed every {@link #RENEW_DIVISOR}th of the TTL with
 * {@code update} at the revision the holder last wrote (compare-and-set: refused once another relay took it). The
 * holder publishes only until half the TTL after it sent its last successful write, measured on its own monotonic
 * clock; the bucket forgets the key no sooner than the TTL after that write, so the holder has stopped for at least
 * half the TTL before any other relay can take the pod.
 *
 * <p>A standby learns where the stream is by reading the last message on the pod's subject: its id names the pod's
 * last published batch ({@code <pod>/…/<sequence>/<fingerprint>}); the backlog is trimmed through the same message
 * (same id) or through that batch. When a standby takes a lease over, it reads the subject's last message again,
 * drops what the stream holds and publishes the rest in order. Where the stream's last message is not in the backlog
 * (the holder saw an engine restart that this relay saw at another point), the backlog is published from its last
 * clear on, so that the consumers clear the pod and apply this relay's view from there; failing that, all of it (a
 * consumer skips the batches it has by their sequence). Messages published under a lease carry its revision in their
 * id ({@code <id>@<revision>}), so that a takeover's re-publication is never dropped as an earlier holder's duplicate.
 *
 * <p><b>Note:</b> called by the relay's agent thread only; the KV and stream requests run on the lease thread of
 * {@link LeaseBucket}, whose results the agent collects in {@link #poll(long)}.
 */
final class RelayLeases implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RelayLeases.class);
    /** A holder renews its leases every TTL / this. */
    static final int RENEW_DIVISOR = 5;
    private static final long RELEASE_WAIT_MS = 2_000;
    /**
     * A pod with no message for this many TTLs, and nothing of it held or in flight, has its lease released by its
     * holder and forgotten by the others (a pod gone for good costs no renewals); its next message makes it again.
     */
    static final int RETIRE_TTLS = 12;
    /** A standby tries to take a lease every fifth of the TTL, and at least this often (a released one). */
    private static final long MAX_ATTEMPT_INTERVAL_NS = TimeUnit.SECONDS.toNanos(1);

    private final LeaseBucket bucket;
    private final long ttlNs;
    /** How often a standby tries to take a lease (and reads where the stream is). */
    private final long attemptNs;
    private final IngestErrors errors;
    private final AtomicCounter held;
    private final AtomicCounter takeovers;
    private final AtomicCounter lost;
    private final AtomicCounter standbyMessages;
    private final Map<String, Lease> bySubject = new HashMap<>();
    private final List<Lease> leases = new ArrayList<>();
    /** Messages in every backlog, and their bytes. */
    private long backlogMessages;
    private long backlogBytes;

    /** One pod's (subject's) lease and backlog. */
    static final class Lease {
        final String subject;
        final String key;
        /** Messages not (yet) published by this relay, in queue order. */
        final ArrayDeque<RelayMessage> backlog = new ArrayDeque<>();
        private boolean holding;
        /** The revision this relay last wrote, or 0. */
        private long revision;
        private long validUntilNs;
        private long nextRequestNs;
        private CompletableFuture<LeaseBucket.Outcome> request;
        /** The stream's last message id this backlog was last trimmed against. */
        private String trimmedAgainst;
        /** When the relay last took a message of the pod from its queue. */
        private long lastMessageNs;

        Lease(final String subject, final String key) {
            this.subject = subject;
            this.key = key;
        }

        /**
         * @param nowNs the monotonic clock.
         * @return true while this relay may publish the pod's messages.
         */
        boolean publishing(final long nowNs) {
            return holding && nowNs - validUntilNs < 0;
        }

        /**
         * @return the id suffix of messages published under this lease.
         */
        String suffix() {
            return "@" + revision;
        }
    }

    /**
     * @param bucket     the lease bucket (its TTL is the lease's).
     * @param ttlMs      the bucket's TTL.
     * @param management stream reads (the last message of a pod's subject).
     * @param stream     the stream's name.
     * @param holder     this relay's name, stored as the value of the leases it holds (for operators).
     * @param counters   counters.
     * @param errors     error log.
     */
    RelayLeases(final KeyValue bucket, final long ttlMs, final JetStreamManagement management, final String stream,
        final String holder, final IngestCounters counters, final IngestErrors errors) {
        this.bucket = new LeaseBucket(bucket, management, stream, holder);
        this.ttlNs = TimeUnit.MILLISECONDS.toNanos(ttlMs);
        this.attemptNs = Math.min(ttlNs / RENEW_DIVISOR, MAX_ATTEMPT_INTERVAL_NS);
        this.errors = errors;
        this.held = counters.get(CounterType.JETSTREAM_LEASES_HELD);
        this.takeovers = counters.get(CounterType.JETSTREAM_LEASE_TAKEOVERS);
        this.lost = counters.get(CounterType.JETSTREAM_LEASES_LOST);
        this.standbyMessages = counters.get(CounterType.JETSTREAM_STANDBY_MESSAGES);
    }

    /**
     * @param subject a pod's subject ({@code <prefix>.<model>.<pod>}, tokens encoded by {@link StreamSubjects}).
     * @param prefix  the subject prefix.
     * @param nowNs   the monotonic clock.
     * @return the pod's lease, made (standing by, its first request due now) on the pod's first message (or its
     * first after the lease was retired).
     */
    Lease of(final String subject, final String prefix, final long nowNs) {
        Lease lease = bySubject.get(subject);
        if (lease == null) {
            // The model and pod tokens keep A-Z a-z 0-9 - _ and write other bytes ~XX; a KV key may not hold '~'.
            lease = new Lease(subject, subject.substring(prefix.length() + 1).replace('~', '='));
            lease.nextRequestNs = nowNs;
            bySubject.put(subject, lease);
            leases.add(lease);
        }
        lease.lastMessageNs = nowNs;
        return lease;
    }

    /**
     * @return every lease, in the order of their pods' first messages.
     */
    List<Lease> all() {
        return leases;
    }

    /**
     * @param m a message to keep while this relay does not publish its pod.
     */
    void hold(final RelayMessage m) {
        m.lease.backlog.addLast(m);
        backlogMessages++;
        backlogBytes += m.body.length;
        standbyMessages.setRelease(backlogMessages);
    }

    /**
     * Puts back, at the front of their backlogs and in their order, messages sent under a lease that has lapsed since.
     *
     * @param sent the messages, in the order they were sent.
     */
    void restore(final List<RelayMessage> sent) {
        for (int i = sent.size() - 1; i >= 0; i--) {
            final RelayMessage m = sent.get(i);
            m.lease.backlog.addFirst(m);
            backlogMessages++;
            backlogBytes += m.body.length;
        }
        standbyMessages.setRelease(backlogMessages);
    }

    /**
     * @param lease a lease.
     * @return its backlog's oldest message, removed.
     */
    RelayMessage take(final Lease lease) {
        final RelayMessage m = lease.backlog.pollFirst();
        backlogMessages--;
        backlogBytes -= m.body.length;
        standbyMessages.setRelease(backlogMessages);
        return m;
    }

    /**
     * @param nowNs the monotonic clock.
     * @return true when a pod whose lease this relay holds still has held messages to publish.
     */
    boolean publishable(final long nowNs) {
        if (backlogMessages == 0) {
            return false;
        }
        for (final Lease lease : leases) {
            if (!lease.backlog.isEmpty() && lease.publishing(nowNs)) {
                return true;
            }
        }
        return false;
    }

    /**
     * @return bytes of the messages held in backlogs.
     */
    long backlogBytes() {
        return backlogBytes;
    }

    /**
     * @return messages held in backlogs.
     */
    long backlogMessages() {
        return backlogMessages;
    }

    /**
     * Collects the lease thread's results and starts the requests that are due: a standby's attempt to take a lease
     * (and read where the stream is), a holder's renewal. A holder whose lease is past its validity stands by.
     *
     * @param nowNs the monotonic clock.
     * @return work done.
     */
    int poll(final long nowNs) {
        int work = 0;
        for (final Lease lease : leases) {
            if (lease.holding && nowNs - lease.validUntilNs >= 0) {
                lapse(lease, "not renewed within half its TTL");
                work++;
            }
            final CompletableFuture<LeaseBucket.Outcome> request = lease.request;
            if (request != null) {
                if (!request.isDone()) {
                    continue;
                }
                lease.request = null;
                work++;
                complete(lease, request);
            }
            if (nowNs - lease.nextRequestNs >= 0) {
                lease.nextRequestNs = nowNs + (lease.holding ? ttlNs / RENEW_DIVISOR : attemptNs);
                final boolean holding = lease.holding;
                final String key = lease.key;
                final String subject = lease.subject;
                final long revision = lease.revision;
                lease.request = holding ? bucket.renew(key, revision) : bucket.attempt(key, subject, revision);
                work++;
            }
        }
        return work;
    }

    private void complete(final Lease lease, final CompletableFuture<LeaseBucket.Outcome> request) {
        final LeaseBucket.Outcome outcome;
        try {
            outcome = request.join();
        } catch (final CompletionException ex) {
            final Throwable cause = ex.getCause() == null ? ex : ex.getCause();
            errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -10, () -> "JetStream lease of " + lease.subject
                + ": " + cause);
            return; // tried again at the next interval; a holder's lease lapses if that lasts
        }
        if (lease.holding || outcome.renewal()) {
            if (!lease.holding) {
                // Lapsed while the renewal was on its way: a later attempt takes it again from this revision.
                lease.revision = outcome.holds() ? outcome.revision() : 0;
            } else if (outcome.holds()) {
                lease.revision = outcome.revision();
                lease.validUntilNs = outcome.sentNanos() + ttlNs / 2;
            } else {
                lapse(lease, "another relay holds it");
            }
            return;
        }
        if (!outcome.holds()) {
            lease.revision = 0;
            trim(lease, outcome.streamLastId(), false);
            return;
        }
        lease.holding = true;
        lease.revision = outcome.revision();
        lease.validUntilNs = outcome.sentNanos() + ttlNs / 2;
        lease.nextRequestNs = outcome.sentNanos() + ttlNs / RENEW_DIVISOR;
        final int before = lease.backlog.size();
        trim(lease, outcome.streamLastId(), true);
        takeovers.increment();
        held.increment();
        LOG.info("JetStream lease of {} taken (revision {}): the stream ends at {}; {} of {} held message(s) to "
            + "publish", lease.subject, lease.revision, outcome.streamLastId(), lease.backlog.size(), before);
    }

    private void lapse(final Lease lease, final String why) {
        lease.holding = false;
        lost.increment();
        held.decrement();
        errors.report(CounterType.JETSTREAM_LEASES_LOST.typeId(), -1, () -> "JetStream lease of " + lease.subject
            + " lost (" + why + "): its messages are held until this relay takes the lease again");
    }

    /** Drops from a backlog what the stream already holds ({@link #inStream}). */
    private void trim(final Lease lease, final String streamLastId, final boolean takeover) {
        final ArrayDeque<RelayMessage> backlog = lease.backlog;
        final int matched = inStream(backlog, streamLastId, false);
        if (matched < 0) {
            errors.report(CounterType.JETSTREAM_ERRORS.typeId(), -11, () -> "JetStream lease of " + lease.subject
                + ": the stream's last message id " + streamLastId + " names no batch");
            return;
        }
        int drop = matched;
        if (matched > 0 || streamLastId == null) {
            lease.trimmedAgainst = streamLastId == null ? null : baseId(streamLastId);
        } else if (takeover && !baseId(streamLastId).equals(lease.trimmedAgainst)) {
            // Not trimmed through it before: this relay saw the pod otherwise than the holder.
            drop = inStream(backlog, streamLastId, true);
            final String first = backlog.isEmpty() ? "nothing" : backlog.peekFirst().baseId;
            LOG.info("JetStream lease of {}: the stream's last message {} is not among the {} held; publishing from "
                + (drop > 0 ? "the last clear" : "the oldest held ({})"), lease.subject, streamLastId,
                backlog.size(), first);
        }
        for (; drop > 0; drop--) {
            take(lease);
        }
    }

    /**
     * The rule by which a standby drops what the stream holds: everything through the message whose id the stream's
     * last message of the pod has (revision aside), else through the batch that id names; at a takeover, when
     * neither is held, everything before the last clear held.
     *
     * @param backlog      a pod's held messages, oldest first.
     * @param streamLastId the id of the stream's last message on the pod's subject, or null when it holds none.
     * @param takeover     true when this relay has just taken the pod's lease.
     * @return how many of the oldest messages to drop (0: publish them all), or -1 when the id names no batch.
     */
    static int inStream(final Iterable<RelayMessage> backlog, final String streamLastId, final boolean takeover) {
        if (streamLastId == null) {
            return 0; // nothing of the pod in the stream: all of it is to publish
        }
        final String base = baseId(streamLastId);
        final int named = base.lastIndexOf('/');
        final long sequence;
        final long fingerprint;
        try {
            sequence = Long.parseLong(base, base.lastIndexOf('/', named - 1) + 1, named, 10);
            fingerprint = Long.parseUnsignedLong(base, named + 1, base.length(), 16);
        } catch (final NumberFormatException | IndexOutOfBoundsException ex) {
            return -1;
        }
        int through = -1;
        int batch = -1;
        int clear = -1;
        int i = 0;
        for (final RelayMessage m : backlog) {
            if (m.baseId.equals(base)) {
                through = i;
            }
            if (WriterMessages.carriesEvents(m.type) && m.sequence == sequence && m.fingerprint == fingerprint) {
                batch = i;
            }
            if (m.type == WriterMessages.CLEAR_POD) {
                clear = i;
            }
            i++;
        }
        return through >= 0 ? through + 1 : batch >= 0 ? batch + 1 : takeover && clear >= 0 ? clear : 0;
    }

    /**
     * @param id a published message id.
     * @return it without a lease's revision.
     */
    static String baseId(final String id) {
        final int at = id.lastIndexOf('@');
        return at < 0 ? id : id.substring(0, at);
    }

    /**
     * Retires the leases of pods without a message for {@link #RETIRE_TTLS} TTLs, nothing held and nothing in flight:
     * a held one is released (deleted at its revision, not waited for), a standby's forgotten.
     *
     * @param nowNs    the monotonic clock.
     * @param inFlight true for a lease with a message sent and not yet acknowledged.
     * @return leases retired.
     */
    int retireIdle(final long nowNs, final java.util.function.Predicate<Lease> inFlight) {
        int retired = 0;
        for (final Iterator<Lease> it = leases.iterator(); it.hasNext();) {
            final Lease lease = it.next();
            if (nowNs - lease.lastMessageNs < ttlNs * RETIRE_TTLS || !lease.backlog.isEmpty()
                || lease.request != null || inFlight.test(lease)) {
                continue;
            }
            it.remove();
            bySubject.remove(lease.subject);
            retired++;
            if (lease.holding) {
                lease.holding = false;
                held.decrement();
                bucket.release(lease.key, lease.revision);
            }
            LOG.info("JetStream lease of {} retired: no message for {} TTLs", lease.subject, RETIRE_TTLS);
        }
        return retired;
    }

    /**
     * Releases the leases held whose messages are all in the stream (a standby takes them at its next request, not
     * after the TTL), each only if it is still at the revision this relay wrote; bounded.
     *
     * @param inStream true for a lease whose messages are all acknowledged by the stream.
     */
    void release(final java.util.function.Predicate<Lease> inStream) {
        final long now = System.nanoTime();
        for (final Iterator<Lease> it = leases.iterator(); it.hasNext();) {
            final Lease lease = it.next();
            if (!lease.publishing(now) || !lease.backlog.isEmpty() || !inStream.test(lease)) {
                continue;
            }
            try {
                bucket.release(lease.key, lease.revision).get(RELEASE_WAIT_MS, TimeUnit.MILLISECONDS);
                lease.holding = false;
                held.decrement();
            } catch (final Exception ex) {
                LOG.info("JetStream lease of {} not released ({}): it expires after its TTL", lease.subject,
                    ex.toString());
            }
        }
    }

    @Override
    public void close() {
        bucket.close();
    }
}
