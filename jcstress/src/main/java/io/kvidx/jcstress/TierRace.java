package io.kvidx.jcstress;

import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.client.tiers.TierMapReader;

/**
 * The three tier map races, one writer change each against the router's lookup ({@code TierMapReader.tierBits}):
 * <ul>
 *   <li>{@link Change#INSERT}: {@code TierMapWriter.update} stores {@link TierLanes#INSERT_KEY} in an empty entry
 *   (the value, then the key with a release store). Before: absent; after: CPU; torn: the key with another
 *   value.</li>
 *   <li>{@link Change#REMOVE_SHIFT}: set-up stores the four shift keys (the first on GPU, the others on DISK);
 *   {@code TierMapWriter.remove} deletes the first and shifts the others back, inside an odd region version. The
 *   first key: before GPU, after absent, torn anything else; the last: DISK throughout, else
 *   {@link Seen#MOVED_KEY_LOST}.</li>
 *   <li>{@link Change#RESET}: set-up as for REMOVE_SHIFT; {@code TierMapWriter.attach} gives the region to the next
 *   generation (zeroes the entries, then writes the generation, inside an odd region version). The last key, asked
 *   for the old generation: before DISK, after "other generation", torn anything else (absent: the entries zeroed
 *   while the old generation still showed).</li>
 * </ul>
 *
 * <p><b>Note:</b> one per jcstress state; {@link #write} runs on the writer actor's thread, {@link #observe} on
 * the reader's, {@link #reset} in the arbiter.
 */
public final class TierRace {
    /** The writer's change. */
    public enum Change {
        /** Store a new key. */
        INSERT,
        /** Remove a key whose followers shift back. */
        REMOVE_SHIFT,
        /** Give the region to the next generation. */
        RESET
    }

    private static final long[] KEYS = TierLanes.SHIFT_KEYS;
    private static final long LAST = KEYS[KEYS.length - 1];

    private final Change change;
    private final TierLanes.Lane lane;
    private final int generation;
    private final Rendezvous meet = new Rendezvous();

    /**
     * Takes a free lane and sets it up for the change.
     *
     * @param change the writer's change.
     */
    public TierRace(final Change change) {
        this.change = change;
        this.lane = TierLanes.take();
        this.generation = lane.tiers().generation(lane.slot());
        if (change != Change.INSERT) {
            lane.cell().setup(() -> {
                lane.tiers().update(lane.slot(), KEYS[0], TierMapDescriptor.MEDIUM_GPU, 0, 0);
                for (int i = 1; i < KEYS.length; i++) {
                    lane.tiers().update(lane.slot(), KEYS[i], TierMapDescriptor.MEDIUM_DISK, 0, 0);
                }
            });
        }
    }

    /** The writer actor: the daemon's change. */
    public void write() {
        meet.awaitReader();
        switch (change) {
            case INSERT -> lane.tiers().update(lane.slot(), TierLanes.INSERT_KEY, TierMapDescriptor.MEDIUM_CPU, 0, 0);
            case REMOVE_SHIFT -> lane.tiers().remove(lane.slot(), KEYS[0]);
            case RESET -> lane.tiers().attach(lane.slot(), generation + 1);
            default -> throw new IllegalStateException(change.name());
        }
        meet.done();
    }

    /**
     * The reader actor: the router's lookup ({@code TierMapReader.tierBits}).
     *
     * @return what the reads saw ({@link Seen}).
     */
    public int observe() {
        return meet.readWhileWriting(this::classify);
    }

    private int classify() {
        final TierMapReader tiers = lane.cell().tiers();
        final int seen;
        switch (change) {
            case INSERT -> seen = classify(tiers.tierBits(lane.slot(), generation, TierLanes.INSERT_KEY),
                TierMapReader.ABSENT, TierMapDescriptor.MEDIUM_CPU);
            case REMOVE_SHIFT -> {
                final int first = classify(tiers.tierBits(lane.slot(), generation, KEYS[0]),
                    TierMapDescriptor.MEDIUM_GPU, TierMapReader.ABSENT);
                final int last = tiers.tierBits(lane.slot(), generation, LAST);
                seen = first | (last == TierMapDescriptor.MEDIUM_DISK ? 0
                    : isGiveUp(last) ? Seen.GAVE_UP : Seen.MOVED_KEY_LOST);
            }
            case RESET -> seen = classify(tiers.tierBits(lane.slot(), generation, LAST),
                TierMapDescriptor.MEDIUM_DISK, TierMapReader.OTHER_GENERATION);
            default -> throw new IllegalStateException(change.name());
        }
        return seen;
    }

    private static int classify(final int bits, final int before, final int after) {
        if (bits == before) {
            return Seen.BEFORE;
        }
        if (bits == after) {
            return Seen.AFTER;
        }
        return isGiveUp(bits) ? Seen.GAVE_UP : Seen.TORN;
    }

    private static boolean isGiveUp(final int bits) {
        return bits == TierMapReader.BUSY || bits == TierMapReader.STALE;
    }

    /** The arbiter: removes the lane's keys and frees it. */
    public void reset() {
        TierLanes.give(lane);
    }
}
