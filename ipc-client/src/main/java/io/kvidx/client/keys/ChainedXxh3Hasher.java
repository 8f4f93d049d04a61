package io.kvidx.client.keys;

import java.nio.charset.StandardCharsets;

/**
 * Key scheme 2 of a kvidx cell, "xxh3-chain": the chained XXH3-64 over little-endian u32 token ids that Mooncake's
 * indexer API calls its standard hash and that Dynamo's per-block hashes chain into, so that routers which hash
 * prompts themselves can send their hashes to {@code /query_by_hash}.
 *
 * <pre>
 *   local(i) = XXH3-64(LE32(token[i*B]) || ... || LE32(token[i*B + B - 1]), seed S_i)
 *   key(0)   = local(0)
 *   key(i)   = XXH3-64(LE64(key(i - 1)) || LE64(local(i)), seed 1337)
 *
 *   S_i = 1337                       for every block of a request without LoRA adapter or cache salt
 *       + XXH3-64(UTF-8(lora), 0)    for every block when the request names a LoRA adapter   (Dynamo's rule)
 *       + XXH3-64(UTF-8(salt), 1)    for block 0 only when it names a non-empty cache salt   (kvidx's rule)
 *   (sums wrap modulo 2^64)
 * </pre>
 * Without adapter and salt the keys are exactly Mooncake's standard hashes (with its seed 1337, Dynamo's) and the
 * chaining of Dynamo's block hashes ({@link #chain}). The model is not part of the key: a cell of this scheme keeps
 * models apart by the pods a query considers (each pod serves one model). The salt seeds the first block only,
 * because engines report a chain's salt on its first block only (vLLM's {@code extra_keys}); through the chain it
 * still reaches every later key. Blocks with multimodal items or prompt-embeds digests have no key in this scheme.
 * docs/keys.md gives the definition with test vectors.
 *
 * <p><b>Note:</b> not thread safe (it reuses a scratch buffer): one instance per thread.
 */
public final class ChainedXxh3Hasher {
    /** The seed of the local hashes and of the chaining: Dynamo's, which Mooncake's standard hash takes. */
    public static final long SEED = 1337L;

    private final int blockSize;
    private final byte[] block;
    private final byte[] pair = new byte[16];

    /**
     * @param blockSize tokens per block.
     */
    public ChainedXxh3Hasher(final int blockSize) {
        if (blockSize < 1) {
            throw new IllegalArgumentException("block size must be >= 1: " + blockSize);
        }
        this.blockSize = blockSize;
        this.block = new byte[4 * blockSize];
    }

    /**
     * @return tokens per block.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * @param lora LoRA adapter name, or null / empty for none.
     * @return the seed of every block's local hash (before a salt is added to the first).
     */
    public static long seed(final String lora) {
        if (lora == null || lora.isEmpty()) {
            return SEED;
        }
        final byte[] b = lora.getBytes(StandardCharsets.UTF_8);
        return SEED + Xxh3.hash64(b, 0, b.length, 0L);
    }

    /**
     * @param lora LoRA adapter name bytes (UTF-8).
     * @param off  first byte.
     * @param len  length; 0 or less for none.
     * @return the seed of every block's local hash.
     */
    public static long seed(final byte[] lora, final int off, final int len) {
        return len <= 0 ? SEED : SEED + Xxh3.hash64(lora, off, len, 0L);
    }

    /**
     * @param seed a block seed ({@link #seed}).
     * @param salt cache salt bytes (UTF-8).
     * @param off  first byte.
     * @param len  length; 0 or less for none.
     * @return the seed of a chain's first block.
     */
    public static long firstSeed(final long seed, final byte[] salt, final int off, final int len) {
        return len <= 0 ? seed : seed + Xxh3.hash64(salt, off, len, 1L);
    }

    /**
     * @param seed a block seed.
     * @param salt cache salt, or null / empty for none.
     * @return the seed of a chain's first block.
     */
    public static long firstSeed(final long seed, final String salt) {
        if (salt == null || salt.isEmpty()) {
            return seed;
        }
        final byte[] b = salt.getBytes(StandardCharsets.UTF_8);
        return firstSeed(seed, b, 0, b.length);
    }

    /**
     * @param tokens token ids.
     * @param offset the block's first token.
     * @param seed   the block's seed.
     * @return the block's local hash.
     */
    public long local(final int[] tokens, final int offset, final long seed) {
        final byte[] b = block;
        for (int t = 0; t < blockSize; t++) {
            final int v = tokens[offset + t];
            final int o = 4 * t;
            b[o] = (byte) v;
            b[o + 1] = (byte) (v >>> 8);
            b[o + 2] = (byte) (v >>> 16);
            b[o + 3] = (byte) (v >>> 24);
        }
        return Xxh3.hash64(b, 0, b.length, seed);
    }

    /**
     * @param parent the previous block's key.
     * @param local  this block's local hash.
     * @return this block's key.
     */
    public long chain(final long parent, final long local) {
        final byte[] p = pair;
        for (int i = 0; i < 8; i++) {
            p[i] = (byte) (parent >>> (8 * i));
            p[8 + i] = (byte) (local >>> (8 * i));
        }
        return Xxh3.hash64(p, 0, 16, SEED);
    }

    /**
     * Keys of every full block of a request's tokens.
     *
     * @param seed      the blocks' seed ({@link #seed}).
     * @param firstSeed the first block's seed ({@link #firstSeed}).
     * @param tokens    token ids.
     * @param length    number of valid token ids.
     * @param out       receives the keys (at most {@code out.length}).
     * @return keys written.
     */
    public int keys(final long seed, final long firstSeed, final int[] tokens, final int length, final long[] out) {
        final int n = Math.min(length / blockSize, out.length);
        long key = 0;
        for (int i = 0; i < n; i++) {
            final long local = local(tokens, i * blockSize, i == 0 ? firstSeed : seed);
            key = i == 0 ? local : chain(key, local);
            out[i] = key;
        }
        return n;
    }

    /**
     * Chains per-block local hashes (Dynamo's {@code /query_by_hash} sends these) into keys, in place.
     *
     * @param hashes the local hashes, replaced by the keys.
     * @param n      how many.
     */
    public void chainInPlace(final long[] hashes, final int n) {
        for (int i = 1; i < n; i++) {
            hashes[i] = chain(hashes[i - 1], hashes[i]);
        }
    }
}
