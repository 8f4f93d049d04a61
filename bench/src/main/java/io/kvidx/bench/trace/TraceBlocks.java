package io.kvidx.bench.trace;

import io.kvidx.client.keys.RouterKeyHasher;

/**
 * Turns a trace request into what an engine and a router see: token ids synthesised from the hash ids (each id
 * stands for 512 tokens, the same ids give the same tokens), the engine's chained block hashes (one per full
 * engine block, chained like vLLM's: each hash covers its parent's) and the router keys the daemon recomputes
 * from the tokens ({@link RouterKeyHasher}, model-seeded).
 *
 * <p><b>Note:</b> not thread safe: the arrays are reused between calls of {@link #load}.
 */
public final class TraceBlocks {
    /** Token ids are drawn below this (a vocabulary size; also keeps msgpack at 3 bytes per token). */
    public static final int VOCABULARY = 65_536;
    /** Model name the router keys are seeded with and the topics carry. */
    public static final String MODEL = "trace-model";

    private final int blockSize;
    private final int maxBlocks;
    private final RouterKeyHasher hasher;
    private final long keySeed;
    private final int[] tokens;
    private final long[] engineHashes;
    private final long[] routerKeys;
    private int blocks;

    /**
     * @param blockSize engine (and router) block size in tokens; must divide 512.
     * @param maxBlocks most engine blocks of one request kept (longer prompts are cut, as a max model length would).
     */
    public TraceBlocks(final int blockSize, final int maxBlocks) {
        if (blockSize <= 0 || TraceRequest.TRACE_BLOCK_TOKENS % blockSize != 0) {
            throw new IllegalArgumentException("block size must divide " + TraceRequest.TRACE_BLOCK_TOKENS + ": "
                + blockSize);
        }
        this.blockSize = blockSize;
        this.maxBlocks = maxBlocks;
        this.hasher = new RouterKeyHasher(blockSize);
        this.keySeed = RouterKeyHasher.chainSeed(MODEL, null, null);
        this.tokens = new int[maxBlocks * blockSize];
        this.engineHashes = new long[maxBlocks];
        this.routerKeys = new long[maxBlocks];
    }

    /**
     * Fills tokens, engine hashes and router keys for the request's full engine blocks.
     *
     * @param request the request.
     * @return the number of full engine blocks.
     */
    public int load(final TraceRequest request) {
        final int n = Math.min(request.promptTokens() / blockSize, maxBlocks);
        final int perTrace = TraceRequest.TRACE_BLOCK_TOKENS / blockSize;
        final long[] ids = request.hashIds();
        long parent = 0x6B76_6964_7874_7263L;
        for (int b = 0; b < n; b++) {
            final long id = ids[b / perTrace];
            final int within = b % perTrace;
            final int base = within * blockSize;
            for (int t = 0; t < blockSize; t++) {
                tokens[b * blockSize + t] = token(id, base + t);
            }
            parent = mix(parent * 31 + mix(id) + within);
            engineHashes[b] = parent;
        }
        hasher.keys(keySeed, tokens, n * blockSize, routerKeys);
        blocks = n;
        return n;
    }

    /**
     * @param hashId trace block id.
     * @param i      token position within the 512-token block.
     * @return the token id (deterministic in both).
     */
    public static int token(final long hashId, final int i) {
        return (int) ((mix(hashId * TraceRequest.TRACE_BLOCK_TOKENS + i + 0x9E37_79B9L) >>> 17) % VOCABULARY);
    }

    private static long mix(final long x) {
        long z = x + 0x9E37_79B9_7F4A_7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58_476D_1CE4_E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D0_49BB_1331_11EBL;
        return z ^ (z >>> 31);
    }

    /** @return engine blocks of the last {@link #load}. */
    public int blocks() {
        return blocks;
    }

    /** @return engine block size in tokens. */
    public int blockSize() {
        return blockSize;
    }

    /** @return the token ids of the last load (first {@code blocks() * blockSize()} valid). */
    public int[] tokens() {
        return tokens;
    }

    /** @return the engine hashes of the last load (first {@code blocks()} valid). */
    public long[] engineHashes() {
        return engineHashes;
    }

    /** @return the router keys of the last load (first {@code blocks()} valid). */
    public long[] routerKeys() {
        return routerKeys;
    }
}
