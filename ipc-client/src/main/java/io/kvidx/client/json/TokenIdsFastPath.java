package io.kvidx.client.json;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The one part of a request body that grows with the prompt, read without the general parser: a top-level array of
 * token ids in a JSON object (the daemon's {@code "token_ids"}, the router's {@code "prompt"}), scanned for its key (outside strings, at depth 1) and read as plain
 * decimal integers in [0, 2^31) separated by commas and JSON whitespace. The body handed on to jackson-core holds
 * {@code []} in its place, so jackson still validates the whole document and reads every other field; the scan
 * only ever accepts what jackson would read as the same integers.
 *
 * <p>Anything this scan does not recognise exactly — a key it cannot find, an escape in a key, a sign, a leading
 * zero, a fraction or exponent, a number past 2^31 - 1, a nested value — makes it give up (return -1), and the body
 * goes to jackson unchanged, which reads it or names the fault. Measured: jackson-core spends about 20 ns per token
 * id (tokenising and converting); this scan 2-3 ns on the hosts of ADR 0013. Reading a word at a time where it can
 * ({@link #read}) took a 2,500-id body from 15.6 to 12.1 µs on the 2-vCPU development VM (compact; spaced 17.0 to
 * 14.7 µs; {@code TokenIdsBenchmark}, same run, 2026-11-29). Used by the daemon's HTTP API and by
 * {@code kvidx router}, each with a JSON parser of its own for the rest of the body.
 *
 * <p><b>Note:</b> one per parsing thread; the caller owns the arrays.
 */
public final class TokenIdsFastPath {
    private static final VarHandle LITTLE_ENDIAN_LONG =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long HIGH_NIBBLES = 0xF0F0F0F0F0F0F0F0L;
    private static final long ZEROS = 0x3030303030303030L;
    private static final long SIXES = 0x0606060606060606L;

    private final byte[] key;
    private int count;
    private byte[] rest = new byte[4096];

    /**
     * @param key the top-level key whose array value holds the token ids (ASCII, no escapes).
     */
    public TokenIdsFastPath(final String key) {
        this.key = key.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    }

    /**
     * @param b   the body.
     * @param len its length.
     * @return the offset of the {@code [} opening the top-level {@code token_ids} value, or -1 when there is none
     * the scan can see.
     */
    public int find(final byte[] b, final int len) {
        int depth = 0;
        int i = 0;
        while (i < len) {
            final byte c = b[i];
            if (c == '"') {
                final int start = i + 1;
                int j = start;
                while (j < len && b[j] != '"') {
                    if (b[j] == '\\') {
                        j++; // the escaped character cannot end the string
                    }
                    j++;
                }
                if (j >= len) {
                    return -1;
                }
                if (depth == 1 && j - start == key.length && java.util.Arrays.equals(b, start, j, key, 0, key.length)) {
                    int k = skipSpace(b, j + 1, len);
                    if (k < len && b[k] == ':') {
                        k = skipSpace(b, k + 1, len);
                        return k < len && b[k] == '[' ? k : -1;
                    }
                }
                i = j + 1;
            } else {
                if (c == '{' || c == '[') {
                    depth++;
                } else if (c == '}' || c == ']') {
                    depth--;
                }
                i++;
            }
        }
        return -1;
    }

    /**
     * Reads the array that opens at {@code open} into {@code out}.
     *
     * <p>A number of up to 7 digits with 8 bytes of the body from its start is read a word at a time: one load, a
     * mask of its digit bytes, and three multiply-adds for the value (token ids have 5 or 6 digits); a longer
     * number, or one at the body's end, is read a byte at a time. Both accept exactly the same text.
     *
     * @param b    the body.
     * @param open the offset of its {@code [}.
     * @param len  the body's length.
     * @param out  receives the values (at most {@code (len - open) / 2 + 1}; more than it holds: the scan gives up).
     * @return the offset just past the closing {@code ]}, or -1 when the array is not one the scan reads exactly.
     */
    public int read(final byte[] b, final int open, final int len, final int[] out) {
        int i = skipSpace(b, open + 1, len);
        int n = 0;
        if (i < len && b[i] == ']') {
            count = 0;
            return i + 1;
        }
        while (i < len) {
            final int first = i;
            long v = 0;
            if (len - i >= Long.BYTES) {
                final long word = (long) LITTLE_ENDIAN_LONG.get(b, i);
                final int digits = leadingDigits(word);
                if (digits > 0 && digits < Long.BYTES) {
                    if ((digits > 1 && (word & 0xFF) == '0') || n == out.length) {
                        return -1;
                    }
                    out[n++] = (int) digitsValue(word, digits);
                    // The byte after the digits is in the same word: a comma (and one space after it, if the word
                    // holds it) moves on to the next number without reading the body again.
                    final int shift = digits << 3;
                    final long after = word >>> shift;
                    if ((after & 0xFF) == ',') {
                        i += digits + 1;
                        if (digits < Long.BYTES - 2 && (after >>> 8 & 0xFF) == ' ') {
                            i++;
                        }
                        continue;
                    }
                    i += digits;
                } else if (digits == 0 && isSpace(b[i])) {
                    // More whitespace before a number than the one space the comma's word could skip.
                    i = skipSpace(b, i, len);
                    continue;
                } else {
                    i = -1;
                }
            } else {
                i = -1;
            }
            if (i < 0) {
                // A number of 8 digits or more, or one near the body's end (maybe after whitespace): a byte at a
                // time.
                final int start = skipSpace(b, first, len);
                i = start;
                while (i < len && b[i] >= '0' && b[i] <= '9') {
                    v = v * 10 + (b[i] - '0');
                    if (v > Integer.MAX_VALUE) {
                        return -1;
                    }
                    i++;
                }
                if (i == start || (b[start] == '0' && i - start > 1) || n == out.length) {
                    return -1;
                }
                out[n++] = (int) v;
            }
            i = skipSpace(b, i, len);
            if (i >= len) {
                return -1;
            }
            if (b[i] == ']') {
                count = n;
                return i + 1;
            }
            if (b[i] != ',') {
                return -1;
            }
            i = skipSpace(b, i + 1, len);
        }
        return -1;
    }

    /**
     * The number of ASCII digits {@code word}'s bytes start with, in memory order (little-endian: its low byte
     * first); 8 when all are digits. A byte is a digit when its high nibble is 3 and stays 3 with 6 added
     * (0x30..0x39). The addition carries only out of a byte of 0xFA or more, which is not a digit, and only into the
     * bytes after it, which are not counted.
     */
    static int leadingDigits(final long word) {
        final long notDigit = ((word & HIGH_NIBBLES) ^ ZEROS) | (((word + SIXES) & HIGH_NIBBLES) ^ ZEROS);
        return Long.numberOfTrailingZeros(notDigit) >>> 3;
    }

    /**
     * The value of the first {@code digits} (1..7) bytes of {@code word}, ASCII digits, most significant first:
     * moved to the top of the word (the bytes below read as leading zeros) and combined in pairs, quads and then
     * eights by three multiply-adds.
     */
    static long digitsValue(final long word, final int digits) {
        long x = ((word - ZEROS) & ((1L << (digits << 3)) - 1)) << ((Long.BYTES - digits) << 3);
        x = (x * 10 + (x >>> 8)) & 0x00FF00FF00FF00FFL;
        x = (x * 100 + (x >>> 16)) & 0x0000FFFF0000FFFFL;
        return (x * 10000 + (x >>> 32)) & 0xFFFFFFFFL;
    }

    /**
     * Finds the array ({@link #find}), reads it into {@code out} ({@link #read}), and writes the body with {@code []}
     * in its place into {@link #rest()}, for a general parser to read the rest of the body.
     *
     * @param b   the body.
     * @param len its length.
     * @param out receives the values (room for {@code len / 2 + 1} reads any array the body can hold).
     * @return the length of the rewritten body in {@link #rest()}, or -1 when there is no array the scan reads
     * exactly (then the body goes to the general parser whole).
     */
    public int splice(final byte[] b, final int len, final int[] out) {
        final int open = find(b, len);
        if (open < 0) {
            return -1;
        }
        final int end = read(b, open, len, out);
        if (end < 0) {
            return -1;
        }
        if (rest.length < len) {
            rest = new byte[Math.max(len, 2 * rest.length)];
        }
        System.arraycopy(b, 0, rest, 0, open);
        rest[open] = '[';
        rest[open + 1] = ']';
        System.arraycopy(b, end, rest, open + 2, len - end);
        return open + 2 + len - end;
    }

    /**
     * @return the body the last successful {@link #splice} rewrote (valid up to the length it returned).
     */
    public byte[] rest() {
        return rest;
    }

    /**
     * @return values the last successful {@link #read} wrote.
     */
    public int count() {
        return count;
    }

    private static int skipSpace(final byte[] b, final int from, final int len) {
        int i = from;
        while (i < len && isSpace(b[i])) {
            i++;
        }
        return i;
    }

    private static boolean isSpace(final byte c) {
        return c == ' ' || c == '\n' || c == '\r' || c == '\t';
    }
}
