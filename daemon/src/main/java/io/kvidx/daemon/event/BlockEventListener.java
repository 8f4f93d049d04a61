package io.kvidx.daemon.ingest.vllm;

/**
 * Receives the events of a decoded batch, in order. The event view is reused: copy what must outlive the call.
 *
 * <p><b>Note:</b> called on the decoding thread only.
 */
public interface VllmEventListener {
    /**
     * @param event a BlockStored event.
     */
    void onBlockStored(VllmEvent event);

    /**
     * @param event a BlockRemoved event.
     */
    void onBlockRemoved(VllmEvent event);

    /**
     * @param event an AllBlocksCleared event.
     */
    void onAllBlocksCleared(VllmEvent event);

    /**
     * An event that is well framed but unusable: unknown type or a field problem (see {@link VllmEvent#problem()}).
     *
     * @param event the event, partially filled.
     */
    void onDropped(VllmEvent event);

    /**
     * Called after the last event of a well-formed batch.
     *
     * @param timestamp batch timestamp (seconds), NaN when absent.
     * @param dpRank    data-parallel rank, -1 when nil or absent.
     */
    default void onBatchEnd(final double timestamp, final int dpRank) {
    }
}
