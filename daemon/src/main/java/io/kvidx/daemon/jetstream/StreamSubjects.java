package io.kvidx.daemon.jetstream;

import java.nio.charset.StandardCharsets;

/**
 * The subjects the relay publishes on: {@code <prefix>.<model>.<pod>} (ADR 0024). A model name or pod id may hold
 * bytes a subject token cannot ({@code .}, {@code *}, {@code >}, whitespace) and others a reader would confuse
 * ({@code :}, {@code /}): each is encoded into one token that keeps {@code A-Z a-z 0-9 - _} and writes every other
 * UTF-8 byte as {@code ~} and two upper-case hex digits. A missing model is the token {@code ~}, which no encoding
 * produces. The encoding is injective, so a subscriber may filter one model ({@code <prefix>.<model>.>}) or one pod.
 *
 * <p><b>Note:</b> stateless; thread safe.
 */
public final class StreamSubjects {
    /** The token of a missing model. */
    public static final String NO_MODEL = "~";
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private StreamSubjects() {
    }

    /**
     * @param prefix the subject prefix (dot-separated tokens, checked by the configuration).
     * @param model  the pod's model, or null.
     * @param podId  the pod id.
     * @return the subject of the pod's events.
     */
    public static String subject(final String prefix, final String model, final String podId) {
        return prefix + '.' + (model == null ? NO_MODEL : token(model)) + '.' + token(podId);
    }

    /**
     * @param prefix the subject prefix.
     * @return the stream's subject filter: every subject under the prefix.
     */
    public static String filter(final String prefix) {
        return prefix + ".>";
    }

    /**
     * @param text a model name or pod id (not empty).
     * @return it as one subject token.
     */
    public static String token(final String text) {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        final StringBuilder sb = new StringBuilder(bytes.length + 8);
        for (final byte b : bytes) {
            final int c = b & 0xFF;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
                sb.append((char) c);
            } else {
                sb.append('~').append(HEX[c >>> 4]).append(HEX[c & 0xF]);
            }
        }
        return sb.toString();
    }

    /**
     * @param token a token {@link #token} made.
     * @return the text it encodes.
     * @throws IllegalArgumentException when the token is not one {@link #token} makes.
     */
    public static String decode(final String token) {
        final byte[] out = new byte[token.length()];
        int n = 0;
        for (int i = 0; i < token.length(); i++) {
            final char c = token.charAt(i);
            if (c == '~') {
                if (i + 2 >= token.length()) {
                    throw new IllegalArgumentException("truncated escape in subject token: " + token);
                }
                final int hi = Character.digit(token.charAt(i + 1), 16);
                final int lo = Character.digit(token.charAt(i + 2), 16);
                if (hi < 0 || lo < 0 || Character.isLowerCase(token.charAt(i + 1))
                    || Character.isLowerCase(token.charAt(i + 2))) {
                    throw new IllegalArgumentException("bad escape in subject token: " + token);
                }
                out[n++] = (byte) (hi << 4 | lo);
                i += 2;
            } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
                || c == '_') {
                out[n++] = (byte) c;
            } else {
                throw new IllegalArgumentException("character '" + c + "' is never in a subject token: " + token);
            }
        }
        return new String(out, 0, n, StandardCharsets.UTF_8);
    }
}
