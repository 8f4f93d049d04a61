package io.kvidx.client.keys.vllm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.StringLength;

class VllmHashPropertiesTest {
    @Property(tries = 60)
    void shouldChangeTheKeyOfTheChangedBlockAndEveryLaterOneOnly(
        @ForAll @Size(min = 4 * 8, max = 4 * 8) final int[] tokens,
        @ForAll @IntRange(min = 0, max = 31) final int position,
        @ForAll final int replacement,
        @ForAll @IntRange(min = 0, max = 3) final int algo) {
        final int[] clean = sanitize(tokens);
        final int[] changed = clean.clone();
        // Another valid token id, never the same one.
        changed[position] = (clean[position] + 1 + Math.floorMod(replacement, 999_999)) % 1_000_000;
        final long[] a = values(VllmHashAlgorithm.values()[algo], clean, "0", VllmExtraKeys.NONE);
        final long[] b = values(VllmHashAlgorithm.values()[algo], changed, "0", VllmExtraKeys.NONE);
        final int block = position / 4;
        for (int i = 0; i < a.length; i++) {
            if (i < block) {
                assertEquals(a[i], b[i], "block " + i + " precedes the change");
            } else {
                assertNotEquals(a[i], b[i], "block " + i);
            }
        }
    }

    @Property(tries = 40)
    void shouldChangeEveryKeyWhenSeedLoraOrSaltChanges(
        @ForAll @Size(min = 4 * 6, max = 4 * 6) final int[] tokens,
        @ForAll @StringLength(min = 1, max = 12) final String seed,
        @ForAll @StringLength(min = 1, max = 12) final String lora,
        @ForAll @StringLength(min = 1, max = 12) final String salt,
        @ForAll @IntRange(min = 0, max = 3) final int algo) {
        final VllmHashAlgorithm a = VllmHashAlgorithm.values()[algo];
        final int[] clean = sanitize(tokens);
        final long[] base = values(a, clean, seed, VllmExtraKeys.of(lora, salt));
        allDiffer(base, values(a, clean, seed + "x", VllmExtraKeys.of(lora, salt)));
        allDiffer(base, values(a, clean, seed, VllmExtraKeys.of(lora + "x", salt)));
        allDiffer(base, values(a, clean, seed, VllmExtraKeys.of(null, salt)));
        allDiffer(base, values(a, clean, seed, VllmExtraKeys.of(lora, salt + "x")));
        allDiffer(base, values(a, clean, seed, VllmExtraKeys.of(lora, null)));
    }

    @Property(tries = 40)
    void shouldDependOnTheParentDigest(
        @ForAll @Size(min = 4, max = 4) final int[] tokens,
        @ForAll @Size(min = 32, max = 32) final byte[] parent,
        @ForAll @IntRange(min = 0, max = 31) final int flip) {
        final VllmBlockHasher hasher = new VllmBlockHasher(VllmHashAlgorithm.SHA256, 4);
        final byte[] a = new byte[32];
        final byte[] b = new byte[32];
        hasher.hashBlock(parent, 0, sanitize(tokens), 0, null, a, 0);
        final byte[] other = parent.clone();
        other[flip] ^= 1;
        hasher.hashBlock(other, 0, sanitize(tokens), 0, null, b, 0);
        assertNotEquals(java.util.HexFormat.of().formatHex(a), java.util.HexFormat.of().formatHex(b));
    }

    private static void allDiffer(final long[] a, final long[] b) {
        for (int i = 0; i < a.length; i++) {
            assertNotEquals(a[i], b[i], "block " + i);
        }
    }

    private static int[] sanitize(final int[] tokens) {
        final int[] t = tokens.clone();
        for (int i = 0; i < t.length; i++) {
            t[i] = Math.abs(t[i] % 1_000_000);
        }
        return t;
    }

    private static long[] values(
        final VllmHashAlgorithm algo, final int[] tokens, final String seed, final VllmExtraKeys extras) {
        final VllmBlockHasher hasher = new VllmBlockHasher(algo, 4);
        final long[] values = new long[tokens.length / 4];
        hasher.hashRequest(hasher.noneHash(seed), tokens, tokens.length, extras, null, values);
        return values;
    }
}
