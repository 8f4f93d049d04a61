package io.kvidx.routing.plugins;

import io.kvidx.routing.RoutingPlan;

import java.util.concurrent.TimeUnit;

/**
 * Bounded memory of which pod each session was last sent to, for session affinity and sticky sessions: an
 * open-addressing table of {session key, slot, expiry}; entries die {@code ttl} after their last use, and a full
 * probe window replaces the entry that expires first.
 *
 * <p><b>Note:</b> thread safe; methods synchronise on the table (short, allocation-free).
 */
public final class SessionTable {
    private static final int PROBE_WINDOW = 16;
    /** Default session TTL in milliseconds. */
    public static final long TTL_MS_DEFAULT = 600_000;

    private final int mask;
    private final long ttlNs;
    private final long[] keys;
    private final long[] expiry;
    private final int[] slots;

    /**
     * @param capacity sessions remembered (rounded up to a power of two).
     * @param ttlMs    how long an idle session is remembered.
     */
    public SessionTable(final int capacity, final long ttlMs) {
        if (capacity <= 0 || capacity > (1 << 26) || ttlMs <= 0) {
            throw new IllegalArgumentException("capacity in (0, 2^26] and ttlMs > 0 required: " + capacity + ", "
                + ttlMs);
        }
        final int cap = Math.max(PROBE_WINDOW, Integer.highestOneBit(capacity - 1) << 1);
        this.mask = cap - 1;
        this.ttlNs = TimeUnit.MILLISECONDS.toNanos(ttlMs);
        this.keys = new long[cap];
        this.expiry = new long[cap];
        this.slots = new int[cap];
    }

    private static int home(final long key) {
        final long z = key * 0x9E3779B97F4A7C15L;
        return (int) (z ^ (z >>> 32));
    }

    /**
     * @param session session key.
     * @param nowNs   {@link System#nanoTime()}.
     * @return the session's pod, or {@link RoutingPlan#NO_POD}.
     */
    public synchronized int get(final long session, final long nowNs) {
        final int start = home(session) & mask;
        for (int p = 0; p < PROBE_WINDOW; p++) {
            final int e = (start + p) & mask;
            if (expiry[e] == 0) {
                return RoutingPlan.NO_POD;
            }
            if (keys[e] == session && expiry[e] - nowNs > 0) {
                return slots[e];
            }
        }
        return RoutingPlan.NO_POD;
    }

    /**
     * @param session session key.
     * @param slot    its pod.
     * @param nowNs   {@link System#nanoTime()}.
     */
    public synchronized void put(final long session, final int slot, final long nowNs) {
        final int start = home(session) & mask;
        int reusable = -1;
        int oldest = -1;
        for (int p = 0; p < PROBE_WINDOW; p++) {
            final int e = (start + p) & mask;
            final long exp = expiry[e];
            if (exp != 0 && exp - nowNs > 0) {
                if (keys[e] == session) {
                    slots[e] = slot;
                    expiry[e] = nowNs + ttlNs;
                    return;
                }
                if (oldest < 0 || exp - expiry[oldest] < 0) {
                    oldest = e;
                }
            } else if (reusable < 0) {
                reusable = e;
                if (exp == 0) {
                    break;
                }
            }
        }
        final int e = reusable >= 0 ? reusable : oldest;
        keys[e] = session;
        slots[e] = slot;
        expiry[e] = nowNs + ttlNs;
    }
}
