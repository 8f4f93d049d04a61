package io.kvidx.client.keys;

import static io.kvidx.client.keys.Xxh3.BLOCK_LEN;
import static io.kvidx.client.keys.Xxh3.LAST_ACC_START;
import static io.kvidx.client.keys.Xxh3.MERGE_ACCS_START;
import static io.kvidx.client.keys.Xxh3.MIDSIZE_LAST_OFFSET;
import static io.kvidx.client.keys.Xxh3.MIDSIZE_MAX;
import static io.kvidx.client.keys.Xxh3.MIDSIZE_START_OFFSET;
import static io.kvidx.client.keys.Xxh3.PRIME32_1;
import static io.kvidx.client.keys.Xxh3.PRIME32_2;
import static io.kvidx.client.keys.Xxh3.PRIME32_3;
import static io.kvidx.client.keys.Xxh3.PRIME64_1;
import static io.kvidx.client.keys.Xxh3.PRIME64_2;
import static io.kvidx.client.keys.Xxh3.PRIME64_3;
import static io.kvidx.client.keys.Xxh3.PRIME64_4;
import static io.kvidx.client.keys.Xxh3.PRIME64_5;
import static io.kvidx.client.keys.Xxh3.SECRET;
import static io.kvidx.client.keys.Xxh3.SECRET_SIZE;
import static io.kvidx.client.keys.Xxh3.SECRET_SIZE_MIN;
import static io.kvidx.client.keys.Xxh3.STRIPES_PER_BLOCK;
import static io.kvidx.client.keys.Xxh3.STRIPE_LEN;
import static io.kvidx.client.keys.Xxh3.avalanche;
import static io.kvidx.client.keys.Xxh3.mul128Fold64;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * kvidx's own block keys ("router keys"): a chained XXH3-64 over each full block of token ids.
 *
 * <p>The key of a block is {@code XXH3-64(seed 0)} of the byte string
 * {@code LE64(parentKey) || LE32(token[0]) || ... || LE32(token[blockSize - 1])}; the parent of the first block is
 * the chain seed {@link #chainSeed(String, String, String)}, which folds in the model name, the LoRA adapter name
 * and the cache salt. A block that overlaps multimodal items or has a prompt-embeds digest appends them
 * ({@link BlockExtras}); blocks without either keep exactly this key. A trailing partial block has no key.
 * docs/keys.md gives the definition in full so that other languages can compute the same keys.
 *
 * <p>For blocks without extras the byte string is never built: the hash reads the parent and the token ids where
 * they lie, so {@link #blockKey}, {@link #keys} and {@link #extend} allocate nothing. Blocks with extras are hashed
 * from a message built in the caller's scratch ({@link BlockExtras}, {@link RequestExtras}).
 *
 * <p><b>Note:</b> immutable and thread safe; one instance may serve every router thread.
 */
public final class RouterKeyHasher {
    /** Block size used when none is given: 16 tokens, vLLM's default. */
    public static final int BLOCK_SIZE_DEFAULT = 16;

    /** Domain tag at the start of the chain seed's byte string (version 1 of the key definition). */
    static final String SEED_TAG = "kvidx.router.v1";

    private static final long LOW32 = 0xFFFFFFFFL;

    private final int blockSize;
    private final int messageLength;

    /**
     * Hasher for {@link #BLOCK_SIZE_DEFAULT}-token blocks.
     */
    public RouterKeyHasher() {
        this(BLOCK_SIZE_DEFAULT);
    }

    /**
     * @param blockSize tokens per block, at least 1.
     */
    public RouterKeyHasher(final int blockSize) {
        if (blockSize < 1 || blockSize > (Integer.MAX_VALUE - 8) / 4) {
            throw new IllegalArgumentException("block size must be at least 1: " + blockSize);
        }
        this.blockSize = blockSize;
        this.messageLength = 8 + 4 * blockSize;
    }

    /**
     * @return tokens per block.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * The parent key of a chain's first block. {@code null} means absent, which differs from the empty string.
     * Allocates (call it once per model / adapter / salt and keep the value).
     *
     * @param model     model name, or null.
     * @param loraName  LoRA adapter name, or null.
     * @param cacheSalt cache salt, or null.
     * @return the chain seed.
     */
    public static long chainSeed(final String model, final String loraName, final String cacheSalt) {
        final byte[] l = utf8(loraName);
        final byte[] s = utf8(cacheSalt);
        return new ChainSeeds().model(model).seed(l, 0, l == null ? -1 : l.length, s, 0, s == null ? -1 : s.length);
    }

    /**
     * Key of the single block {@code tokens[offset .. offset + blockSize)}.
     *
     * @param parentKey key of the previous block, or the chain seed for the first block.
     * @param tokens    token ids.
     * @param offset    first token of the block.
     * @return the block key.
     */
    public long blockKey(final long parentKey, final int[] tokens, final int offset) {
        Objects.checkFromIndexSize(offset, blockSize, tokens.length);
        return hash(parentKey, tokens, offset, messageLength);
    }

    /**
     * Keys of every full block of {@code tokens[0 .. length)}, chained from {@code seed}. When {@code out} is
     * shorter than the number of full blocks, only the first {@code out.length} keys are written.
     *
     * @param seed   the chain seed ({@link #chainSeed(String, String, String)}).
     * @param tokens token ids.
     * @param length number of valid token ids.
     * @param out    receives the keys from index 0.
     * @return number of keys written: {@code min(length / blockSize, out.length)}.
     */
    public int keys(final long seed, final int[] tokens, final int length, final long[] out) {
        return extend(seed, tokens, 0, length, out, 0);
    }

    /**
     * Extends a chain: keys of the full blocks of {@code tokens[offset .. offset + length)}, the first of which
     * has {@code parentKey} as its parent. For a multi-turn prompt whose first {@code n} blocks were keyed
     * already, pass the last of those keys and {@code offset = n * blockSize}. When {@code out} has fewer than
     * the number of full blocks free from {@code outOffset}, only as many keys as fit are written.
     *
     * @param parentKey key of the block before {@code tokens[offset]}, or the chain seed.
     * @param tokens    token ids.
     * @param offset    first token to key; the caller aligns it to a block boundary of the prompt.
     * @param length    number of token ids from offset.
     * @param out       receives the keys.
     * @param outOffset where the first key goes.
     * @return number of keys written.
     */
    public int extend(
        final long parentKey, final int[] tokens, final int offset, final int length,
        final long[] out, final int outOffset) {
        Objects.checkFromIndexSize(offset, length, tokens.length);
        Objects.checkFromIndexSize(outOffset, 0, out.length);
        final int bs = blockSize;
        final int len = messageLength;
        final int n = Math.min(length / bs, out.length - outOffset);
        long parent = parentKey;
        for (int i = 0; i < n; i++) {
            parent = hash(parent, tokens, offset + i * bs, len);
            out[outOffset + i] = parent;
        }
        return n;
    }

    /**
     * Key of the single block {@code tokens[offset .. offset + blockSize)} with its extras (docs/keys.md,
     * "Extras"): the plain {@link #blockKey(long, int[], int)} when {@code extras} is null or empty, otherwise the
     * key over {@code LE64(parent) || LE32 tokens || extras}, built in the extras' own scratch. This is the one
     * definition the daemon (from an event's {@code extra_keys}) and routers (through {@link RequestExtras}) share.
     *
     * @param parentKey key of the previous block, or the chain seed for the first block.
     * @param tokens    token ids.
     * @param offset    first token of the block.
     * @param extras    the block's multimodal items and prompt-embeds digest, or null.
     * @return the block key.
     */
    public long blockKey(final long parentKey, final int[] tokens, final int offset, final BlockExtras extras) {
        Objects.checkFromIndexSize(offset, blockSize, tokens.length);
        if (extras == null || extras.isEmpty()) {
            return hash(parentKey, tokens, offset, messageLength);
        }
        return extras.key(parentKey, tokens, offset, blockSize);
    }

    /**
     * Keys of every full block of {@code tokens[0 .. length)} of a request with multimodal items and/or
     * prompt-embeds digests; the same as {@link #keys(long, int[], int, long[])} when {@code extras} is null or
     * empty (and as fast: no scratch is touched). Allocates nothing once the extras' scratch has grown.
     *
     * @param seed   the chain seed.
     * @param tokens token ids.
     * @param length number of valid token ids.
     * @param extras the request's multimodal items and digests (its scratch is written), or null.
     * @param out    receives the keys from index 0.
     * @return number of keys written: {@code min(length / blockSize, out.length)}.
     */
    public int keys(final long seed, final int[] tokens, final int length, final RequestExtras extras,
        final long[] out) {
        return extend(seed, tokens, 0, length, extras, out, 0);
    }

    /**
     * {@link #extend(long, int[], int, int, long[], int)} for a request with multimodal items and/or prompt-embeds
     * digests. Item offsets and digest block numbers are positions in the whole prompt, so {@code tokens} is the
     * whole prompt and {@code offset} the first token to key (a block boundary).
     *
     * @param parentKey key of the block before {@code tokens[offset]}, or the chain seed.
     * @param tokens    token ids of the whole prompt.
     * @param offset    first token to key, a multiple of the block size.
     * @param length    number of token ids from offset.
     * @param extras    the request's multimodal items and digests (its scratch is written), or null.
     * @param out       receives the keys.
     * @param outOffset where the first key goes.
     * @return number of keys written.
     */
    public int extend(
        final long parentKey, final int[] tokens, final int offset, final int length, final RequestExtras extras,
        final long[] out, final int outOffset) {
        if (extras == null || extras.isEmpty()) {
            return extend(parentKey, tokens, offset, length, out, outOffset);
        }
        Objects.checkFromIndexSize(offset, length, tokens.length);
        Objects.checkFromIndexSize(outOffset, 0, out.length);
        if (offset % blockSize != 0) {
            throw new IllegalArgumentException("offset " + offset + " is not a multiple of the block size "
                + blockSize + " (multimodal offsets are prompt positions)");
        }
        final int bs = blockSize;
        final int n = Math.min(length / bs, out.length - outOffset);
        final int firstBlock = offset / bs;
        final BlockExtras block = extras.block();
        long parent = parentKey;
        int cursor = 0;
        for (int i = 0; i < n; i++) {
            final int start = offset + i * bs;
            cursor = extras.fill(firstBlock + i, start, start + bs, cursor);
            parent = block.isEmpty() ? hash(parent, tokens, start, messageLength)
                : block.key(parent, tokens, start, bs);
            out[outOffset + i] = parent;
        }
        return n;
    }

    // ---- XXH3-64, seed 0, over LE64(parent) || LE32 tokens, read in place. len = 8 + 4 * blockSize >= 12. ----

    /** Reads the 8 message bytes at byte position p (a multiple of 4), little-endian. */
    private static long rd(final long parent, final int[] t, final int off, final int p) {
        if (p >= 8) {
            final int i = off + ((p - 8) >> 2);
            return (t[i] & LOW32) | ((long)t[i + 1] << 32);
        }
        if (p == 0) {
            return parent;
        }
        return (parent >>> 32) | ((long)t[off] << 32);
    }

    private static long sec(final int i) {
        return Xxh3.read64(SECRET, i);
    }

    private static long mix(final long parent, final int[] t, final int off, final int p, final int s) {
        return mul128Fold64(rd(parent, t, off, p) ^ sec(s), rd(parent, t, off, p + 8) ^ sec(s + 8));
    }

    static long hash(final long parent, final int[] t, final int off, final int len) {
        if (len <= 16) {
            final long lo = parent ^ (sec(24) ^ sec(32));
            final long hi = rd(parent, t, off, len - 8) ^ (sec(40) ^ sec(48));
            return avalanche(len + Long.reverseBytes(lo) + hi + mul128Fold64(lo, hi));
        }
        if (len <= 128) {
            long acc = len * PRIME64_1;
            if (len > 32) {
                if (len > 64) {
                    if (len > 96) {
                        acc += mix(parent, t, off, 48, 96);
                        acc += mix(parent, t, off, len - 64, 112);
                    }
                    acc += mix(parent, t, off, 32, 64);
                    acc += mix(parent, t, off, len - 48, 80);
                }
                acc += mix(parent, t, off, 16, 32);
                acc += mix(parent, t, off, len - 32, 48);
            }
            acc += mix(parent, t, off, 0, 0);
            acc += mix(parent, t, off, len - 16, 16);
            return avalanche(acc);
        }
        if (len <= MIDSIZE_MAX) {
            long acc = len * PRIME64_1;
            for (int i = 0; i < 8; i++) {
                acc += mix(parent, t, off, 16 * i, 16 * i);
            }
            acc = avalanche(acc);
            final int rounds = len / 16;
            for (int i = 8; i < rounds; i++) {
                acc += mix(parent, t, off, 16 * i, 16 * (i - 8) + MIDSIZE_START_OFFSET);
            }
            acc += mix(parent, t, off, len - 16, SECRET_SIZE_MIN - MIDSIZE_LAST_OFFSET);
            return avalanche(acc);
        }
        return hashLong(parent, t, off, len);
    }

    private static long mulHalves(final long key) {
        return (key & LOW32) * (key >>> 32);
    }

    private static long scramble(final long acc, final long key) {
        return ((acc ^ (acc >>> 47)) ^ key) * PRIME32_1;
    }

    private static long hashLong(final long parent, final int[] t, final int off, final int len) {
        long a0 = PRIME32_3;
        long a1 = PRIME64_1;
        long a2 = PRIME64_2;
        long a3 = PRIME64_3;
        long a4 = PRIME64_4;
        long a5 = PRIME32_2;
        long a6 = PRIME64_5;
        long a7 = PRIME32_1;
        final int blocks = (len - 1) / BLOCK_LEN;
        final int fullStripes = blocks * STRIPES_PER_BLOCK;
        final int stripes = fullStripes + ((len - 1) - BLOCK_LEN * blocks) / STRIPE_LEN;
        final int scrambleAt = SECRET_SIZE - STRIPE_LEN;
        // n == stripes is the last stripe, read at len - 64 with its own secret offset.
        for (int n = 0; n <= stripes; n++) {
            final int p = n < stripes ? n * STRIPE_LEN : len - STRIPE_LEN;
            final int s = n < stripes ? (n % STRIPES_PER_BLOCK) * 8 : SECRET_SIZE - STRIPE_LEN - LAST_ACC_START;
            final long d0 = rd(parent, t, off, p);
            final long d1 = rd(parent, t, off, p + 8);
            final long d2 = rd(parent, t, off, p + 16);
            final long d3 = rd(parent, t, off, p + 24);
            final long d4 = rd(parent, t, off, p + 32);
            final long d5 = rd(parent, t, off, p + 40);
            final long d6 = rd(parent, t, off, p + 48);
            final long d7 = rd(parent, t, off, p + 56);
            a1 += d0;
            a0 += mulHalves(d0 ^ sec(s));
            a0 += d1;
            a1 += mulHalves(d1 ^ sec(s + 8));
            a3 += d2;
            a2 += mulHalves(d2 ^ sec(s + 16));
            a2 += d3;
            a3 += mulHalves(d3 ^ sec(s + 24));
            a5 += d4;
            a4 += mulHalves(d4 ^ sec(s + 32));
            a4 += d5;
            a5 += mulHalves(d5 ^ sec(s + 40));
            a7 += d6;
            a6 += mulHalves(d6 ^ sec(s + 48));
            a6 += d7;
            a7 += mulHalves(d7 ^ sec(s + 56));
            if (n < fullStripes && n % STRIPES_PER_BLOCK == STRIPES_PER_BLOCK - 1) {
                a0 = scramble(a0, sec(scrambleAt));
                a1 = scramble(a1, sec(scrambleAt + 8));
                a2 = scramble(a2, sec(scrambleAt + 16));
                a3 = scramble(a3, sec(scrambleAt + 24));
                a4 = scramble(a4, sec(scrambleAt + 32));
                a5 = scramble(a5, sec(scrambleAt + 40));
                a6 = scramble(a6, sec(scrambleAt + 48));
                a7 = scramble(a7, sec(scrambleAt + 56));
            }
        }
        final int m = MERGE_ACCS_START;
        long result = len * PRIME64_1;
        result += mul128Fold64(a0 ^ sec(m), a1 ^ sec(m + 8));
        result += mul128Fold64(a2 ^ sec(m + 16), a3 ^ sec(m + 24));
        result += mul128Fold64(a4 ^ sec(m + 32), a5 ^ sec(m + 40));
        result += mul128Fold64(a6 ^ sec(m + 48), a7 ^ sec(m + 56));
        return avalanche(result);
    }

    private static byte[] utf8(final String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }
}
