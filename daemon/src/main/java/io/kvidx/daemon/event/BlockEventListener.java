package io.kvidx.daemon.event;

/**
 * Receives the events of a decoded batch, in order, from an {@link EventDecoder}. The event view is reused: copy
 * what must outlive the call.
 *
 * <p><b>Note:</b> called on the decoding thread only.
 */
public interface BlockEventListener {
    /**
     * @param event a BlockStored event.
     */
    void onBlockStored(BlockEvent event);

    /**
     * @param event a BlockRemoved event.
     */
    void onBlockRemoved(BlockEvent event);

    /**
     * @param event an AllBlocksCleared event.
     */
    void onAllBlocksCleared(BlockEvent event);

    /**
     * An event that is well framed but unusable: unknown type or a field problem (see {@link BlockEvent#problem()}).
     *
     * @param event the event, partially filled.
     */
    void onDropped(BlockEvent event);

    /**
     * Called after the last event of a well-formed batch.
     *
     * @param timestamp batch timestamp (seconds), NaN when absent.
     * @param dpRank    data-parallel rank, -1 when nil or absent.
     */
    default void onBatchEnd(final double timestamp, final int dpRank) {
    }
}
