package io.kvidx.client.keys;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * XXH3 (64-bit and 128-bit variants, with seed, default secret) over a byte array range, written from the XXH3
 * algorithm description. Used for the vLLM {@code xxhash} algorithms and as the reference the router key path
 * ({@link RouterKeyHasher}) is checked against.
 *
 * <p><b>Note:</b> stateless and thread safe. Both variants allocate nothing up to 240 bytes; longer inputs use an
 * 8-long accumulator array (which escape analysis may or may not remove) and, with a non-zero seed, a 192-byte
 * derived secret. The router's hot path does not come here ({@link RouterKeyHasher} allocates nothing).
 */
public final class Xxh3 {
    static final long PRIME32_1 = 0x9E3779B1L;
    static final long PRIME32_2 = 0x85EBCA77L;
    static final long PRIME32_3 = 0xC2B2AE3DL;
    static final long PRIME64_1 = 0x9E3779B185EBCA87L;
    static final long PRIME64_2 = 0xC2B2AE3D27D4EB4FL;
    static final long PRIME64_3 = 0x165667B19E3779F9L;
    static final long PRIME64_4 = 0x85EBCA77C2B2AE63L;
    static final long PRIME64_5 = 0x27D4EB2F165667C5L;
    static final long PRIME_MX1 = 0x165667919E3779F9L;
    static final long PRIME_MX2 = 0x9FB21C651E98DF25L;

    static final int SECRET_SIZE = 192;
    static final int STRIPE_LEN = 64;
    static final int STRIPES_PER_BLOCK = (SECRET_SIZE - STRIPE_LEN) / 8;
    static final int BLOCK_LEN = STRIPE_LEN * STRIPES_PER_BLOCK;
    static final int MIDSIZE_MAX = 240;
    static final int MIDSIZE_START_OFFSET = 3;
    static final int MIDSIZE_LAST_OFFSET = 17;
    static final int SECRET_SIZE_MIN = 136;
    static final int LAST_ACC_START = 7;
    static final int MERGE_ACCS_START = 11;

    private static final VarHandle LONG_LE =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INT_LE =
        MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG_BE =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    /** The default XXH3 secret (192 bytes), as published with the algorithm. */
    static final byte[] SECRET = hex(
        "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
        + "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
        + "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
        + "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
        + "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
        + "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e");

    private Xxh3() {
    }

    /**
     * XXH3-64 with seed 0.
     *
     * @param input  bytes.
     * @param offset first byte.
     * @param length number of bytes.
     * @return the 64-bit hash.
     */
    public static long hash64(final byte[] input, final int offset, final int length) {
        return hash64(input, offset, length, 0L);
    }

    /**
     * XXH3-64 with a seed.
     *
     * @param input  bytes.
     * @param offset first byte.
     * @param length number of bytes.
     * @param seed   seed.
     * @return the 64-bit hash.
     */
    public static long hash64(final byte[] input, final int offset, final int length, final long seed) {
        Objects.checkFromIndexSize(offset, length, input.length);
        if (length <= 16) {
            return len0To16(input, offset, length, seed);
        }
        if (length <= 128) {
            return len17To128(input, offset, length, seed);
        }
        if (length <= MIDSIZE_MAX) {
            return len129To240(input, offset, length, seed);
        }
        return hashLong64(input, offset, length, seed);
    }

    /**
     * XXH3-128 with a seed; the two halves are written to {@code out[outOffset]} (low 64 bits) and
     * {@code out[outOffset + 1]} (high 64 bits).
     *
     * @param input     bytes.
     * @param offset    first byte.
     * @param length    number of bytes.
     * @param seed      seed.
     * @param out       receives low then high.
     * @param outOffset where to write.
     */
    public static void hash128(
        final byte[] input, final int offset, final int length, final long seed,
        final long[] out, final int outOffset) {
        Objects.checkFromIndexSize(offset, length, input.length);
        Objects.checkFromIndexSize(outOffset, 2, out.length);
        if (length <= 16) {
            len0To16x128(input, offset, length, seed, out, outOffset);
        } else if (length <= 128) {
            len17To128x128(input, offset, length, seed, out, outOffset);
        } else if (length <= MIDSIZE_MAX) {
            len129To240x128(input, offset, length, seed, out, outOffset);
        } else {
            hashLong128(input, offset, length, seed, out, outOffset);
        }
    }

    /**
     * XXH3-128 in its canonical form, as {@code xxh3_128_digest} gives it: 16 bytes, high half first, each
     * half big-endian.
     *
     * @param input     bytes.
     * @param offset    first byte.
     * @param length    number of bytes.
     * @param seed      seed.
     * @param dst       receives 16 bytes.
     * @param dstOffset where to write.
     * @param scratch   two longs of scratch space (so that this method allocates nothing).
     */
    public static void hash128Canonical(
        final byte[] input, final int offset, final int length, final long seed,
        final byte[] dst, final int dstOffset, final long[] scratch) {
        Objects.checkFromIndexSize(dstOffset, 16, dst.length);
        hash128(input, offset, length, seed, scratch, 0);
        LONG_BE.set(dst, dstOffset, scratch[1]);
        LONG_BE.set(dst, dstOffset + 8, scratch[0]);
    }

    static long read64(final byte[] b, final int i) {
        return (long)LONG_LE.get(b, i);
    }

    static long read32(final byte[] b, final int i) {
        return (int)INT_LE.get(b, i) & 0xFFFFFFFFL;
    }

    static long xxh64Avalanche(final long hash) {
        long h = hash;
        h ^= h >>> 33;
        h *= PRIME64_2;
        h ^= h >>> 29;
        h *= PRIME64_3;
        h ^= h >>> 32;
        return h;
    }

    static long avalanche(final long hash) {
        long h = hash;
        h ^= h >>> 37;
        h *= PRIME_MX1;
        h ^= h >>> 32;
        return h;
    }

    static long rrmxmx(final long hash, final long length) {
        long h = hash;
        h ^= Long.rotateLeft(h, 49) ^ Long.rotateLeft(h, 24);
        h *= PRIME_MX2;
        h ^= (h >>> 35) + length;
        h *= PRIME_MX2;
        h ^= h >>> 28;
        return h;
    }

    static long mul128Fold64(final long a, final long b) {
        return (a * b) ^ Math.unsignedMultiplyHigh(a, b);
    }

    private static long mix16(final byte[] in, final int i, final int s, final long seed) {
        return mul128Fold64(
            read64(in, i) ^ (read64(SECRET, s) + seed),
            read64(in, i + 8) ^ (read64(SECRET, s + 8) - seed));
    }

    private static long len0To16(final byte[] in, final int off, final int len, final long seed) {
        if (len > 8) {
            final long bitflip1 = (read64(SECRET, 24) ^ read64(SECRET, 32)) + seed;
            final long bitflip2 = (read64(SECRET, 40) ^ read64(SECRET, 48)) - seed;
            final long lo = read64(in, off) ^ bitflip1;
            final long hi = read64(in, off + len - 8) ^ bitflip2;
            final long acc = len + Long.reverseBytes(lo) + hi + mul128Fold64(lo, hi);
            return avalanche(acc);
        }
        if (len >= 4) {
            final long s = seed ^ ((long)Integer.reverseBytes((int)seed) << 32);
            final long in1 = read32(in, off);
            final long in2 = read32(in, off + len - 4);
            final long bitflip = (read64(SECRET, 8) ^ read64(SECRET, 16)) - s;
            final long input64 = in2 + (in1 << 32);
            return rrmxmx(input64 ^ bitflip, len);
        }
        if (len > 0) {
            final int c1 = in[off] & 0xFF;
            final int c2 = in[off + (len >> 1)] & 0xFF;
            final int c3 = in[off + len - 1] & 0xFF;
            final long combined = ((c1 << 16) | (c2 << 24) | c3 | (len << 8)) & 0xFFFFFFFFL;
            final long bitflip = (read32(SECRET, 0) ^ read32(SECRET, 4)) + seed;
            return xxh64Avalanche(combined ^ bitflip);
        }
        return xxh64Avalanche(seed ^ read64(SECRET, 56) ^ read64(SECRET, 64));
    }

    private static long len17To128(final byte[] in, final int off, final int len, final long seed) {
        long acc = len * PRIME64_1;
        final int end = off + len;
        if (len > 32) {
            if (len > 64) {
                if (len > 96) {
                    acc += mix16(in, off + 48, 96, seed);
                    acc += mix16(in, end - 64, 112, seed);
                }
                acc += mix16(in, off + 32, 64, seed);
                acc += mix16(in, end - 48, 80, seed);
            }
            acc += mix16(in, off + 16, 32, seed);
            acc += mix16(in, end - 32, 48, seed);
        }
        acc += mix16(in, off, 0, seed);
        acc += mix16(in, end - 16, 16, seed);
        return avalanche(acc);
    }

    private static long len129To240(final byte[] in, final int off, final int len, final long seed) {
        long acc = len * PRIME64_1;
        final int rounds = len / 16;
        for (int i = 0; i < 8; i++) {
            acc += mix16(in, off + 16 * i, 16 * i, seed);
        }
        acc = avalanche(acc);
        for (int i = 8; i < rounds; i++) {
            acc += mix16(in, off + 16 * i, 16 * (i - 8) + MIDSIZE_START_OFFSET, seed);
        }
        acc += mix16(in, off + len - 16, SECRET_SIZE_MIN - MIDSIZE_LAST_OFFSET, seed);
        return avalanche(acc);
    }

    private static long readSecret(final byte[] custom, final int i) {
        return read64(custom == null ? SECRET : custom, i);
    }

    private static byte[] customSecret(final long seed) {
        // Allocates: only for inputs longer than 240 bytes with a non-zero seed (not used on kvidx's hot paths).
        if (seed == 0) {
            return null;
        }
        final byte[] secret = new byte[SECRET_SIZE];
        for (int i = 0; i < SECRET_SIZE / 16; i++) {
            LONG_LE.set(secret, 16 * i, read64(SECRET, 16 * i) + seed);
            LONG_LE.set(secret, 16 * i + 8, read64(SECRET, 16 * i + 8) - seed);
        }
        return secret;
    }

    private static void accumulate512(
        final long[] acc, final byte[] in, final int i, final byte[] custom, final int s) {
        for (int lane = 0; lane < 8; lane++) {
            final long data = read64(in, i + 8 * lane);
            final long key = data ^ readSecret(custom, s + 8 * lane);
            acc[lane ^ 1] += data;
            acc[lane] += (key & 0xFFFFFFFFL) * (key >>> 32);
        }
    }

    private static void scramble(final long[] acc, final byte[] custom, final int s) {
        for (int lane = 0; lane < 8; lane++) {
            long a = acc[lane];
            a ^= a >>> 47;
            a ^= readSecret(custom, s + 8 * lane);
            a *= PRIME32_1;
            acc[lane] = a;
        }
    }

    private static void longAccumulate(
        final long[] acc, final byte[] in, final int off, final int len, final byte[] custom) {
        acc[0] = PRIME32_3;
        acc[1] = PRIME64_1;
        acc[2] = PRIME64_2;
        acc[3] = PRIME64_3;
        acc[4] = PRIME64_4;
        acc[5] = PRIME32_2;
        acc[6] = PRIME64_5;
        acc[7] = PRIME32_1;
        final int blocks = (len - 1) / BLOCK_LEN;
        for (int b = 0; b < blocks; b++) {
            final int base = off + b * BLOCK_LEN;
            for (int s = 0; s < STRIPES_PER_BLOCK; s++) {
                accumulate512(acc, in, base + s * STRIPE_LEN, custom, s * 8);
            }
            scramble(acc, custom, SECRET_SIZE - STRIPE_LEN);
        }
        final int stripes = ((len - 1) - BLOCK_LEN * blocks) / STRIPE_LEN;
        final int base = off + blocks * BLOCK_LEN;
        for (int s = 0; s < stripes; s++) {
            accumulate512(acc, in, base + s * STRIPE_LEN, custom, s * 8);
        }
        accumulate512(acc, in, off + len - STRIPE_LEN, custom, SECRET_SIZE - STRIPE_LEN - LAST_ACC_START);
    }

    private static long mergeAccs(final long[] acc, final byte[] custom, final int s, final long start) {
        long result = start;
        for (int i = 0; i < 4; i++) {
            result += mul128Fold64(
                acc[2 * i] ^ readSecret(custom, s + 16 * i),
                acc[2 * i + 1] ^ readSecret(custom, s + 16 * i + 8));
        }
        return avalanche(result);
    }

    private static long hashLong64(final byte[] in, final int off, final int len, final long seed) {
        // The eight accumulators live on the stack once escape analysis scalar-replaces this array.
        final long[] acc = new long[8];
        final byte[] custom = customSecret(seed);
        longAccumulate(acc, in, off, len, custom);
        return mergeAccs(acc, custom, MERGE_ACCS_START, len * PRIME64_1);
    }

    private static void len0To16x128(
        final byte[] in, final int off, final int len, final long seed, final long[] out, final int o) {
        if (len > 8) {
            final long bitflipl = (read64(SECRET, 32) ^ read64(SECRET, 40)) - seed;
            final long bitfliph = (read64(SECRET, 48) ^ read64(SECRET, 56)) + seed;
            final long inLo = read64(in, off);
            long inHi = read64(in, off + len - 8);
            final long x = inLo ^ inHi ^ bitflipl;
            long mLo = x * PRIME64_1;
            long mHi = Math.unsignedMultiplyHigh(x, PRIME64_1);
            mLo += (long)(len - 1) << 54;
            inHi ^= bitfliph;
            mHi += inHi + (inHi & 0xFFFFFFFFL) * (PRIME32_2 - 1);
            mLo ^= Long.reverseBytes(mHi);
            final long hLo = mLo * PRIME64_2;
            long hHi = Math.unsignedMultiplyHigh(mLo, PRIME64_2);
            hHi += mHi * PRIME64_2;
            out[o] = avalanche(hLo);
            out[o + 1] = avalanche(hHi);
        } else if (len >= 4) {
            final long s = seed ^ ((long)Integer.reverseBytes((int)seed) << 32);
            final long inLo = read32(in, off);
            final long inHi = read32(in, off + len - 4);
            final long in64 = inLo + (inHi << 32);
            final long bitflip = (read64(SECRET, 16) ^ read64(SECRET, 24)) + s;
            final long keyed = in64 ^ bitflip;
            final long mul = PRIME64_1 + ((long)len << 2);
            long mLo = keyed * mul;
            long mHi = Math.unsignedMultiplyHigh(keyed, mul);
            mHi += mLo << 1;
            mLo ^= mHi >>> 3;
            mLo ^= mLo >>> 35;
            mLo *= PRIME_MX2;
            mLo ^= mLo >>> 28;
            out[o] = mLo;
            out[o + 1] = avalanche(mHi);
        } else if (len > 0) {
            final int c1 = in[off] & 0xFF;
            final int c2 = in[off + (len >> 1)] & 0xFF;
            final int c3 = in[off + len - 1] & 0xFF;
            final int combinedl = (c1 << 16) | (c2 << 24) | c3 | (len << 8);
            final int combinedh = Integer.rotateLeft(Integer.reverseBytes(combinedl), 13);
            final long bitflipl = (read32(SECRET, 0) ^ read32(SECRET, 4)) + seed;
            final long bitfliph = (read32(SECRET, 8) ^ read32(SECRET, 12)) - seed;
            out[o] = xxh64Avalanche((combinedl & 0xFFFFFFFFL) ^ bitflipl);
            out[o + 1] = xxh64Avalanche((combinedh & 0xFFFFFFFFL) ^ bitfliph);
        } else {
            out[o] = xxh64Avalanche(seed ^ read64(SECRET, 64) ^ read64(SECRET, 72));
            out[o + 1] = xxh64Avalanche(seed ^ read64(SECRET, 80) ^ read64(SECRET, 88));
        }
    }

    /** Low half of XXH3's mix32B: depends only on the previous low half. */
    private static long mix32Lo(
        final long lo, final byte[] in, final int i1, final int i2, final int s, final long seed) {
        return (lo + mix16(in, i1, s, seed)) ^ (read64(in, i2) + read64(in, i2 + 8));
    }

    /** High half of XXH3's mix32B: depends only on the previous high half. */
    private static long mix32Hi(
        final long hi, final byte[] in, final int i1, final int i2, final int s, final long seed) {
        return (hi + mix16(in, i2, s + 16, seed)) ^ (read64(in, i1) + read64(in, i1 + 8));
    }

    private static void finish128(
        final long accLo, final long accHi, final int len, final long seed, final long[] out, final int o) {
        final long lo = accLo + accHi;
        final long hi = accLo * PRIME64_1 + accHi * PRIME64_4 + (len - seed) * PRIME64_2;
        out[o] = avalanche(lo);
        out[o + 1] = -avalanche(hi);
    }

    private static void len17To128x128(
        final byte[] in, final int off, final int len, final long seed, final long[] out, final int o) {
        long lo = len * PRIME64_1;
        long hi = 0L;
        final int end = off + len;
        if (len > 32) {
            if (len > 64) {
                if (len > 96) {
                    lo = mix32Lo(lo, in, off + 48, end - 64, 96, seed);
                    hi = mix32Hi(hi, in, off + 48, end - 64, 96, seed);
                }
                lo = mix32Lo(lo, in, off + 32, end - 48, 64, seed);
                hi = mix32Hi(hi, in, off + 32, end - 48, 64, seed);
            }
            lo = mix32Lo(lo, in, off + 16, end - 32, 32, seed);
            hi = mix32Hi(hi, in, off + 16, end - 32, 32, seed);
        }
        lo = mix32Lo(lo, in, off, end - 16, 0, seed);
        hi = mix32Hi(hi, in, off, end - 16, 0, seed);
        finish128(lo, hi, len, seed, out, o);
    }

    private static void len129To240x128(
        final byte[] in, final int off, final int len, final long seed, final long[] out, final int o) {
        long lo = len * PRIME64_1;
        long hi = 0L;
        final int rounds = len / 32;
        for (int i = 0; i < 4; i++) {
            lo = mix32Lo(lo, in, off + 32 * i, off + 32 * i + 16, 32 * i, seed);
            hi = mix32Hi(hi, in, off + 32 * i, off + 32 * i + 16, 32 * i, seed);
        }
        lo = avalanche(lo);
        hi = avalanche(hi);
        for (int i = 4; i < rounds; i++) {
            final int s = MIDSIZE_START_OFFSET + 32 * (i - 4);
            lo = mix32Lo(lo, in, off + 32 * i, off + 32 * i + 16, s, seed);
            hi = mix32Hi(hi, in, off + 32 * i, off + 32 * i + 16, s, seed);
        }
        final int s = SECRET_SIZE_MIN - MIDSIZE_LAST_OFFSET - 16;
        lo = mix32Lo(lo, in, off + len - 16, off + len - 32, s, -seed);
        hi = mix32Hi(hi, in, off + len - 16, off + len - 32, s, -seed);
        finish128(lo, hi, len, seed, out, o);
    }

    private static void hashLong128(
        final byte[] in, final int off, final int len, final long seed, final long[] out, final int o) {
        final long[] acc = new long[8];
        final byte[] custom = customSecret(seed);
        longAccumulate(acc, in, off, len, custom);
        out[o] = mergeAccs(acc, custom, MERGE_ACCS_START, len * PRIME64_1);
        out[o + 1] = mergeAccs(acc, custom, SECRET_SIZE - STRIPE_LEN - MERGE_ACCS_START, ~(len * PRIME64_2));
    }

    private static byte[] hex(final String s) {
        final byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte)Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }
}
