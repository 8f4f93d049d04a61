package io.kvidx.bench;

import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Minimal JSON object writer for the bench's one-line reports: string keys, values that are numbers, strings,
 * booleans or nested {@link Json} objects. Non-finite numbers are written as null.
 *
 * <p><b>Note:</b> not thread safe.
 */
public final class Json {
    private final Map<String, Object> fields = new LinkedHashMap<>();

    /**
     * @param key   field name.
     * @param value a Number, String, Boolean or Json.
     * @return this.
     */
    public Json put(final String key, final Object value) {
        fields.put(key, value);
        return this;
    }

    /**
     * @param key  field name.
     * @param json an already serialised JSON value, written as is.
     * @return this.
     */
    public Json putRaw(final String key, final String json) {
        fields.put(key, new Raw(json));
        return this;
    }

    @Override
    public String toString() {
        final StringBuilder sb = new StringBuilder();
        write(sb);
        return sb.toString();
    }

    private void write(final StringBuilder sb) {
        sb.append('{');
        boolean first = true;
        for (final Map.Entry<String, Object> e : fields.entrySet()) {
            if (!first) {
                sb.append(", ");
            }
            first = false;
            writeString(sb, e.getKey());
            sb.append(": ");
            final Object v = e.getValue();
            if (v instanceof Json json) {
                json.write(sb);
            } else if (v instanceof Raw raw) {
                sb.append(raw.text());
            } else if (v instanceof Double || v instanceof Float) {
                final double d = ((Number) v).doubleValue();
                if (Double.isFinite(d)) {
                    final double rounded = Math.round(d * 100.0) / 100.0;
                    sb.append(BigDecimal.valueOf(rounded).stripTrailingZeros().toPlainString());
                } else {
                    sb.append("null");
                }
            } else if (v instanceof Number || v instanceof Boolean) {
                sb.append(v);
            } else if (v == null) {
                sb.append("null");
            } else {
                writeString(sb, v.toString());
            }
        }
        sb.append('}');
    }

    private static void writeString(final StringBuilder sb, final String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }

    private record Raw(String text) {
    }
}
