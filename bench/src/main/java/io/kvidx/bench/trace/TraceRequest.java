package io.kvidx.bench.trace;

/**
 * One request of a Mooncake-format trace line: {@code {"timestamp": ms, "input_length": tokens, "output_length":
 * tokens, "hash_ids": [...]}}. Each hash id stands for one 512-token trace block; equal ids at equal positions
 * mean a reusable prefix.
 *
 * @param timestampMs  arrival time, ms from the trace's start.
 * @param inputLength  prompt tokens.
 * @param outputLength generated tokens.
 * @param hashIds      trace block ids of the prompt, in order.
 */
public record TraceRequest(long timestampMs, int inputLength, int outputLength, long[] hashIds) {
    /** Tokens each trace hash id stands for. */
    public static final int TRACE_BLOCK_TOKENS = 512;

    /**
     * @return the prompt tokens the hash ids cover: the input length, at most 512 per hash id.
     */
    public int promptTokens() {
        return (int) Math.min(inputLength, (long) hashIds.length * TRACE_BLOCK_TOKENS);
    }
}
