package io.kvidx.client.json;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * kvidx's JSON reader and writer (RFC 8259), JDK only: the control-plane documents the decision layer reads (LMCache's
 * answers, engine responses), chat-completion request bodies and tokenizer configurations (kvidx-tokenize), and
 * trace lines (bench).
 *
 * <p>The reader accepts exactly RFC 8259's grammar (no {@code NaN}, comments, trailing commas, leading zeros, a
 * {@code +} sign or a bare {@code .5}), any value at the top, whitespace around it. Objects become {@link Map}s (keys
 * in document order, a repeated key keeps its last value), arrays {@link List}s, numbers {@link Long} when integral
 * and in range, {@link BigInteger} when integral beyond 64 bits (every digit kept, as Python's json does), else
 * {@link Double} (beyond its range: infinite, as Python), plus {@link String}, {@link Boolean} and null.
 *
 * <p>The reader is iterative (no recursion, so no {@link StackOverflowError}) and bounded by {@link Limits}: the
 * document's length, nesting depth, elements per array or object, string and number-literal lengths. A document
 * over a limit is refused with a {@link JsonLimitException} naming the limit and the offset; any other invalid
 * document with an {@link IllegalArgumentException}. Nothing else escapes for any input: no
 * {@link NumberFormatException}, and the memory a document takes is bounded by {@link Limits#maxInputChars()}.
 * {@link #parse(String)} uses {@link Limits#DEFAULT}, sized for the largest trusted document kvidx reads (a
 * tokenizer.json); callers reading a client's body pass tighter ones to {@link #parse(String, Limits)}.
 *
 * <p>Cold path: allocates freely.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class MiniJson {
    /**
     * What {@link #parse(String, Limits)} accepts; each limit at least 1. A document over one is refused with a
     * {@link JsonLimitException}.
     *
     * @param maxInputChars  the document's length, in chars.
     * @param maxDepth       arrays and objects open at once ({@code []} is depth 1).
     * @param maxElements    elements of one array, members of one object.
     * @param maxStringChars one string, a member name or a value, in chars once its escapes are decoded.
     * @param maxNumberChars one number literal, in chars (sign, digits, fraction and exponent).
     */
    public record Limits(int maxInputChars, int maxDepth, int maxElements, int maxStringChars, int maxNumberChars) {
        /** Default {@link #maxInputChars()}: 64 Mi chars, above the largest tokenizer.json (about 33 MB). */
        public static final int MAX_INPUT_CHARS_DEFAULT = 64 << 20;
        /** Default {@link #maxDepth()}: 64 levels (tokenizer.json and chat bodies use under 10). */
        public static final int MAX_DEPTH_DEFAULT = 64;
        /** Default {@link #maxElements()}: 1 Mi (a tokenizer.json vocabulary holds up to about 260 Ki entries). */
        public static final int MAX_ELEMENTS_DEFAULT = 1 << 20;
        /** Default {@link #maxStringChars()}: 8 Mi chars. */
        public static final int MAX_STRING_CHARS_DEFAULT = 8 << 20;
        /** Default {@link #maxNumberChars()}: 64 chars (a double needs 24, a 64-bit integer 20). */
        public static final int MAX_NUMBER_CHARS_DEFAULT = 64;

        /** Every limit at its default. */
        public static final Limits DEFAULT = new Limits(MAX_INPUT_CHARS_DEFAULT, MAX_DEPTH_DEFAULT,
            MAX_ELEMENTS_DEFAULT, MAX_STRING_CHARS_DEFAULT, MAX_NUMBER_CHARS_DEFAULT);

        /**
         * @throws IllegalArgumentException when a limit is below 1.
         */
        public Limits {
            positive("maxInputChars", maxInputChars);
            positive("maxDepth", maxDepth);
            positive("maxElements", maxElements);
            positive("maxStringChars", maxStringChars);
            positive("maxNumberChars", maxNumberChars);
        }

        private static void positive(final String name, final int value) {
            if (value < 1) {
                throw new IllegalArgumentException(name + " must be at least 1: " + value);
            }
        }

        /**
         * @param chars the document's length, in chars.
         * @return these limits with that one changed.
         */
        public Limits withMaxInputChars(final int chars) {
            return new Limits(chars, maxDepth, maxElements, maxStringChars, maxNumberChars);
        }

        /**
         * @param depth arrays and objects open at once.
         * @return these limits with that one changed.
         */
        public Limits withMaxDepth(final int depth) {
            return new Limits(maxInputChars, depth, maxElements, maxStringChars, maxNumberChars);
        }

        /**
         * @param elements elements of one array, members of one object.
         * @return these limits with that one changed.
         */
        public Limits withMaxElements(final int elements) {
            return new Limits(maxInputChars, maxDepth, elements, maxStringChars, maxNumberChars);
        }

        /**
         * @param chars one string, in chars once decoded.
         * @return these limits with that one changed.
         */
        public Limits withMaxStringChars(final int chars) {
            return new Limits(maxInputChars, maxDepth, maxElements, chars, maxNumberChars);
        }

        /**
         * @param chars one number literal, in chars.
         * @return these limits with that one changed.
         */
        public Limits withMaxNumberChars(final int chars) {
            return new Limits(maxInputChars, maxDepth, maxElements, maxStringChars, chars);
        }
    }

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
    private final Limits limits;
    private int i;

    private MiniJson(final String s, final Limits limits) {
        this.s = s;
        this.limits = limits;
    }

    /**
     * Reads a document within {@link Limits#DEFAULT}.
     *
     * @param text a JSON document.
     * @return its value.
     * @throws JsonLimitException       when the text exceeds a default limit.
     * @throws IllegalArgumentException when the text is not valid JSON.
     */
    public static Object parse(final String text) {
        return parse(text, Limits.DEFAULT);
    }

    /**
     * Reads a document within the given limits.
     *
     * @param text   a JSON document.
     * @param limits what to accept.
     * @return its value.
     * @throws JsonLimitException       when the text exceeds a limit.
     * @throws IllegalArgumentException when the text is not valid JSON.
     */
    public static Object parse(final String text, final Limits limits) {
        Objects.requireNonNull(text, "text");
        Objects.requireNonNull(limits, "limits");
        if (text.length() > limits.maxInputChars()) {
            throw new JsonLimitException(JsonLimitException.Limit.INPUT_CHARS, limits.maxInputChars(),
                limits.maxInputChars());
        }
        final MiniJson p = new MiniJson(text, limits);
        p.ws();
        final Object v = p.document();
        p.ws();
        if (p.i != text.length()) {
            throw p.error("trailing characters");
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

    /** Reads one value, arrays and objects on an explicit stack of at most {@link Limits#maxDepth()} frames. */
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

    /**
     * Writes a value made of maps, lists, strings, numbers, booleans and null as JSON.
     *
     * @param value the value.
     * @return its JSON text.
     * @throws IllegalArgumentException for a non-finite number or an unsupported type.
     */
    public static String write(final Object value) {
        final StringBuilder sb = new StringBuilder();
        write(value, sb);
        return sb.toString();
    }

    private static void write(final Object v, final StringBuilder sb) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String str) {
            quote(str, sb);
        } else if (v instanceof Boolean b) {
            sb.append(b.booleanValue());
        } else if (v instanceof Double || v instanceof Float) {
            final double d = ((Number) v).doubleValue();
            if (!Double.isFinite(d)) {
                throw new IllegalArgumentException("JSON has no " + d);
            }
            sb.append(d);
        } else if (v instanceof BigInteger || v instanceof java.math.BigDecimal) {
            sb.append(v);
        } else if (v instanceof Number n) {
            sb.append(n.longValue());
        } else if (v instanceof Map<?, ?> m) {
            sb.append('{');
            boolean first = true;
            for (final Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                quote(String.valueOf(e.getKey()), sb);
                sb.append(':');
                write(e.getValue(), sb);
            }
            sb.append('}');
        } else if (v instanceof List<?> l) {
            sb.append('[');
            for (int k = 0; k < l.size(); k++) {
                if (k > 0) {
                    sb.append(',');
                }
                write(l.get(k), sb);
            }
            sb.append(']');
        } else {
            throw new IllegalArgumentException("cannot write " + v.getClass().getName() + " as JSON");
        }
    }

    private static void quote(final String str, final StringBuilder sb) {
        sb.append('"');
        for (int k = 0; k < str.length(); k++) {
            final char c = str.charAt(k);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
