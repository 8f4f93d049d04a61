package io.kvidx.client.keys.vllm;

import java.util.Arrays;

/**
 * A growable byte buffer the encoders write into and reuse between calls.
 *
 * <p><b>Note:</b> not thread safe.
 */
final class ByteSink {
    private byte[] bytes;
    private int length;

    ByteSink(final int initialCapacity) {
        bytes = new byte[Math.max(16, initialCapacity)];
    }

    byte[] array() {
        return bytes;
    }

    int length() {
        return length;
    }

    void reset() {
        length = 0;
    }

    void ensure(final int extra) {
        final int needed = length + extra;
        if (needed < 0) {
            throw new IllegalArgumentException("encoding larger than 2 GiB");
        }
        if (needed > bytes.length) {
            bytes = Arrays.copyOf(bytes, Math.max(needed, Math.min(Integer.MAX_VALUE - 8, bytes.length * 2)));
        }
    }

    void put(final int b) {
        ensure(1);
        bytes[length++] = (byte)b;
    }

    void put(final byte[] src, final int offset, final int count) {
        ensure(count);
        System.arraycopy(src, offset, bytes, length, count);
        length += count;
    }

    void putLe(final long value, final int count) {
        ensure(count);
        for (int i = 0; i < count; i++) {
            bytes[length++] = (byte)(value >>> (8 * i));
        }
    }

    void putBe(final long value, final int count) {
        ensure(count);
        for (int i = count - 1; i >= 0; i--) {
            bytes[length++] = (byte)(value >>> (8 * i));
        }
    }

    /**
     * Appends the UTF-8 encoding of s; lone surrogates are encoded as three bytes each (Python's
     * "surrogatepass") when allowed, otherwise rejected.
     */
    void putUtf8(final String s, final boolean surrogatePass) {
        ensure(utf8Length(s, surrogatePass));
        int p = length;
        final byte[] b = bytes;
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            if (c < 0x80) {
                b[p++] = (byte)c;
            } else if (c < 0x800) {
                b[p++] = (byte)(0xC0 | (c >> 6));
                b[p++] = (byte)(0x80 | (c & 0x3F));
            } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
                && Character.isLowSurrogate(s.charAt(i + 1))) {
                final int cp = Character.toCodePoint(c, s.charAt(++i));
                b[p++] = (byte)(0xF0 | (cp >> 18));
                b[p++] = (byte)(0x80 | ((cp >> 12) & 0x3F));
                b[p++] = (byte)(0x80 | ((cp >> 6) & 0x3F));
                b[p++] = (byte)(0x80 | (cp & 0x3F));
            } else {
                b[p++] = (byte)(0xE0 | (c >> 12));
                b[p++] = (byte)(0x80 | ((c >> 6) & 0x3F));
                b[p++] = (byte)(0x80 | (c & 0x3F));
            }
        }
        length = p;
    }

    /** Length of s in UTF-8; throws on a lone surrogate unless surrogatePass. */
    static int utf8Length(final String s, final boolean surrogatePass) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            if (c < 0x80) {
                n += 1;
            } else if (c < 0x800) {
                n += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
                && Character.isLowSurrogate(s.charAt(i + 1))) {
                n += 4;
                i++;
            } else {
                if (Character.isSurrogate(c) && !surrogatePass) {
                    throw new IllegalArgumentException("string holds a lone surrogate at index " + i);
                }
                n += 3;
            }
        }
        return n;
    }
}
