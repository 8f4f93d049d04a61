package io.kvidx.client.json;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * {@link MiniJson}'s writer: maps, lists, strings, numbers, booleans and null as JSON text, strings escaped as RFC
 * 8259 requires.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
final class JsonWriter {
    private JsonWriter() {
    }

    /**
     * Appends a value as JSON.
     *
     * @param v  the value.
     * @param sb where to append.
     * @throws IllegalArgumentException for a non-finite number or an unsupported type.
     */
    static void write(final Object v, final StringBuilder sb) {
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
        } else if (v instanceof BigInteger || v instanceof BigDecimal) {
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
