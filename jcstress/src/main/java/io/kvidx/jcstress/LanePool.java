package io.kvidx.jcstress;

import java.util.ArrayDeque;
import java.util.List;
import java.util.function.Supplier;

/**
 * Free lanes of shared {@link Cell}s: a jcstress state takes one in its constructor and gives it back, reset, in
 * its arbiter. A jcstress run keeps up to stride size x stride count states (256 x 40 by default) alive at once,
 * each holding a lane; when none is free a new cell is created, so the pool grows to what the run needs and no
 * further. Taken last-in first-out, so a run touches as few cells as it can.
 *
 * <p><b>Note:</b> thread safe (synchronized): jcstress constructs and arbitrates states on two threads at once.
 *
 * @param <L> the lane type.
 */
public final class LanePool<L> {
    private final ArrayDeque<L> free = new ArrayDeque<>();
    private final Supplier<List<L>> newCell;

    /**
     * @param newCell creates a cell and returns its lanes, all free.
     */
    public LanePool(final Supplier<List<L>> newCell) {
        this.newCell = newCell;
    }

    /**
     * @return a free lane, from a new cell when none is left.
     */
    public synchronized L take() {
        if (free.isEmpty()) {
            free.addAll(newCell.get());
        }
        return free.pop();
    }

    /**
     * @param lane a lane taken from this pool, reset to its free state.
     */
    public synchronized void give(final L lane) {
        free.push(lane);
    }
}
