package io.kvidx.client.keys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.StringLength;

class RouterKeyPropertiesTest {
    @Property(tries = 300)
    void shouldChangeTheKeyOfTheChangedBlockAndEveryLaterOneOnly(
        @ForAll @Size(min = 80, max = 80) final int[] tokens,
        @ForAll @IntRange(min = 0, max = 79) final int position,
        @ForAll final int replacement,
        @ForAll @IntRange(min = 1, max = 20) final int blockSize) {
        final RouterKeyHasher hasher = new RouterKeyHasher(blockSize);
        final int[] changed = tokens.clone();
        changed[position] = replacement == tokens[position] ? replacement + 1 : replacement;
        final long[] a = new long[80];
        final long[] b = new long[80];
        final int n = hasher.keys(7L, tokens, 80, a);
        assertEquals(n, hasher.keys(7L, changed, 80, b));
        final int block = position / blockSize;
        for (int i = 0; i < n; i++) {
            if (i < block) {
                assertEquals(a[i], b[i], "block " + i + " precedes the change");
            } else {
                assertNotEquals(a[i], b[i], "block " + i);
            }
        }
    }

    @Property(tries = 300)
    void shouldDependOnTheParent(
        @ForAll @Size(min = 16, max = 16) final int[] tokens, @ForAll final long parent, @ForAll final long other) {
        if (parent != other) {
            final RouterKeyHasher hasher = new RouterKeyHasher(16);
            assertNotEquals(hasher.blockKey(parent, tokens, 0), hasher.blockKey(other, tokens, 0));
        }
    }

    @Property(tries = 100)
    void shouldChangeEveryKeyWhenModelLoraOrSaltChanges(
        @ForAll @Size(min = 64, max = 64) final int[] tokens,
        @ForAll @StringLength(max = 20) final String model,
        @ForAll @StringLength(max = 20) final String lora,
        @ForAll @StringLength(max = 20) final String salt) {
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final long[] base = keys(hasher, tokens, RouterKeyHasher.chainSeed(model, lora, salt));
        allDiffer(base, keys(hasher, tokens, RouterKeyHasher.chainSeed(model + "x", lora, salt)));
        allDiffer(base, keys(hasher, tokens, RouterKeyHasher.chainSeed(model, lora + "x", salt)));
        allDiffer(base, keys(hasher, tokens, RouterKeyHasher.chainSeed(model, null, salt)));
        allDiffer(base, keys(hasher, tokens, RouterKeyHasher.chainSeed(model, lora, salt + "x")));
        allDiffer(base, keys(hasher, tokens, RouterKeyHasher.chainSeed(model, lora, null)));
        allDiffer(base, keys(hasher, tokens, RouterKeyHasher.chainSeed(null, lora, salt)));
    }

    private static long[] keys(final RouterKeyHasher hasher, final int[] tokens, final long seed) {
        final long[] out = new long[4];
        assertEquals(4, hasher.keys(seed, tokens, tokens.length, out));
        return out;
    }

    private static void allDiffer(final long[] a, final long[] b) {
        for (int i = 0; i < a.length; i++) {
            assertNotEquals(a[i], b[i], "block " + i);
        }
    }
}
