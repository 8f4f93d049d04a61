package io.kvidx.client.keys;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Key scheme 2 ("xxh3-chain") against an independent implementation: the expected values were computed with Debian's
 * python3-xxhash 3.0.0 (the reference C library's binding):
 * <pre>
 *   local(block, seed) = xxhash.xxh3_64_intdigest(struct.pack('&lt;16I', *block), seed=seed)
 *   chain(p, l)        = xxhash.xxh3_64_intdigest(struct.pack('&lt;QQ', p, l), seed=1337)
 *   seed               = 1337 (+ xxh3_64(lora, seed=0)); first block: + xxh3_64(salt, seed=1)
 * </pre>
 * over the tokens 1..32 in 16-token blocks.
 */
class ChainedXxh3HasherTest {
    private static final int[] TOKENS = new int[32];

    static {
        for (int i = 0; i < TOKENS.length; i++) {
            TOKENS[i] = i + 1;
        }
    }

    @Test
    void shouldMatchTheReferenceXxh3WithoutAdapterOrSalt() {
        final ChainedXxh3Hasher h = new ChainedXxh3Hasher(16);
        final long[] keys = new long[2];
        final long seed = ChainedXxh3Hasher.seed(null);
        assertEquals(2, h.keys(seed, ChainedXxh3Hasher.firstSeed(seed, (String) null), TOKENS, 32, keys));
        assertArrayEquals(new long[] {-1583300653928780152L, -5980354406663771828L}, keys);
        // Dynamo's per-block hashes, chained, are the same keys.
        final long[] locals = {h.local(TOKENS, 0, 1337L), h.local(TOKENS, 16, 1337L)};
        assertArrayEquals(new long[] {-1583300653928780152L, 2287610619914608821L}, locals);
        h.chainInPlace(locals, 2);
        assertArrayEquals(keys, locals);
    }

    @Test
    void shouldFoldTheAdapterIntoEveryBlockAndTheSaltIntoTheFirst() {
        final ChainedXxh3Hasher h = new ChainedXxh3Hasher(16);
        final long[] keys = new long[4];
        final long seed = ChainedXxh3Hasher.seed("my-adapter");
        assertEquals(2, h.keys(seed, ChainedXxh3Hasher.firstSeed(seed, "user-7"), TOKENS, 40, keys));
        assertEquals(-40070501965883321L, keys[0]);
        assertEquals(-5681813751004809344L, keys[1]);
    }
}
