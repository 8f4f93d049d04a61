package io.kvidx.bench.trace;

/**
 * Encodes a simulated engine's work for one request as the bytes its transport sends: a vLLM msgpack batch
 * ({@link VllmEventEncoder}) or a run of kvidx SBE messages ({@link SbeBatchEncoder}). Encoding happens while the
 * plan is built, before anything is timed, so the replay's sender only sends.
 *
 * <p><b>Note:</b> implementations are not thread safe.
 */
interface BatchEncoder {
    /**
     * @param blocks    the request's blocks (tokens and engine hashes of the last load).
     * @param engine    the engine after serving the request.
     * @param tsSeconds batch timestamp.
     * @param pod       the pod that served it.
     * @return the bytes, or null when the request stored and evicted nothing.
     */
    byte[] encode(TraceBlocks blocks, SimEngine engine, double tsSeconds, int pod);

    /**
     * @param pod the pod.
     * @return the bytes of the pod's AllBlocksCleared event (the bench's warm-up ends with one per pod).
     */
    byte[] cleared(int pod);

    /**
     * @param pod pod number.
     * @return its pod id, as every transport names it.
     */
    static String podId(final int pod) {
        return "pod-" + pod;
    }
}
