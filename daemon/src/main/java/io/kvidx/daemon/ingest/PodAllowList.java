package io.kvidx.daemon.ingest;

import io.kvidx.client.net.HostPatterns;

import io.kvidx.daemon.counters.IngestErrors;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Supplier;

/**
 * The pod ids a transport accepts from the wire: exact ids or globs ({@code *} any run of characters, {@code ?} one
 * character, everything else literal). No pattern allows every pod. A message of a pod outside the list is dropped
 * before its pod is registered: counted (the caller's counter, {@code kvidx pods not allowed}) and logged in the
 * error log once per pod id (at most {@link #LOGGED_IDS_MAX} ids are logged one by one; further ids share one entry,
 * so that a stranger sending random ids cannot grow the log).
 *
 * <p>Verdicts are cached per pod id, keyed by the id's bytes as they arrive: a pod id seen before costs a hash, one
 * probe and a byte comparison, and allocates nothing. The first sight of an id decodes and matches it (allocating).
 * The cache holds at most {@link #CACHED_IDS_MAX} ids of up to {@link #CACHED_ID_LENGTH_MAX} bytes; when full it is
 * emptied and refilled, and a longer id is matched every time.
 *
 * <p><b>Note:</b> not thread safe: used by one ingest thread.
 */
public final class PodAllowList {
    /** Most pod ids whose verdict is cached. */
    public static final int CACHED_IDS_MAX = 2048;
    /** Longest pod id (bytes) whose verdict is cached. */
    public static final int CACHED_ID_LENGTH_MAX = 256;
    /** Most refused pod ids logged each under its own error log entry. */
    public static final int LOGGED_IDS_MAX = 1024;
    private static final int SLOTS = CACHED_IDS_MAX * 2;

    private final String transport;
    private final String setting;
    private final String[] patterns;
    private final AtomicCounter refused;
    private final IngestErrors errors;
    private final int errorKind;
    private final Entry[] slots = new Entry[SLOTS];
    private final UnsafeBuffer scratch = new UnsafeBuffer(new byte[0]);
    private final Supplier<String> furtherIds;
    private int cached;
    private int loggedIds;

    /** A cached verdict. */
    private static final class Entry {
        final byte[] id;
        final int hash;
        final boolean allowed;
        final int logId;
        final Supplier<String> message;

        Entry(final byte[] id, final int hash, final boolean allowed, final int logId, final Supplier<String> message) {
            this.id = id;
            this.hash = hash;
            this.allowed = allowed;
            this.logId = logId;
            this.message = message;
        }
    }

    /**
     * @param transport names the transport in the log, e.g. {@code "Aeron"}.
     * @param setting   the YAML key of the list, named in the log, e.g. {@code "aeron.pods"}.
     * @param patterns  exact pod ids or globs; empty allows every pod.
     * @param refused   counts every refused message.
     * @param errors    error log.
     * @param errorKind the error log's problem kind for this list's refusals (distinct per transport).
     * @throws IllegalArgumentException for an empty or null pattern.
     */
    public PodAllowList(final String transport, final String setting, final List<String> patterns,
        final AtomicCounter refused, final IngestErrors errors, final int errorKind) {
        for (final String p : patterns) {
            if (p == null || p.isEmpty()) {
                throw new IllegalArgumentException(setting + ": an empty pod pattern matches nothing");
            }
        }
        this.transport = transport;
        this.setting = setting;
        this.patterns = patterns.toArray(new String[0]);
        this.refused = refused;
        this.errors = errors;
        this.errorKind = errorKind;
        this.furtherIds = () -> transport + ": more than " + LOGGED_IDS_MAX + " pod ids not in " + setting
            + " (not logged one by one); their events are dropped";
    }

    /**
     * @return true when no pattern is set: every pod is allowed and nothing is checked.
     */
    public boolean allowsAll() {
        return patterns.length == 0;
    }

    /**
     * Checks a pod id given as UTF-8 bytes in an array; a refusal is counted and logged.
     *
     * @param bytes  holds the id.
     * @param offset where it starts.
     * @param length its length in bytes.
     * @return true when the pod is allowed.
     */
    public boolean allows(final byte[] bytes, final int offset, final int length) {
        if (patterns.length == 0) {
            return true;
        }
        scratch.wrap(bytes);
        return allows(scratch, offset, length);
    }

    /**
     * Checks a pod id given as UTF-8 bytes in a buffer; a refusal is counted and logged.
     *
     * @param buffer holds the id.
     * @param offset where it starts.
     * @param length its length in bytes.
     * @return true when the pod is allowed.
     */
    public boolean allows(final DirectBuffer buffer, final int offset, final int length) {
        if (patterns.length == 0) {
            return true;
        }
        int hash = 0x811C9DC5;
        for (int i = 0; i < length; i++) {
            hash = (hash ^ (buffer.getByte(offset + i) & 0xFF)) * 0x01000193;
        }
        final int mask = SLOTS - 1;
        int slot = (hash ^ (hash >>> 16)) & mask;
        Entry e;
        while ((e = slots[slot]) != null) {
            if (e.hash == hash && same(e.id, buffer, offset, length)) {
                return verdict(e);
            }
            slot = (slot + 1) & mask;
        }
        final byte[] id = new byte[length];
        buffer.getBytes(offset, id);
        final String podId = new String(id, StandardCharsets.UTF_8);
        final boolean allowed = matchesAny(podId);
        final int logId = allowed ? -1 : loggedIds < LOGGED_IDS_MAX ? loggedIds++ : LOGGED_IDS_MAX;
        final Supplier<String> message = allowed ? null : logId < LOGGED_IDS_MAX
            ? () -> transport + ": pod " + podId + " is not in " + setting + "; its events are dropped"
            : furtherIds;
        final Entry entry = new Entry(id, hash, allowed, logId, message);
        if (length <= CACHED_ID_LENGTH_MAX) {
            if (cached >= CACHED_IDS_MAX) {
                java.util.Arrays.fill(slots, null);
                cached = 0;
                slot = (hash ^ (hash >>> 16)) & mask;
            }
            slots[slot] = entry;
            cached++;
        }
        return verdict(entry);
    }

    private boolean verdict(final Entry e) {
        if (!e.allowed) {
            refused.increment();
            errors.report(errorKind, e.logId, e.message);
        }
        return e.allowed;
    }

    private static boolean same(final byte[] id, final DirectBuffer buffer, final int offset, final int length) {
        if (id.length != length) {
            return false;
        }
        for (int i = 0; i < length; i++) {
            if (id[i] != buffer.getByte(offset + i)) {
                return false;
            }
        }
        return true;
    }

    /**
     * @param podId a pod id.
     * @return true when a pattern matches it (or none is set); not cached, not counted.
     */
    public boolean matchesAny(final String podId) {
        if (patterns.length == 0) {
            return true;
        }
        for (final String p : patterns) {
            if (HostPatterns.glob(p, podId)) {
                return true;
            }
        }
        return false;
    }
}
