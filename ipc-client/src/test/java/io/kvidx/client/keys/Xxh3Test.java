package io.kvidx.client.keys;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.SplittableRandom;

import net.openhft.hashing.LongHashFunction;
import net.openhft.hashing.LongTupleHashFunction;
import org.junit.jupiter.api.Test;

class Xxh3Test {
    private static final HexFormat HEX = HexFormat.of();

    @Test
    void shouldMatchPublishedVectors() {
        // From the xxHash reference library (via python-xxhash 3.2 / libxxhash 0.8.1).
        assertEquals(0x2d06800538d394c2L, Xxh3.hash64(new byte[0], 0, 0));
        assertEquals(0x4dc5b0cc826f6703L, Xxh3.hash64(new byte[0], 0, 0, 1L));
        assertEquals(0x78af5f94892f3950L, Xxh3.hash64(ascii("abc"), 0, 3));
        assertEquals(0x6b4467b443c76228L, Xxh3.hash64(ascii("abc"), 0, 3, 1L));
        assertEquals(0xaa4c2b42ae6b13deL, Xxh3.hash64(ascii("xxhash"), 0, 6));
        final byte[] ramp = new byte[512];
        for (int i = 0; i < ramp.length; i++) {
            ramp[i] = (byte)i;
        }
        assertEquals(0x1059105ad19bfa09L, Xxh3.hash64(ramp, 0, 512));
        assertEquals(0x0f3b8d192b389272L, Xxh3.hash64(ramp, 0, 512, 1L));

        assertEquals("99aa06d3014798d86001c324468d497f", canonical128(new byte[0], 0L));
        assertEquals("a96faf705af16834e6c632b61e964e1f", canonical128(ascii("a"), 0L));
        assertEquals("06b05ab6733a618578af5f94892f3950", canonical128(ascii("abc"), 0L));
        assertEquals("9c8b437c78cac00a376072e24bfdf4d2", canonical128(ascii("xxhash"), 0L));
        assertEquals("111d5771df64cbcb1059105ad19bfa09", canonical128(ramp, 0L));
    }

    @Test
    void shouldAgreeWithZeroAllocationHashingOnRandomInputs() {
        final SplittableRandom random = new SplittableRandom(20261122L);
        final long[] ours = new long[2];
        for (int len = 0; len <= 2100; len = len < 300 ? len + 1 : len + 37) {
            for (int round = 0; round < 6; round++) {
                final byte[] data = new byte[len + 7];
                random.nextBytes(data);
                final int off = random.nextInt(8);
                final long seed = round == 0 ? 0L : random.nextLong();
                final String where = "len=" + len + " seed=" + seed;

                final long expected64 = LongHashFunction.xx3(seed).hashBytes(data, off, len);
                assertEquals(expected64, Xxh3.hash64(data, off, len, seed), where);
                if (seed == 0) {
                    assertEquals(LongHashFunction.xx3().hashBytes(data, off, len), Xxh3.hash64(data, off, len), where);
                }

                final long[] expected128 = LongTupleHashFunction.xx128(seed).hashBytes(data, off, len);
                Xxh3.hash128(data, off, len, seed, ours, 0);
                assertArrayEquals(expected128, ours, where);
            }
        }
    }

    @Test
    void shouldWriteCanonicalDigestHighHalfFirst() {
        final byte[] data = ascii("kvidx");
        final long[] halves = new long[2];
        Xxh3.hash128(data, 0, data.length, 7L, halves, 0);
        final byte[] digest = new byte[18];
        Xxh3.hash128Canonical(data, 0, data.length, 7L, digest, 1, new long[2]);
        assertEquals(String.format("%016x%016x", halves[1], halves[0]), HEX.formatHex(digest, 1, 17));
    }

    private static String canonical128(final byte[] data, final long seed) {
        final byte[] digest = new byte[16];
        Xxh3.hash128Canonical(data, 0, data.length, seed, digest, 0, new long[2]);
        return HEX.formatHex(digest);
    }

    private static byte[] ascii(final String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
