package io.kvidx.client.keys;

/**
 * UTF-8 encoding of a {@link CharSequence} into a caller's array, without allocation, byte for byte as
 * {@code String.getBytes(StandardCharsets.UTF_8)}: an unpaired surrogate becomes {@code '?'}.
 */
final class Utf8 {
    private Utf8() {
    }

    /**
     * @param s characters.
     * @return their UTF-8 length in bytes.
     */
    static int length(final CharSequence s) {
        final int n = s.length();
        int length = 0;
        for (int i = 0; i < n; i++) {
            final char c = s.charAt(i);
            if (c < 0x80) {
                length++;
            } else if (c < 0x800) {
                length += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                length += 4;
                i++;
            } else if (Character.isSurrogate(c)) {
                length++;
            } else {
                length += 3;
            }
        }
        return length;
    }

    /**
     * Writes the UTF-8 bytes of {@code s} at {@code out[p]}; the caller made room for {@link #length(CharSequence)}.
     *
     * @param s   characters.
     * @param out destination.
     * @param p   first byte.
     * @return the position after the last byte written.
     */
    static int encode(final CharSequence s, final byte[] out, final int p) {
        final int n = s.length();
        int q = p;
        for (int i = 0; i < n; i++) {
            final char c = s.charAt(i);
            if (c < 0x80) {
                out[q++] = (byte)c;
            } else if (c < 0x800) {
                out[q++] = (byte)(0xC0 | (c >>> 6));
                out[q++] = (byte)(0x80 | (c & 0x3F));
            } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                final int cp = Character.toCodePoint(c, s.charAt(++i));
                out[q++] = (byte)(0xF0 | (cp >>> 18));
                out[q++] = (byte)(0x80 | ((cp >>> 12) & 0x3F));
                out[q++] = (byte)(0x80 | ((cp >>> 6) & 0x3F));
                out[q++] = (byte)(0x80 | (cp & 0x3F));
            } else if (Character.isSurrogate(c)) {
                out[q++] = '?';
            } else {
                out[q++] = (byte)(0xE0 | (c >>> 12));
                out[q++] = (byte)(0x80 | ((c >>> 6) & 0x3F));
                out[q++] = (byte)(0x80 | (c & 0x3F));
            }
        }
        return q;
    }
}
