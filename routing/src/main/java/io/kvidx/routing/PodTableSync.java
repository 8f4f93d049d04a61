package io.kvidx.routing;

import io.kvidx.client.index.IndexException;

import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The {@link PodRegistry}'s membership of slots and how it follows the index's pod table: which slots the router
 * claimed, which of them it took from the index, which are routable, the generation and suspect flag it learnt for
 * each slot, the index's pod table version it last learnt, and the registry's own version. Holds the algorithms of
 * {@link PodRegistry#registerFromIndex} and {@link PodRegistry#syncWithIndex}, which (re-)learn a slot through
 * {@link PodRegistry#learn}.
 *
 * <p><b>Note:</b> written only under the registry's lock (held by its methods that call every method here that
 * writes); the routable and suspect bitmaps, generations and versions are read by any thread without locks,
 * allocation-free. The claimed and taken-from-index bitmaps are plain arrays read only under that lock.
 */
final class PodTableSync {
    /** Times {@link #syncWithIndex} reads the pod table again when it changed while being read. */
    private static final int SYNC_ATTEMPTS = 3;
    /** Words of a slot bitmap. */
    private static final int WORDS = PodRegistry.MAX_PODS / 64;

    private final AtomicLongArray registered = new AtomicLongArray(WORDS);
    private final AtomicLong version = new AtomicLong();
    private final AtomicIntegerArray generations = new AtomicIntegerArray(PodRegistry.MAX_PODS);
    /** The index's suspect flags of the slots as last learnt (layout 3.2), one bit per slot. */
    private final AtomicLongArray suspect = new AtomicLongArray(WORDS);
    /** Slots the router registered, routable or not (excluded while the index holds another pod). */
    private final long[] claimed = new long[WORDS];
    /** Claimed slots taken from the index: they follow whichever pod the index gives the slot to. */
    private final long[] fromIndex = new long[WORDS];
    private volatile long podTableVersion;

    /**
     * Claims a slot the registry learns, with its generation in the pod table (or unknown), and makes it routable.
     */
    void claim(final int slot, final int generation) {
        generations.set(slot, generation);
        setBit(claimed, slot, true);
        setRoutable(slot, true);
    }

    /**
     * Marks a slot just learnt by hand as not following the index, and the registry as not checked against the
     * index yet: the next decision's selector finds another pod table version and syncs.
     */
    void registeredByHand(final int slot) {
        setBit(fromIndex, slot, false);
        version.incrementAndGet();
        podTableVersion = PodIndex.NO_POD_TABLE_VERSION;
    }

    /**
     * Forgets a slot: not routable, not claimed, its generation and suspect flag cleared.
     */
    void release(final int slot) {
        setRoutable(slot, false);
        setBit(claimed, slot, false);
        setBit(fromIndex, slot, false);
        generations.set(slot, PodRegistry.UNKNOWN_GENERATION);
        setSuspect(slot, false);
        version.incrementAndGet();
    }

    /**
     * The body of {@link PodRegistry#registerFromIndex}: learns every pod of the index's pod table in a slot not
     * claimed yet.
     */
    int registerFromIndex(final PodIndex index, final PodRegistry registry) {
        int added = 0;
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            if (!bit(claimed, slot)) {
                final PodIndex.PodDescription d = index.describe(slot);
                if (d != null) {
                    registry.learn(slot, d.podId(), modelOf(d), PodRole.BOTH, null, d.generation());
                    setSuspect(slot, d.suspect());
                    setBit(fromIndex, slot, true);
                    added++;
                }
            }
        }
        if (added > 0) {
            version.incrementAndGet();
            // Read entry by entry, not at one version: the next decision's selector syncs once.
            podTableVersion = PodIndex.NO_POD_TABLE_VERSION;
        }
        return added;
    }

    /**
     * The body of {@link PodRegistry#syncWithIndex}: reads the claimed slots of the pod table at one version and
     * follows them.
     */
    boolean syncWithIndex(final PodIndex index, final PodRegistry registry) {
        for (int attempt = 0; attempt < SYNC_ATTEMPTS; attempt++) {
            final long v = index.podTableVersion();
            if (v == PodIndex.NO_POD_TABLE_VERSION) {
                return false;
            }
            if (v == podTableVersion) {
                return true;
            }
            final PodIndex.PodDescription[] seen = new PodIndex.PodDescription[PodRegistry.MAX_PODS];
            try {
                for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
                    if (bit(claimed, slot)) {
                        seen[slot] = index.describe(slot);
                    }
                }
            } catch (final IndexException ex) {
                return false;
            }
            if (index.podTableVersion() != v) {
                continue;
            }
            boolean changed = false;
            for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
                if (bit(claimed, slot)) {
                    changed |= follow(registry, slot, seen[slot]);
                }
            }
            if (changed) {
                version.incrementAndGet();
            }
            // Stored after the slots: a decision that reads this version sees them.
            podTableVersion = v;
            return true;
        }
        return false;
    }

    /** Applies what the index shows in one claimed slot; returns true when the registry changed. */
    private boolean follow(final PodRegistry registry, final int slot, final PodIndex.PodDescription d) {
        setSuspect(slot, d != null && d.suspect());
        final int known = generations.get(slot);
        final boolean routable = isRegistered(slot);
        if (d == null) {
            if (known == PodRegistry.UNKNOWN_GENERATION) {
                return false;
            }
            generations.set(slot, PodRegistry.UNKNOWN_GENERATION);
            setRoutable(slot, false);
            return true;
        }
        final boolean samePod = d.podId().equals(registry.podId(slot));
        if (bit(fromIndex, slot)) {
            if (samePod && d.generation() == known && routable) {
                return false;
            }
            registry.learn(slot, d.podId(), modelOf(d), registry.role(slot), registry.endpoint(slot),
                d.generation());
            return true;
        }
        if (samePod) {
            generations.set(slot, d.generation());
            setRoutable(slot, true);
            return !routable || d.generation() != known;
        }
        generations.set(slot, PodRegistry.UNKNOWN_GENERATION);
        setRoutable(slot, false);
        return routable;
    }

    private static String modelOf(final PodIndex.PodDescription d) {
        return d.model() == null || d.model().isEmpty() ? null : d.model();
    }

    private void setSuspect(final int slot, final boolean on) {
        if (on) {
            suspect.getAndUpdate(slot >>> 6, w -> w | (1L << slot));
        } else {
            suspect.getAndUpdate(slot >>> 6, w -> w & ~(1L << slot));
        }
    }

    private void setRoutable(final int slot, final boolean on) {
        if (on) {
            registered.getAndUpdate(slot >>> 6, w -> w | (1L << slot));
        } else {
            registered.getAndUpdate(slot >>> 6, w -> w & ~(1L << slot));
        }
    }

    private static boolean bit(final long[] words, final int slot) {
        return (words[slot >>> 6] & (1L << slot)) != 0;
    }

    private static void setBit(final long[] words, final int slot, final boolean on) {
        if (on) {
            words[slot >>> 6] |= 1L << slot;
        } else {
            words[slot >>> 6] &= ~(1L << slot);
        }
    }

    boolean isSuspect(final int slot) {
        return (suspect.getOpaque(slot >>> 6) & (1L << slot)) != 0;
    }

    long suspectWord(final int word) {
        return suspect.getOpaque(word);
    }

    long podTableVersion() {
        return podTableVersion;
    }

    int generation(final int slot) {
        return generations.get(slot);
    }

    long registeredWord(final int word) {
        return registered.getOpaque(word);
    }

    boolean isRegistered(final int slot) {
        return (registered.get(slot >>> 6) & (1L << slot)) != 0;
    }

    long version() {
        return version.get();
    }
}
