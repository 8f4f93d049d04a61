package io.kvidx.bench.trace;

/**
 * A one-block BlockStored batch on a block no request uses (its tokens come from a hash id far above the trace's),
 * for the driver's warm-up (is the daemon subscribed?) and end markers (has every writer applied the replay?).
 *
 * @param payload   the batch, in the transport's encoding.
 * @param routerKey the router key the daemon will store.
 */
public record MarkerBatch(byte[] payload, long routerKey) {
    /** Hash ids of markers start here (the Mooncake trace's ids stay below 2^20). */
    static final long MARKER_ID_BASE = 1L << 60;

    /**
     * @param id        marker number (distinct per marker of a run).
     * @param blockSize engine block size.
     * @param encoder   the transport's encoder.
     * @param pod       the pod that stores the marker.
     * @return the batch.
     */
    static MarkerBatch of(final long id, final int blockSize, final BatchEncoder encoder, final int pod) {
        final TraceBlocks blocks = new TraceBlocks(blockSize, 1);
        blocks.load(new TraceRequest(0, blockSize, 0, new long[] {MARKER_ID_BASE + id}));
        final SimEngine engine = new SimEngine(1, 1);
        engine.serve(blocks.engineHashes(), blocks.routerKeys(), 1);
        return new MarkerBatch(encoder.encode(blocks, engine, 0, pod), blocks.routerKeys()[0]);
    }

    /**
     * @param id        marker number (distinct per marker of a run).
     * @param blockSize engine block size.
     * @param pod       the pod that stores the marker.
     * @return the batch as a vLLM msgpack batch ({@link VllmEventEncoder}).
     */
    public static MarkerBatch vllm(final long id, final int blockSize, final int pod) {
        return of(id, blockSize, new VllmEventEncoder(), pod);
    }
}
