package io.kvidx.jcstress;

import io.kvidx.client.index.IndexBusyException;

/**
 * Entry delete and backward shift vs lookup. Set-up: the lane's five keys, the first held by {@code pod-a}, the other
 * four by {@code pod-b}, so the fifth sits past the full home line. The writer actor removes {@code pod-a} from the
 * first key ({@code IndexWriter.remove}): its last pod, so the entry is deleted and the four others shift back one
 * entry each, the fifth into the home line, all inside an odd shard version. The reader actor looks up the first
 * key (before: held by {@code pod-a}; after: absent; torn: present with another pod's word, e.g. the one shifted
 * over it) and the fifth key, which is present, held by {@code pod-b}, before, during and after: missing it is the
 * forbidden outcome a probe that passed the home line before the shift and the next line after it would return.
 *
 * <p><b>Note:</b> one per jcstress state; {@link #delete} runs on the writer actor's thread, {@link #observe} on
 * the reader's, {@link #reset} in the arbiter.
 */
public final class EntryShiftRace {
    private final EntryLanes lanes;
    private final EntryLanes.Lane lane;
    private final long[] out = new long[4];
    private final Rendezvous meet = new Rendezvous();

    /**
     * Takes a free lane and stores its keys.
     *
     * @param lanes the cells to take it from.
     */
    public EntryShiftRace(final EntryLanes lanes) {
        this.lanes = lanes;
        this.lane = lanes.take();
        lane.cell().setup(() -> {
            lane.cell().writer().store(lane.podA(), lane.keys(), 0, 1);
            for (int i = 1; i < EntryLanes.KEYS; i++) {
                lane.cell().writer().store(lane.podB(), lane.keys(), i, 1);
            }
        });
    }

    /** The writer actor: the daemon's removal of {@code pod-a} from the first key. */
    public void delete() {
        meet.awaitReader();
        lane.cell().writer().remove(lane.podA(), lane.keys(), 0, 1);
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
            int seen;
            final boolean first = lane.cell().reader().lookup(lane.keys()[0], out);
            if (first && EntryLanes.Lane.holdsOnly(lane.podA(), out)) {
                seen = Seen.BEFORE;
            } else if (!first && EntryLanes.Lane.none(out)) {
                seen = Seen.AFTER;
            } else {
                seen = Seen.TORN;
            }
            final boolean moved = lane.cell().reader().lookup(lane.keys()[EntryLanes.KEYS - 1], out);
            if (!moved || !EntryLanes.Lane.holdsOnly(lane.podB(), out)) {
                seen |= Seen.MOVED_KEY_LOST;
            }
            return seen;
        } catch (final IndexBusyException ex) {
            return Seen.GAVE_UP;
        }
    }

    /** The arbiter: removes the keys and frees the lane. */
    public void reset() {
        lanes.give(lane);
    }
}
