package io.kvidx.client.json;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JSON reader: RFC 8259's grammar, and each of its limits refused with a typed error while a document just
 * inside it still parses.
 */
@Timeout(30)
class MiniJsonTest {
    private static final MiniJson.Limits DEFAULT = MiniJson.Limits.DEFAULT;

    private static JsonLimitException refused(final JsonLimitException.Limit limit, final String text,
        final MiniJson.Limits limits) {
        final JsonLimitException ex = assertThrows(JsonLimitException.class, () -> MiniJson.parse(text, limits));
        assertEquals(limit, ex.limit(), ex.getMessage());
        return ex;
    }

    private static String nested(final int depth) {
        return "[".repeat(depth) + "]".repeat(depth);
    }

    @Test
    void shouldHaveTheDocumentedDefaults() {
        assertEquals(new MiniJson.Limits(64 << 20, 64, 1 << 20, 8 << 20, 64), DEFAULT);
        assertThrows(IllegalArgumentException.class, () -> DEFAULT.withMaxDepth(0));
        assertEquals(3, DEFAULT.withMaxElements(3).maxElements());
    }

    @Test
    void shouldRefuseTenThousandOpenBracketsWithATypedErrorNotStackOverflow() {
        final JsonLimitException ex = refused(JsonLimitException.Limit.DEPTH, "[".repeat(10_000), DEFAULT);
        assertEquals(64, ex.max());
        assertEquals(64, ex.offset(), "the 65th '[' is refused");
        refused(JsonLimitException.Limit.DEPTH, "{\"a\":".repeat(10_000), DEFAULT);
        refused(JsonLimitException.Limit.DEPTH, nested(65), DEFAULT);
        assertThrows(JsonLimitException.class, () -> MiniJson.parse(nested(100_000)));
    }

    @Test
    void shouldParseNestingJustInsideTheDepthLimit() {
        Object v = MiniJson.parse(nested(64));
        for (int d = 1; d < 64; d++) {
            v = ((List<?>) v).get(0);
        }
        assertEquals(List.of(), v);
        assertEquals(Map.of("a", Map.of("b", List.of(List.of()))),
            MiniJson.parse("{\"a\": {\"b\": [[]]}}", DEFAULT.withMaxDepth(4)));
        refused(JsonLimitException.Limit.DEPTH, "{\"a\": {\"b\": [[]]}}", DEFAULT.withMaxDepth(3));
    }

    @Test
    void shouldRefuseAHundredThousandDigitNumber() {
        final String digits = "1".repeat(100_000);
        assertEquals(0, refused(JsonLimitException.Limit.NUMBER_CHARS, digits, DEFAULT).offset());
        assertEquals(1, refused(JsonLimitException.Limit.NUMBER_CHARS, "[" + digits + "]", DEFAULT).offset());
        refused(JsonLimitException.Limit.NUMBER_CHARS, "-0." + digits, DEFAULT);
        refused(JsonLimitException.Limit.NUMBER_CHARS, "1e" + digits, DEFAULT);
    }

    @Test
    void shouldParseNumbersJustInsideTheLengthLimit() {
        final String digits = "9".repeat(64);
        assertEquals(new BigInteger(digits), MiniJson.parse(digits));
        assertEquals(new BigInteger("-" + digits.substring(1)), MiniJson.parse("-" + digits.substring(1)));
        refused(JsonLimitException.Limit.NUMBER_CHARS, "-" + digits, DEFAULT);
        assertEquals(1.5e300, MiniJson.parse("1.5e300", DEFAULT.withMaxNumberChars(7)));
        refused(JsonLimitException.Limit.NUMBER_CHARS, "1.5e300", DEFAULT.withMaxNumberChars(6));
        assertEquals(Long.MIN_VALUE, MiniJson.parse(Long.toString(Long.MIN_VALUE)));
        assertEquals(BigInteger.valueOf(Long.MAX_VALUE).add(BigInteger.ONE), MiniJson.parse("9223372036854775808"));
    }

    @Test
    void shouldRefuseAnOverLongString() {
        final String big = "\"" + "x".repeat((8 << 20) + 1) + "\"";
        assertEquals(0, refused(JsonLimitException.Limit.STRING_CHARS, big, DEFAULT).offset());
        final MiniJson.Limits four = DEFAULT.withMaxStringChars(4);
        refused(JsonLimitException.Limit.STRING_CHARS, "\"abcde\"", four);
        refused(JsonLimitException.Limit.STRING_CHARS, "\"ab\\ncde\"", four);
        refused(JsonLimitException.Limit.STRING_CHARS, "\"\\u0041\\u0042\\u0043\\u0044\\u0045\"", four);
        assertEquals(9, refused(JsonLimitException.Limit.STRING_CHARS, "{\"a\": 1, \"abcde\": 2}", four).offset(),
            "member names too");
    }

    @Test
    void shouldParseStringsJustInsideTheLengthLimit() {
        final MiniJson.Limits four = DEFAULT.withMaxStringChars(4);
        assertEquals("abcd", MiniJson.parse("\"abcd\"", four));
        assertEquals("a\nbc", MiniJson.parse("\"a\\nbc\"", four));
        assertEquals("ABCD", MiniJson.parse("\"\\u0041\\u0042\\u0043\\u0044\"", four));
        assertEquals(Map.of("abcd", "wxyz"), MiniJson.parse("{\"abcd\": \"wxyz\"}", four));
        final String big = "x".repeat(8 << 20);
        assertEquals(big, MiniJson.parse("\"" + big + "\""));
    }

    @Test
    void shouldRefuseAnOverLongBody() {
        final MiniJson.Limits small = DEFAULT.withMaxInputChars(16);
        final JsonLimitException ex = refused(JsonLimitException.Limit.INPUT_CHARS, "[1, 2, 3, 4, 5, 6]", small);
        assertEquals(16, ex.max());
        assertEquals(16, ex.offset());
        refused(JsonLimitException.Limit.INPUT_CHARS, "{}" + " ".repeat(15), small);
    }

    @Test
    void shouldParseABodyJustInsideTheLengthLimit() {
        final MiniJson.Limits small = DEFAULT.withMaxInputChars(16);
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), MiniJson.parse("[1, 2, 3, 4, 5] ", small));
        assertEquals(Map.of(), MiniJson.parse("{}" + " ".repeat(14), small));
    }

    @Test
    void shouldRefuseTooManyElements() {
        final String many = "[" + String.join(",", Collections.nCopies((1 << 20) + 1, "0")) + "]";
        final JsonLimitException ex = refused(JsonLimitException.Limit.ELEMENTS, many, DEFAULT);
        assertEquals(1 << 20, ex.max());
        assertEquals(2 * (1 << 20), ex.offset(), "the comma before element 1 Mi + 1");
        final MiniJson.Limits three = DEFAULT.withMaxElements(3);
        refused(JsonLimitException.Limit.ELEMENTS, "[1, 2, 3, 4]", three);
        refused(JsonLimitException.Limit.ELEMENTS, "{\"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4}", three);
        refused(JsonLimitException.Limit.ELEMENTS, "{\"a\": 1, \"a\": 2, \"a\": 3, \"a\": 4}", three);
        refused(JsonLimitException.Limit.ELEMENTS, "[[1], [1, 2, 3, 4]]", three);
    }

    @Test
    void shouldParseElementsJustInsideTheCountLimit() {
        final List<Object> zeros = new ArrayList<>(Collections.nCopies(1 << 20, 0L));
        assertEquals(zeros, MiniJson.parse("[" + String.join(",", Collections.nCopies(1 << 20, "0")) + "]"));
        final MiniJson.Limits three = DEFAULT.withMaxElements(3);
        assertEquals(List.of(List.of(1L, 2L, 3L), List.of(1L, 2L, 3L), List.of()),
            MiniJson.parse("[[1, 2, 3], [1, 2, 3], []]", three));
        assertEquals(Map.of("a", 1L, "b", 2L, "c", 3L), MiniJson.parse("{\"a\": 1, \"b\": 2, \"c\": 3}", three));
    }

    @Test
    void shouldReadRfc8259Values() {
        final Map<?, ?> m = (Map<?, ?>) MiniJson.parse(
            " {\"a\": [1, -2.5e1, 0.5E+2, -0, \"x\\u0041\\n\\\"\\/\", true, false, null], \"b\": {}, \"c\": []}\n");
        final List<Object> a = new ArrayList<>(List.of(1L, -25.0, 50.0, 0L, "xA\n\"/", true, false));
        a.add(null);
        assertEquals(a, m.get("a"));
        assertEquals(Map.of(), m.get("b"));
        assertEquals(List.of(), m.get("c"));
        assertEquals(List.of("b", "a"), new ArrayList<>(((Map<?, ?>) MiniJson.parse("{\"b\": 1, \"a\": 2}")).keySet()));
        assertEquals("\uD83D\uDE00", MiniJson.parse("\"\\ud83d\\ude00\""));
        assertEquals(Double.POSITIVE_INFINITY, MiniJson.parse("1e400"), "beyond double's range, as Python");
        assertInstanceOf(Double.class, MiniJson.parse("1.0"));
    }

    @Test
    void shouldRefuseInvalidDocumentsWithAnIllegalArgumentExceptionOnly() {
        for (final String bad : List.of("", " ", "{\"a\" 1}", "[1,]", "{\"a\": 1,}", "{} x", "[", "{", "{\"a\"",
            "[1 2]", "01", "1.", ".5", "+1", "-", "1e", "1e+", "1-2", "0x10", "NaN", "Infinity", "tru", "nul",
            "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u+123\"", "\"\\u12g4\"", "\"a\tb\"", "'a'", "[1]]", "{1: 2}",
            "\"\\")) {
            final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> MiniJson.parse(bad),
                bad);
            assertFalse(ex instanceof JsonLimitException, bad);
            assertTrue(ex.getMessage().startsWith("invalid JSON at offset "), ex.getMessage());
        }
    }
}
