package io.kvidx.jcstress;

import io.kvidx.client.index.IndexBusyException;

/**
 * Entry insert vs lookup: the writer actor stores a key no pod held ({@code IndexWriter.store}: the pods word of the
 * empty entry, then the key with a release store); the reader actor looks the key up until the store is done.
 * Before: absent, no pods. After: present, held by {@code pod-a}. Anything else (the key present without its pod,
 * or with another) is torn.
 *
 * <p><b>Note:</b> one per jcstress state; {@link #store} runs on the writer actor's thread, {@link #observe} on the
 * reader's, {@link #reset} in the arbiter.
 */
public final class EntryInsertRace {
    private final EntryLanes lanes;
    private final EntryLanes.Lane lane;
    private final long[] key;
    private final long[] out = new long[4];
    private final Rendezvous meet = new Rendezvous();

    /**
     * Takes a free lane: its keys are absent.
     *
     * @param lanes the cells to take it from.
     */
    public EntryInsertRace(final EntryLanes lanes) {
        this.lanes = lanes;
        this.lane = lanes.take();
        this.key = new long[] {lane.keys()[0]};
    }

    /** The writer actor: the daemon's store of the key for {@code pod-a}. */
    public void store() {
        meet.awaitReader();
        lane.cell().writer().store(lane.podA(), key, 0, 1);
        meet.done();
    }

    /**
     * The reader actor: the router's lookup ({@code IndexReader.lookup}).
     *
     * @return what the reads saw ({@link Seen}).
     */
    public int observe() {
        return meet.readWhileWriting(this::classify);
    }

    private int classify() {
        try {
            final boolean found = lane.cell().reader().lookup(key[0], out);
            if (!found && EntryLanes.Lane.none(out)) {
                return Seen.BEFORE;
            }
            return found && EntryLanes.Lane.holdsOnly(lane.podA(), out) ? Seen.AFTER : Seen.TORN;
        } catch (final IndexBusyException ex) {
            return Seen.GAVE_UP;
        }
    }

    /** The arbiter: removes the key again and frees the lane. */
    public void reset() {
        lanes.give(lane);
    }
}
