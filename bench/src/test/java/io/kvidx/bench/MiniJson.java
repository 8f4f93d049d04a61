package io.kvidx.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A strict little JSON reader for tests: objects, strings (no escapes beyond \" and \\), numbers, true/false/null.
 * Throws on anything else or on trailing characters, so a malformed report fails the test.
 */
final class MiniJson {
    private final String s;
    private int i;

    private MiniJson(final String s) {
        this.s = s;
    }

    static Map<String, Object> parseObject(final String text) {
        final MiniJson p = new MiniJson(text.strip());
        final Object v = p.value();
        if (p.i != p.s.length()) {
            throw new IllegalArgumentException("trailing characters at " + p.i + ": " + text);
        }
        if (!(v instanceof Map)) {
            throw new IllegalArgumentException("not an object: " + text);
        }
        @SuppressWarnings("unchecked")
        final Map<String, Object> map = (Map<String, Object>) v;
        return map;
    }

    private Object value() {
        skip();
        final char c = s.charAt(i);
        if (c == '{') {
            return object();
        }
        if (c == '"') {
            return string();
        }
        if (s.startsWith("true", i)) {
            i += 4;
            return Boolean.TRUE;
        }
        if (s.startsWith("false", i)) {
            i += 5;
            return Boolean.FALSE;
        }
        if (s.startsWith("null", i)) {
            i += 4;
            return null;
        }
        final int start = i;
        while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
            i++;
        }
        if (start == i) {
            throw new IllegalArgumentException("unexpected '" + c + "' at " + i);
        }
        return Double.parseDouble(s.substring(start, i));
    }

    private Map<String, Object> object() {
        final Map<String, Object> map = new LinkedHashMap<>();
        i++;
        skip();
        if (s.charAt(i) == '}') {
            i++;
            return map;
        }
        while (true) {
            skip();
            final String key = string();
            skip();
            expect(':');
            map.put(key, value());
            skip();
            if (s.charAt(i) == ',') {
                i++;
                continue;
            }
            expect('}');
            return map;
        }
    }

    private String string() {
        expect('"');
        final StringBuilder sb = new StringBuilder();
        while (s.charAt(i) != '"') {
            char c = s.charAt(i++);
            if (c == '\\') {
                c = s.charAt(i++);
            }
            sb.append(c);
        }
        i++;
        return sb.toString();
    }

    private void expect(final char c) {
        if (s.charAt(i) != c) {
            throw new IllegalArgumentException("expected '" + c + "' at " + i + " in " + s);
        }
        i++;
    }

    private void skip() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
            i++;
        }
    }
}
