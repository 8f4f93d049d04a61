package io.kvidx.daemon.ingest.vllm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A real vLLM BlockStored capture from the test resources (vllm/, JSON), with a minimal JSON reader (the captures hold only
 * objects, arrays, strings, integers, null).
 */
public record Capture(String model, String loraName, long[] blockHashes, int[] tokenIds, int blockSize,
    String medium) {

    /**
     * @return the test resource folder with the vLLM captures.
     */
    public static Path sharedDir() {
        try {
            final java.net.URL url = Capture.class.getResource("/vllm/kv_event_base.json");
            if (url == null) {
                throw new IllegalStateException("missing test resource /vllm/kv_event_base.json");
            }
            return Path.of(url.toURI()).getParent();
        } catch (final java.net.URISyntaxException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /**
     * @param name file name, e.g. kv_event_base.json.
     * @return the capture.
     */
    public static Capture load(final String name) {
        try {
            final String json = Files.readString(sharedDir().resolve(name));
            @SuppressWarnings("unchecked")
            final Map<String, Object> m = (Map<String, Object>) new Json(json).value();
            @SuppressWarnings("unchecked")
            final List<Object> hashes = (List<Object>) m.get("block_hashes");
            @SuppressWarnings("unchecked")
            final List<Object> tokens = (List<Object>) m.get("token_ids");
            final long[] h = new long[hashes.size()];
            for (int i = 0; i < h.length; i++) {
                h[i] = Long.parseUnsignedLong(hashes.get(i).toString());
            }
            final int[] t = new int[tokens.size()];
            for (int i = 0; i < t.length; i++) {
                t[i] = Integer.parseInt(tokens.get(i).toString());
            }
            return new Capture((String) m.get("model_name"), (String) m.get("lora_name"), h, t,
                Integer.parseInt(m.get("block_size").toString()), (String) m.get("medium"));
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private static final class Json {
        private final String s;
        private int i;

        Json(final String s) {
            this.s = s;
        }

        Object value() {
            ws();
            final char c = s.charAt(i);
            if (c == '{') {
                i++;
                final Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    ws();
                    final String k = (String) value();
                    ws();
                    i++; // ':'
                    m.put(k, value());
                    ws();
                    if (s.charAt(i++) == '}') {
                        return m;
                    }
                }
            }
            if (c == '[') {
                i++;
                final List<Object> l = new ArrayList<>();
                ws();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    ws();
                    if (s.charAt(i++) == ']') {
                        return l;
                    }
                }
            }
            if (c == '"') {
                final StringBuilder b = new StringBuilder();
                i++;
                while (s.charAt(i) != '"') {
                    char ch = s.charAt(i++);
                    if (ch == '\\') {
                        ch = s.charAt(i++);
                        switch (ch) {
                            case 'n' -> b.append('\n');
                            case 't' -> b.append('\t');
                            case 'u' -> {
                                b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                                i += 4;
                            }
                            default -> b.append(ch);
                        }
                    } else {
                        b.append(ch);
                    }
                }
                i++;
                return b.toString();
            }
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            final int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            return s.substring(start, i);
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }
    }
}
