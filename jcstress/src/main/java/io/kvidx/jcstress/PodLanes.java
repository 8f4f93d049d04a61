package io.kvidx.jcstress;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.daemon.index.IndexWriter;

import java.util.ArrayList;
import java.util.List;

/**
 * Lanes of shared index cells for the pod table test: each lane is one pod slot whose pod ({@code pod-<slot>}) has
 * gone down and been swept, so the slot is free and its entry still names that pod, its generation and its last
 * model. Registering the pod again gives it back the same slot (a pod returns to the slot it held last), with the
 * generation incremented, state alive and a new model: the change the test races a read with.
 *
 * <p>Cells: 256 pod slots (the most a cell has), 2 shards of 16 entries (a sweep pass is two tiny steps). A new cell
 * registers {@code pod-0} .. {@code pod-255} in order, takes them all down and sweeps until every slot is free.
 *
 * <p><b>Note:</b> thread safe: lanes come from a {@link LanePool}.
 */
public final class PodLanes {
    /** The two models a slot's pod alternates between: of different lengths, so a torn read shows in the name. */
    static final String[] MODELS = {"llama-3.1-8b-instruct", "qwen3-coder-30b-a3b-instruct-fp8"};

    private static final LanePool<Lane> POOL = new LanePool<>(PodLanes::newCell);

    /**
     * A lane.
     *
     * @param cell  its cell.
     * @param slot  its pod slot.
     * @param podId the pod that last held the slot and registers again.
     */
    public record Lane(Cell cell, int slot, String podId) {
    }

    private PodLanes() {
    }

    /**
     * @return a free lane: its slot free, its entry naming its pod.
     */
    public static Lane take() {
        return POOL.take();
    }

    /**
     * Takes the lane's pod down, sweeps until its slot is free, and frees the lane.
     *
     * @param lane a lane taken here.
     */
    public static void give(final Lane lane) {
        lane.cell().setup(() -> free(lane.cell().writer(), lane.slot()));
        POOL.give(lane);
    }

    private static void free(final IndexWriter writer, final int slot) {
        writer.podDown(slot);
        for (int steps = 0; writer.podState(slot) != IndexDescriptor.POD_STATE_FREE; steps++) {
            if (writer.sweepStep() == 0 && steps > 1_000) {
                throw new IllegalStateException("pod slot " + slot + " is not freed: state " + writer.podState(slot));
            }
        }
    }

    private static List<Lane> newCell() {
        final Cell cell = Cell.create("pods", 2, 16, IndexDescriptor.MAX_PODS, 12);
        final IndexWriter writer = cell.writer();
        final List<Lane> lanes = new ArrayList<>();
        for (int slot = 0; slot < IndexDescriptor.MAX_PODS; slot++) {
            final String podId = "pod-" + slot;
            if (writer.registerPod(podId, MODELS[0]) != slot) {
                throw new IllegalStateException(podId + " did not get slot " + slot);
            }
            lanes.add(new Lane(cell, slot, podId));
        }
        for (final Lane lane : lanes) {
            free(writer, lane.slot());
        }
        return lanes;
    }
}
