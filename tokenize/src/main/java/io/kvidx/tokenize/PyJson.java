package io.kvidx.tokenize;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Python's {@code json.dumps(x, ensure_ascii=..., indent=..., separators=..., sort_keys=...)}, which Hugging Face's
 * chat templates get as their {@code tojson} filter (transformers defines {@code tojson} as {@code json.dumps} with
 * {@code ensure_ascii=False} by default, replacing Jinja2's HTML-escaping one). Keys keep their order; floats print as
 * Python's {@code repr} ({@code 1.0}, {@code 1e-05}, {@code 1e+16}); integers of any size print whole.
 *
 * <p><b>Note:</b> stateless and thread safe.
 */
final class PyJson {
    private PyJson() {
    }

    /**
     * @param value       a tree of maps (string keys), lists, strings, numbers, booleans and nulls.
     * @param ensureAscii escape every non-ASCII character as {@code \\uXXXX}.
     * @param indent      null for one line; else the indent string of one level.
     * @param itemSep     between items (null: {@code ", "}, or {@code ","} with an indent).
     * @param keySep      between a key and its value (null: {@code ": "}).
     * @param sortKeys    sort object keys (by code point).
     * @return the JSON text.
     */
    static String dumps(final Object value, final boolean ensureAscii, final String indent, final String itemSep,
        final String keySep, final boolean sortKeys) {
        final StringBuilder b = new StringBuilder();
        final String items = itemSep != null ? itemSep : indent != null ? "," : ", ";
        new Writer(b, ensureAscii, indent, items, keySep != null ? keySep : ": ", sortKeys).write(value, 0);
        return b.toString();
    }

    /** Python's {@code repr(float)}: the shortest digits that read back, fixed between 1e-4 and 1e16. */
    static String floatRepr(final double d) {
        if (Double.isNaN(d)) {
            return "NaN";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "Infinity" : "-Infinity";
        }
        if (d == 0) {
            return 1 / d < 0 ? "-0.0" : "0.0";
        }
        final BigDecimal bd = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
        final String digits = bd.unscaledValue().toString();
        final int decpt = digits.length() - bd.scale();
        final StringBuilder b = new StringBuilder(d < 0 ? "-" : "");
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) {
                b.append("0.").repeat('0', -decpt).append(digits);
            } else if (decpt >= digits.length()) {
                b.append(digits).repeat('0', decpt - digits.length()).append(".0");
            } else {
                b.append(digits, 0, decpt).append('.').append(digits, decpt, digits.length());
            }
            return b.toString();
        }
        b.append(digits.charAt(0));
        if (digits.length() > 1) {
            b.append('.').append(digits, 1, digits.length());
        }
        final int exp = decpt - 1;
        b.append('e').append(exp < 0 ? '-' : '+');
        final int abs = Math.abs(exp);
        if (abs < 10) {
            b.append('0');
        }
        return b.append(abs).toString();
    }

    private record Writer(StringBuilder b, boolean ascii, String indent, String itemSep, String keySep,
        boolean sortKeys) {

        void write(final Object v, final int depth) {
            if (v == null) {
                b.append("null");
            } else if (v instanceof Boolean x) {
                b.append(x ? "true" : "false");
            } else if (v instanceof CharSequence s) {
                string(s.toString());
            } else if (v instanceof Double || v instanceof Float) {
                b.append(floatRepr(((Number) v).doubleValue()));
            } else if (v instanceof BigDecimal x) {
                b.append(floatRepr(x.doubleValue()));
            } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
                || v instanceof BigInteger) {
                b.append(v);
            } else if (v instanceof Map<?, ?> m) {
                object(m, depth);
            } else if (v instanceof Iterable<?> it) {
                array(it, depth);
            } else if (v instanceof Object[] arr) {
                array(List.of(arr), depth);
            } else {
                throw new IllegalArgumentException("Object of type " + v.getClass().getSimpleName()
                    + " is not JSON serializable");
            }
        }

        private void newline(final int depth) {
            b.append('\n').repeat(indent, depth);
        }

        private void array(final Iterable<?> it, final int depth) {
            b.append('[');
            boolean first = true;
            for (final Object o : it) {
                if (!first) {
                    b.append(itemSep);
                }
                if (indent != null) {
                    newline(depth + 1);
                }
                write(o, depth + 1);
                first = false;
            }
            if (indent != null && !first) {
                newline(depth);
            }
            b.append(']');
        }

        private void object(final Map<?, ?> m, final int depth) {
            final List<Map.Entry<String, Object>> entries = new ArrayList<>(m.size());
            for (final Map.Entry<?, ?> e : m.entrySet()) {
                entries.add(Map.entry(key(e.getKey()), e.getValue() == null ? NULL : e.getValue()));
            }
            if (sortKeys) {
                entries.sort((x, y) -> compareCodePoints(x.getKey(), y.getKey()));
            }
            b.append('{');
            boolean first = true;
            for (final Map.Entry<String, Object> e : entries) {
                if (!first) {
                    b.append(itemSep);
                }
                if (indent != null) {
                    newline(depth + 1);
                }
                string(e.getKey());
                b.append(keySep);
                write(e.getValue() == NULL ? null : e.getValue(), depth + 1);
                first = false;
            }
            if (indent != null && !first) {
                newline(depth);
            }
            b.append('}');
        }

        /** Python converts str, int, float, bool and None keys; others are a TypeError. */
        private static String key(final Object k) {
            if (k instanceof CharSequence s) {
                return s.toString();
            }
            if (k == null) {
                return "null";
            }
            if (k instanceof Boolean x) {
                return x ? "true" : "false";
            }
            if (k instanceof Double || k instanceof Float) {
                return floatRepr(((Number) k).doubleValue());
            }
            if (k instanceof Number) {
                return k.toString();
            }
            throw new IllegalArgumentException("keys must be str, int, float, bool or None, not "
                + k.getClass().getSimpleName());
        }

        private void string(final String s) {
            b.append('"');
            for (int i = 0; i < s.length(); i++) {
                final char c = s.charAt(i);
                switch (c) {
                    case '"' -> b.append("\\\"");
                    case '\\' -> b.append("\\\\");
                    case '\n' -> b.append("\\n");
                    case '\r' -> b.append("\\r");
                    case '\t' -> b.append("\\t");
                    case '\b' -> b.append("\\b");
                    case '\f' -> b.append("\\f");
                    default -> {
                        if (c < 0x20 || ascii && c > 0x7E) {
                            b.append("\\u").append(HEX[c >> 12 & 0xF]).append(HEX[c >> 8 & 0xF])
                                .append(HEX[c >> 4 & 0xF]).append(HEX[c & 0xF]);
                        } else {
                            b.append(c);
                        }
                    }
                }
            }
            b.append('"');
        }
    }

    private static final Object NULL = new Object();
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private static int compareCodePoints(final String x, final String y) {
        int i = 0;
        int j = 0;
        while (i < x.length() && j < y.length()) {
            final int a = x.codePointAt(i);
            final int c = y.codePointAt(j);
            if (a != c) {
                return Integer.compare(a, c);
            }
            i += Character.charCount(a);
            j += Character.charCount(c);
        }
        return Integer.compare(x.length() - i, y.length() - j);
    }
}
