package io.kvidx.daemon.ingest.vllm;

import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.event.BlockEventListener;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Copies every delivered event for assertions.
 */
public final class RecordingListener implements BlockEventListener {
    /**
     * One delivered event, copied.
     *
     * @param type      type.
     * @param problem   problem.
     * @param hashes    block hashes.
     * @param hasParent whether it names a parent.
     * @param parent    parent hash.
     * @param tokens    token ids.
     * @param blockSize block size.
     * @param medium    medium.
     * @param loraName  LoRA name or null.
     * @param groupIdx  KV cache group.
     * @param specKind  group kind.
     * @param cacheSalt event-level cache salt or null.
     */
    public record Seen(int type, int problem, long[] hashes, boolean hasParent, long parent, int[] tokens,
        int blockSize, int medium, String loraName, int groupIdx, int specKind, String cacheSalt) {
    }

    /** Events in delivery order. */
    public final List<Seen> events = new ArrayList<>();
    /** The last batch's rank. */
    public int dpRank = Integer.MIN_VALUE;
    double ts;

    private void add(final BlockEvent e) {
        events.add(new Seen(e.type(), e.problem(), Arrays.copyOf(e.hashes(), e.hashCount()), e.hasParent(),
            e.parentHash(), Arrays.copyOf(e.tokens(), e.tokenCount()), e.blockSize(), e.medium(),
            e.loraNameString(), e.groupIdx(), e.specKind(), e.cacheSaltString()));
    }

    @Override
    public void onBlockStored(final BlockEvent event) {
        add(event);
    }

    @Override
    public void onBlockRemoved(final BlockEvent event) {
        add(event);
    }

    @Override
    public void onAllBlocksCleared(final BlockEvent event) {
        add(event);
    }

    @Override
    public void onDropped(final BlockEvent event) {
        add(event);
    }

    @Override
    public void onBatchEnd(final double timestamp, final int dpRank) {
        this.ts = timestamp;
        this.dpRank = dpRank;
    }
}
