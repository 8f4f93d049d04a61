package io.kvidx.jcstress;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.daemon.index.TierMapWriter;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Lanes of shared cells for the tier map tests: each lane is one pod slot's region of the cell's host tier map
 * (written by the daemon's {@link TierMapWriter}, read by the router's {@code TierMapReader}), empty while free and
 * given to a generation. Regions of 16 entries; every region uses the same keys: {@link #SHIFT_KEYS}, four keys with
 * the same home entry (so removing the first shifts the other three back), and {@link #INSERT_KEY}, whose home is
 * eight entries away from theirs.
 *
 * <p>Cells: 256 regions; a new cell gives every region generation 1, as the registration of a pod does.
 *
 * <p><b>Note:</b> thread safe: lanes come from a {@link LanePool}.
 */
public final class TierLanes {
    /** Slots per region: the smallest a tier map has. */
    static final int SLOTS = TierMapDescriptor.MIN_SLOTS;
    /** Four keys with the same home entry. */
    public static final long[] SHIFT_KEYS = new long[4];
    /** A key whose home is eight entries from the shift keys' home. */
    public static final long INSERT_KEY;

    private static final LanePool<Lane> POOL = new LanePool<>(TierLanes::newCell);

    static {
        final SplittableRandom random = new SplittableRandom(0x7469_6572_73L);
        final int home = TierMapDescriptor.home(random.nextLong(), SLOTS);
        int found = 0;
        long insert = 0;
        while (found < SHIFT_KEYS.length || insert == 0) {
            final long key = random.nextLong();
            final int h = TierMapDescriptor.home(key, SLOTS);
            if (h == home && found < SHIFT_KEYS.length && key != 0) {
                SHIFT_KEYS[found++] = key;
            } else if (h == (home + SLOTS / 2) % SLOTS && insert == 0 && key != 0) {
                insert = key;
            }
        }
        INSERT_KEY = insert;
    }

    /**
     * A lane.
     *
     * @param cell its cell.
     * @param slot the pod slot whose region it is.
     */
    public record Lane(Cell cell, int slot) {
        /**
         * @return the daemon's tier map writer of the lane's cell.
         */
        public TierMapWriter tiers() {
            return cell.writer().tiers();
        }
    }

    private TierLanes() {
    }

    /**
     * @return a free lane: an empty region.
     */
    public static Lane take() {
        return POOL.take();
    }

    /**
     * Removes the lane's keys (the region keeps its generation) and frees the lane.
     *
     * @param lane a lane taken here.
     */
    public static void give(final Lane lane) {
        lane.cell().setup(() -> {
            lane.tiers().remove(lane.slot(), INSERT_KEY);
            for (final long key : SHIFT_KEYS) {
                lane.tiers().remove(lane.slot(), key);
            }
        });
        POOL.give(lane);
    }

    private static List<Lane> newCell() {
        final Cell cell = Cell.create("tiers", 2, 16, IndexDescriptor.MAX_PODS, TierMapDescriptor.maxEntries(SLOTS));
        final List<Lane> lanes = new ArrayList<>();
        for (int slot = 0; slot < IndexDescriptor.MAX_PODS; slot++) {
            cell.writer().tiers().attach(slot, 1);
            lanes.add(new Lane(cell, slot));
        }
        return lanes;
    }
}
