package io.kvidx.client.json;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The token-id scan reads a word at a time where it can: it must accept exactly the text, and read exactly the
 * values, that the same scan written a byte at a time does ({@link #plainRead}, the scan as first written), on
 * well-formed arrays of every digit count and on arrays with bytes mutated into anything (signs, leading zeros,
 * fractions, bytes of 0xFA and up whose digit test carries into the next byte), at every distance from the body's end.
 */
class TokenIdsFastPathTest {
    /** Bytes a mutation writes: JSON's own, digits' neighbours in ASCII, and bytes whose +6 carries. */
    private static final byte[] MUTATIONS = "0123456789 ,]-+.eE/:\t\n\r[{\"".getBytes(StandardCharsets.US_ASCII);

    /** The reference: the byte-at-a-time scan, same contract as {@link TokenIdsFastPath#read}. */
    private static int plainRead(final byte[] b, final int open, final int len, final int[] out, final int[] count) {
        int i = skip(b, open + 1, len);
        int n = 0;
        if (i < len && b[i] == ']') {
            count[0] = 0;
            return i + 1;
        }
        while (i < len) {
            final int first = i;
            long v = 0;
            while (i < len && b[i] >= '0' && b[i] <= '9') {
                v = v * 10 + (b[i] - '0');
                if (v > Integer.MAX_VALUE) {
                    return -1;
                }
                i++;
            }
            if (i == first || (b[first] == '0' && i - first > 1) || n == out.length) {
                return -1;
            }
            out[n++] = (int) v;
            i = skip(b, i, len);
            if (i >= len) {
                return -1;
            }
            if (b[i] == ']') {
                count[0] = n;
                return i + 1;
            }
            if (b[i] != ',') {
                return -1;
            }
            i = skip(b, i + 1, len);
        }
        return -1;
    }

    private static int skip(final byte[] b, final int from, final int len) {
        int i = from;
        while (i < len && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')) {
            i++;
        }
        return i;
    }

    /** An array of {@code n} values of 1 to 10 digits, separated compactly or with JSON whitespace. */
    private static String array(final Random random, final int n, final boolean spaced) {
        final StringBuilder sb = new StringBuilder("[");
        for (int k = 0; k < n; k++) {
            if (k > 0) {
                sb.append(spaced ? ", " : ",");
                if (spaced && random.nextInt(8) == 0) {
                    sb.append("\n\t ");
                }
            }
            final int digits = 1 + random.nextInt(10);
            final long bound = digits == 10 ? Integer.MAX_VALUE + 1L : (long) Math.pow(10, digits);
            final long low = digits == 1 ? 0 : (long) Math.pow(10, digits - 1);
            sb.append(low + (long) (random.nextDouble() * (bound - low)));
        }
        return sb.append(spaced ? " ]" : "]").toString();
    }

    private static void agrees(final byte[] b, final int len, final int outLength) {
        final TokenIdsFastPath scan = new TokenIdsFastPath("prompt");
        final int[] out = new int[outLength];
        final int[] expected = new int[outLength];
        final int[] count = {-1};
        final int want = plainRead(b, 0, len, expected, count);
        final int got = scan.read(b, 0, len, out);
        assertEquals(want, got, () -> new String(b, 0, len, StandardCharsets.ISO_8859_1));
        if (want >= 0) {
            assertEquals(count[0], scan.count());
            assertArrayEquals(Arrays.copyOf(expected, count[0]), Arrays.copyOf(out, scan.count()));
        }
    }

    @Property(tries = 400)
    void readsWellFormedArraysAsTheByteScanDoes(@ForAll @IntRange(min = 0, max = 64) final int n,
        @ForAll final boolean spaced, @ForAll final long seed, @ForAll @IntRange(min = 0, max = 9) final int tail) {
        final Random random = new Random(seed);
        // Some bytes after the array (the rest of the body), or none: the word reads meet the body's end everywhere.
        final byte[] b = (array(random, n, spaced) + "}".repeat(tail)).getBytes(StandardCharsets.US_ASCII);
        agrees(b, b.length, n + 1);
        final TokenIdsFastPath scan = new TokenIdsFastPath("prompt");
        final int[] out = new int[n + 1];
        assertEquals(b.length - tail, scan.read(b, 0, b.length, out), "a well-formed array is read to its end");
        assertEquals(n, scan.count());
    }

    @Property(tries = 3000)
    void refusesAndAcceptsWhatTheByteScanDoesWhenBytesAreMutated(@ForAll @IntRange(min = 1, max = 24) final int n,
        @ForAll final boolean spaced, @ForAll final long seed, @ForAll @IntRange(min = 1, max = 4) final int changes,
        @ForAll @IntRange(min = 0, max = 16) final int cut) {
        final Random random = new Random(seed);
        final byte[] b = array(random, n, spaced).getBytes(StandardCharsets.US_ASCII);
        for (int k = 0; k < changes; k++) {
            final int draw = random.nextInt(4);
            final byte value = draw < 2 ? MUTATIONS[random.nextInt(MUTATIONS.length)]
                : draw == 2 ? (byte) (0xF0 + random.nextInt(16)) : (byte) random.nextInt(256);
            b[1 + random.nextInt(b.length - 1)] = value;
        }
        // The body may also end anywhere inside the array; an out array too small makes both give up.
        final int len = Math.max(1, b.length - cut);
        agrees(b, len, n + 1);
        agrees(b, len, Math.max(1, n / 2));
    }

    @Test
    void readsTheEdgesOfTheWordPath() {
        // 7 digits fit a word with a delimiter; 8 to 10 go byte by byte; 2^31 - 1 is the largest; 2^31 is refused.
        final String text = "[1,12,1234567,12345678,123456789,2147483647,0,9999999]    ";
        final byte[] b = text.getBytes(StandardCharsets.US_ASCII);
        final TokenIdsFastPath scan = new TokenIdsFastPath("prompt");
        final int[] out = new int[16];
        assertEquals(text.indexOf(']') + 1, scan.read(b, 0, b.length, out));
        assertArrayEquals(new int[] {1, 12, 1234567, 12345678, 123456789, Integer.MAX_VALUE, 0, 9999999},
            Arrays.copyOf(out, scan.count()));
        for (final String refused : new String[] {"[2147483648]      ", "[0123,1]        ", "[01]        ",
            "[1,-2]          ", "[1.5]           ", "[1e3]           ", "[1,]            ", "[1 2]           ",
            "[12\u00fa4]          "}) {
            final byte[] r = refused.getBytes(StandardCharsets.ISO_8859_1);
            assertEquals(-1, scan.read(r, 0, r.length, out), refused);
        }
    }

    @Test
    void digitMaskAndValuePinnedOnWords() {
        // Little-endian: the first byte of the text is the word's low byte.
        assertEquals(3, TokenIdsFastPath.leadingDigits(word("123,4567")));
        assertEquals(0, TokenIdsFastPath.leadingDigits(word(",1234567")));
        assertEquals(8, TokenIdsFastPath.leadingDigits(word("12345678")));
        assertEquals(7, TokenIdsFastPath.leadingDigits(word("1234567:")));
        assertEquals(7, TokenIdsFastPath.leadingDigits(word("1234567/")));
        assertEquals(1234567, TokenIdsFastPath.digitsValue(word("1234567]"), 7));
        assertEquals(90210, TokenIdsFastPath.digitsValue(word("90210, 1"), 5));
        assertEquals(7, TokenIdsFastPath.digitsValue(word("7]}\n\n\n\n\n"), 1));
        // A byte of 0xFA and up carries in the +6 test; only bytes after it are touched, and they are not counted.
        final long carry = word("12") | 0xFFL << 16 | (long) '9' << 24;
        assertEquals(2, TokenIdsFastPath.leadingDigits(carry));
    }

    private static long word(final String eight) {
        final byte[] b = Arrays.copyOf(eight.getBytes(StandardCharsets.ISO_8859_1), 8);
        long w = 0;
        for (int k = 7; k >= 0; k--) {
            w = w << 8 | (b[k] & 0xFF);
        }
        return w;
    }
}
