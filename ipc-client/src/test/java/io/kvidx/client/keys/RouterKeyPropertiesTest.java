package io.kvidx.client.keys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.HashSet;
import java.util.Set;

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

    @Property(tries = 200)
    void shouldShareTheGroupBitsInsideEachGroupOfEightBlocks(
        @ForAll @Size(min = 200, max = 200) final int[] tokens,
        @ForAll @IntRange(min = 1, max = 8) final int blockSize,
        @ForAll @StringLength(max = 20) final String model) {
        final RouterKeyHasher hasher = new RouterKeyHasher(blockSize);
        final long seed = RouterKeyHasher.chainSeed(model, null, null);
        final long[] keys = new long[200];
        final int n = hasher.keys(seed, tokens, tokens.length, keys);
        long parent = seed;
        for (int i = 0; i < n; i++) {
            final long key = keys[i];
            final long raw = RouterKeyHasherTest.referenceRaw(parent, tokens, i * blockSize, blockSize);
            final int first = i - i % RouterKeyHasher.GROUP_SIZE;
            assertEquals(i % 8, (int)(key >>> RouterKeyHasher.POS_SHIFT) & 7, "pos of block " + i);
            assertEquals(keys[first] >>> 40, key >>> 40, "group of block " + i + " is block " + first + "'s");
            if (i == first) {
                assertEquals(raw >>> 40, key >>> 40, "block " + i + " starts a group from its raw hash");
            }
            assertEquals(raw & RouterKeyHasher.LOW_MASK, key & RouterKeyHasher.LOW_MASK, "low bits of block " + i);
            parent = key;
        }
    }

    @Property(tries = 200)
    void shouldGiveDifferentChainsDifferentKeys(
        @ForAll @Size(min = 160, max = 160) final int[] tokens,
        @ForAll @IntRange(min = 0, max = 159) final int position,
        @ForAll final int replacement) {
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final long seed = RouterKeyHasher.chainSeed("m", null, null);
        final int[] changed = tokens.clone();
        changed[position] = replacement == tokens[position] ? replacement + 1 : replacement;
        final long[] a = keys(hasher, tokens, seed, 10);
        final long[] b = keys(hasher, changed, seed, 10);
        final int block = position / 16;
        final Set<Long> distinct = new HashSet<>();
        for (int i = 0; i < 10; i++) {
            distinct.add(a[i]);
            distinct.add(b[i]);
            if (i >= block && i / 8 == block / 8 && block % 8 != 0) {
                // Diverged after the group's first block: the rest of the group keeps the common group bits (and
                // pos); only the low 37 bits tell the two chains apart.
                assertEquals(a[i] >>> RouterKeyHasher.POS_SHIFT, b[i] >>> RouterKeyHasher.POS_SHIFT, "block " + i);
                assertNotEquals(a[i] & RouterKeyHasher.LOW_MASK, b[i] & RouterKeyHasher.LOW_MASK, "block " + i);
            }
        }
        assertEquals(10 + 10 - block, distinct.size(), "the common prefix is shared, every other key differs");
        // Another seed: every key of one chain differs from every key of the other.
        final long[] other = keys(hasher, tokens, RouterKeyHasher.chainSeed("n", null, null), 10);
        for (final long k : other) {
            distinct.add(k);
        }
        assertEquals(10 + 10 - block + 10, distinct.size());
    }

    private static long[] keys(final RouterKeyHasher hasher, final int[] tokens, final long seed, final int n) {
        final long[] out = new long[n];
        assertEquals(n, hasher.keys(seed, tokens, tokens.length, out));
        return out;
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
