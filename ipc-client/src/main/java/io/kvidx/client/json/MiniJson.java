package io.kvidx.client.json;

import java.math.BigInteger;
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
 * <p>The reader is {@link JsonParser}, the writer {@link JsonWriter}; this class holds the API and the limits.
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

    private MiniJson() {
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
        return new JsonParser(text, limits).parse();
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
        JsonWriter.write(value, sb);
        return sb.toString();
    }
}
