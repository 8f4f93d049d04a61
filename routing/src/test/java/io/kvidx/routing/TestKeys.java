package io.kvidx.routing;

/**
 * Test helpers: a chained block-key function (not the production router-key scheme) and chain builders.
 */
final class TestKeys {
    static final int BLOCK = 4;

    private TestKeys() {
    }

    /** Chained hash over each full block of BLOCK tokens. */
    static final KeyFunction KEYS = (tokens, length, keys) -> {
        final int n = length / BLOCK;
        long parent = 17;
        for (int b = 0; b < n; b++) {
            long h = parent;
            for (int i = 0; i < BLOCK; i++) {
                h = RoutingContext.mix(h ^ tokens[b * BLOCK + i]);
            }
            keys[b] = h;
            parent = h;
        }
        return n;
    };

    static long[] chain(final int[] tokens) {
        final long[] keys = new long[tokens.length / BLOCK + 1];
        final int n = KEYS.keys(tokens, tokens.length, keys);
        return java.util.Arrays.copyOf(keys, n);
    }

    static int[] tokens(final int seed, final int count) {
        final int[] t = new int[count];
        for (int i = 0; i < count; i++) {
            t[i] = seed * 100_000 + i;
        }
        return t;
    }

    /** Tokens sharing the first {@code shared} tokens of prefix seed a, then continuing with seed b. */
    static int[] tokens(final int a, final int shared, final int b, final int count) {
        final int[] t = tokens(b, count);
        System.arraycopy(tokens(a, shared), 0, t, 0, shared);
        return t;
    }

    static long[] keys(final long base, final int n) {
        final long[] k = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = RoutingContext.mix(base * 1_000 + i);
        }
        return k;
    }
}
