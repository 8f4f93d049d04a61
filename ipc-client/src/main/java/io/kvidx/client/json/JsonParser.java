package io.kvidx.client.json;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@link MiniJson}'s reader: one instance reads one document, iteratively (arrays and objects on an explicit stack),
 * within its {@link MiniJson.Limits} (grammar, value types and limits as {@link MiniJson} describes them).
 *
 * <p><b>Note:</b> not thread safe: one instance per document, used by the thread that made it.
 */
final class JsonParser {
    /** An array or object being read: one per open level of the reader's explicit stack. */
    private static final class Frame {
        private final Map<String, Object> object;
        private final List<Object> array;
        private String key;
        private int count;

        private Frame(final Map<String, Object> object, final List<Object> array) {
            this.object = object;
            this.array = array;
        }

        private Object value() {
            return object != null ? object : array;
        }
    }

    private final String s;
    private final MiniJson.Limits limits;
    private int i;

    JsonParser(final String s, final MiniJson.Limits limits) {
        this.s = s;
        this.limits = limits;
    }

    /**
     * Reads the whole text: one value, whitespace around it, nothing after it. The text's length was checked.
     *
     * @return its value.
     */
    Object parse() {
        ws();
        final Object v = document();
        ws();
        if (i != s.length()) {
            throw error("trailing characters");
        }
        return v;
    }

    private IllegalArgumentException error(final String what) {
        return new IllegalArgumentException("invalid JSON at offset " + i + ": " + what);
    }

    private void ws() {
        while (i < s.length()) {
            final char c = s.charAt(i);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                i++;
            } else {
                break;
            }
        }
    }

    /** Reads one value, arrays and objects on an explicit stack of at most {@link MiniJson.Limits#maxDepth()}. */
    private Object document() {
        final int maxDepth = limits.maxDepth();
        final int maxElements = limits.maxElements();
        Frame[] stack = new Frame[Math.min(maxDepth, 16)];
        int depth = 0;
        while (true) {
            // At a value, whitespace skipped.
            if (i >= s.length()) {
                throw error("unexpected end");
            }
            final char c = s.charAt(i);
            Object v;
            if (c == '{' || c == '[') {
                if (depth == maxDepth) {
                    throw new JsonLimitException(JsonLimitException.Limit.DEPTH, maxDepth, i);
                }
                i++;
                ws();
                final boolean object = c == '{';
                if (i < s.length() && s.charAt(i) == (object ? '}' : ']')) {
                    i++;
                    v = object ? new LinkedHashMap<String, Object>() : new ArrayList<Object>();
                } else {
                    if (depth == stack.length) {
                        stack = Arrays.copyOf(stack, Math.min(maxDepth, 2 * depth));
                    }
                    final Frame f = object
                        ? new Frame(new LinkedHashMap<>(), null)
                        : new Frame(null, new ArrayList<>());
                    if (object) {
                        f.key = memberName();
                    }
                    stack[depth++] = f;
                    continue;
                }
            } else {
                v = scalar(c);
            }
            // Add the value to the innermost open array or object; close those that end after it.
            while (true) {
                if (depth == 0) {
                    return v;
                }
                final Frame f = stack[depth - 1];
                if (f.object != null) {
                    f.object.put(f.key, v);
                } else {
                    f.array.add(v);
                }
                f.count++;
                ws();
                if (i >= s.length()) {
                    throw error(f.object != null ? "unterminated object" : "unterminated array");
                }
                final char d = s.charAt(i);
                if (d == ',') {
                    if (f.count == maxElements) {
                        throw new JsonLimitException(JsonLimitException.Limit.ELEMENTS, maxElements, i);
                    }
                    i++;
                    ws();
                    if (f.object != null) {
                        f.key = memberName();
                    }
                    break;
                }
                if (d != (f.object != null ? '}' : ']')) {
                    throw error(f.object != null ? "expected ',' or '}'" : "expected ',' or ']'");
                }
                i++;
                v = f.value();
                stack[--depth] = null;
            }
        }
    }

    /** Reads {@code "name" :} and the whitespace after it. */
    private String memberName() {
        if (i >= s.length() || s.charAt(i) != '"') {
            throw error("expected a member name");
        }
        final String key = string();
        ws();
        if (i >= s.length() || s.charAt(i) != ':') {
            throw error("expected ':'");
        }
        i++;
        ws();
        return key;
    }

    private Object scalar(final char c) {
        switch (c) {
            case '"':
                return string();
            case 't':
                literal("true");
                return Boolean.TRUE;
            case 'f':
                literal("false");
                return Boolean.FALSE;
            case 'n':
                literal("null");
                return null;
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected '" + c + "'");
        }
    }

    private void literal(final String word) {
        if (!s.startsWith(word, i)) {
            throw error("expected " + word);
        }
        i += word.length();
    }

    private String string() {
        final int max = limits.maxStringChars();
        final int start = i;
        i++;
        // Fast path: no escape, one substring.
        final int from = i;
        while (i < s.length()) {
            final char c = s.charAt(i);
            if (c == '"' || c == '\\' || c < 0x20) {
                break;
            }
            i++;
        }
        if (i - from > max) {
            throw new JsonLimitException(JsonLimitException.Limit.STRING_CHARS, max, start);
        }
        if (i < s.length() && s.charAt(i) == '"') {
            return s.substring(from, i++);
        }
        final StringBuilder sb = new StringBuilder(i - from + 16).append(s, from, i);
        while (true) {
            if (i >= s.length()) {
                throw error("unterminated string");
            }
            final char c = s.charAt(i++);
            if (c == '"') {
                return sb.toString();
            }
            if (sb.length() == max) {
                throw new JsonLimitException(JsonLimitException.Limit.STRING_CHARS, max, start);
            }
            if (c < 0x20) {
                i--;
                throw error("control character in string");
            }
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            if (i >= s.length()) {
                throw error("unterminated escape");
            }
            final char e = s.charAt(i++);
            switch (e) {
                case '"', '\\', '/' -> sb.append(e);
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                case 'u' -> sb.append(hex4());
                default -> throw error("bad escape \\" + e);
            }
        }
    }

    private char hex4() {
        if (i + 4 > s.length()) {
            throw error("short \\u escape");
        }
        int v = 0;
        for (int k = 0; k < 4; k++) {
            final char h = s.charAt(i + k);
            final int d;
            if (h >= '0' && h <= '9') {
                d = h - '0';
            } else if (h >= 'a' && h <= 'f') {
                d = h - 'a' + 10;
            } else if (h >= 'A' && h <= 'F') {
                d = h - 'A' + 10;
            } else {
                throw error("bad \\u escape");
            }
            v = (v << 4) | d;
        }
        i += 4;
        return (char) v;
    }

    /** RFC 8259's {@code number}: {@code -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?}. */
    private Object number() {
        final int start = i;
        if (s.charAt(i) == '-') {
            i++;
        }
        if (i < s.length() && s.charAt(i) == '0') {
            i++;
        } else if (digits(start) == 0) {
            throw error("bad number: expected a digit");
        }
        boolean integral = true;
        if (i < s.length() && s.charAt(i) == '.') {
            integral = false;
            i++;
            if (digits(start) == 0) {
                throw error("bad number: expected a digit after '.'");
            }
        }
        if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            integral = false;
            i++;
            if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
                i++;
            }
            if (digits(start) == 0) {
                throw error("bad number: expected a digit in the exponent");
            }
        }
        final int max = limits.maxNumberChars();
        if (i - start > max) {
            throw new JsonLimitException(JsonLimitException.Limit.NUMBER_CHARS, max, start);
        }
        final String text = s.substring(start, i);
        if (!integral) {
            return Double.parseDouble(text);
        }
        try {
            return Long.parseLong(text);
        } catch (final NumberFormatException ex) {
            // Beyond 64 bits: every digit kept, as Python's json does (at most maxNumberChars of them).
            return new BigInteger(text);
        }
    }

    /** Skips a run of digits, no further than the number-length limit allows; returns how many. */
    private int digits(final int start) {
        final int max = limits.maxNumberChars();
        final int from = i;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            if (i - start == max) {
                throw new JsonLimitException(JsonLimitException.Limit.NUMBER_CHARS, max, start);
            }
            i++;
        }
        return i - from;
    }
}
