package io.kvidx.daemon.ingest.vllm;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Copies every delivered event for assertions.
 */
final class RecordingListener implements VllmEventListener {
    record Seen(int type, int problem, long[] hashes, boolean hasParent, long parent, int[] tokens, int blockSize,
        int medium, String loraName, int groupIdx, int specKind) {
    }

    final List<Seen> events = new ArrayList<>();
    int dpRank = Integer.MIN_VALUE;
    double ts;

    private void add(final VllmEvent e) {
        events.add(new Seen(e.type(), e.problem(), Arrays.copyOf(e.hashes(), e.hashCount()), e.hasParent(),
            e.parentHash(), Arrays.copyOf(e.tokens(), e.tokenCount()), e.blockSize(), e.medium(),
            e.loraNameString(), e.groupIdx(), e.specKind()));
    }

    @Override
    public void onBlockStored(final VllmEvent event) {
        add(event);
    }

    @Override
    public void onBlockRemoved(final VllmEvent event) {
        add(event);
    }

    @Override
    public void onAllBlocksCleared(final VllmEvent event) {
        add(event);
    }

    @Override
    public void onDropped(final VllmEvent event) {
        add(event);
    }

    @Override
    public void onBatchEnd(final double timestamp, final int dpRank) {
        this.ts = timestamp;
        this.dpRank = dpRank;
    }
}
