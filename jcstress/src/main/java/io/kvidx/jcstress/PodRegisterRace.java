package io.kvidx.jcstress;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;

/**
 * Pod table register vs read: the writer actor registers the lane's pod again ({@code IndexWriter.registerPod}: the
 * entry's generation, state, id, model and flags written between an odd and the next even value of its seqlock);
 * the reader actor reads the entry until the registration is done. Before: the old generation, free, the pod's id,
 * the old model. After: generation + 1, alive, the pod's id, the new model. Anything else (a new generation or
 * state with the old model, a model cut to another length, an empty id) is torn.
 *
 * <p><b>Note:</b> one per jcstress state; {@link #register} runs on the writer actor's thread, {@link #observe} on
 * the reader's, {@link #reset} in the arbiter.
 */
public final class PodRegisterRace {
    private final PodLanes.Lane lane;
    private final int generation;
    private final String oldModel;
    private final String newModel;
    private final Rendezvous meet = new Rendezvous();

    /** Takes a free lane and notes its entry. */
    public PodRegisterRace() {
        this.lane = PodLanes.take();
        this.generation = lane.cell().writer().generation(lane.slot());
        this.oldModel = lane.cell().writer().model(lane.slot());
        this.newModel = PodLanes.MODELS[0].equals(oldModel) ? PodLanes.MODELS[1] : PodLanes.MODELS[0];
    }

    /** The writer actor: the daemon's registration of the lane's pod, with the other model. */
    public void register() {
        meet.awaitReader();
        final int slot = lane.cell().writer().registerPod(lane.podId(), newModel);
        if (slot != lane.slot()) {
            throw new IllegalStateException(lane.podId() + " got slot " + slot + ", not " + lane.slot());
        }
        meet.done();
    }

    /**
     * The reader actor: the router's read ({@code IndexReader.pod}).
     *
     * @return what the reads saw ({@link Seen}).
     */
    public int observe() {
        return meet.readWhileWriting(this::classify);
    }

    private int classify() {
        try {
            final IndexReader.PodInfo pod = lane.cell().reader().pod(lane.slot());
            if (!lane.podId().equals(pod.podId()) || pod.suspect()) {
                return Seen.TORN;
            }
            if (pod.generation() == generation && pod.state() == IndexDescriptor.POD_STATE_FREE
                && oldModel.equals(pod.model())) {
                return Seen.BEFORE;
            }
            return pod.generation() == generation + 1 && pod.state() == IndexDescriptor.POD_STATE_ALIVE
                && newModel.equals(pod.model()) ? Seen.AFTER : Seen.TORN;
        } catch (final IndexBusyException ex) {
            return Seen.GAVE_UP;
        }
    }

    /** The arbiter: takes the pod down, sweeps its slot free and frees the lane. */
    public void reset() {
        PodLanes.give(lane);
    }
}
