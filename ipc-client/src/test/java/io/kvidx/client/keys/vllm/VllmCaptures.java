package io.kvidx.client.keys.vllm;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The real vLLM captures (test resources under vllm/), read with just enough JSON for their flat shape. */
final class VllmCaptures {

    final String hashSeed;
    final String loraName;
    final int blockSize;
    final int[] tokens;
    final long[] blockHashes;

    private VllmCaptures(final String json) {
        hashSeed = string(json, "hash_seed");
        loraName = string(json, "lora_name");
        blockSize = Integer.parseInt(scalar(json, "block_size"));
        final List<BigInteger> t = numbers(json, "token_ids");
        tokens = t.stream().mapToInt(BigInteger::intValueExact).toArray();
        final List<BigInteger> h = numbers(json, "block_hashes");
        blockHashes = h.stream().mapToLong(BigInteger::longValue).toArray();
    }

    /**
     * Loads a capture from the test resources ({@code /vllm/<name>} on the class path); fails when it is missing.
     */
    static VllmCaptures load(final String fileName) throws IOException {
        try (java.io.InputStream in = VllmCaptures.class.getResourceAsStream("/vllm/" + fileName)) {
            assertTrue(in != null, "missing test resource /vllm/" + fileName);
            return new VllmCaptures(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
        }
    }

    private static String scalar(final String json, final String key) {
        final Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*(null|\"(?:[^\"\\\\]|\\\\.)*\"|[-0-9]+)")
            .matcher(json);
        if (!m.find()) {
            throw new IllegalArgumentException("no field " + key);
        }
        return m.group(1);
    }

    private static String string(final String json, final String key) {
        final String v = scalar(json, key);
        if ("null".equals(v)) {
            return null;
        }
        return v.substring(1, v.length() - 1);
    }

    private static List<BigInteger> numbers(final String json, final String key) {
        final Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\\[([^\\]]*)\\]").matcher(json);
        if (!m.find()) {
            throw new IllegalArgumentException("no array " + key);
        }
        final List<BigInteger> out = new ArrayList<>();
        for (final String s : m.group(1).split(",")) {
            if (!s.isBlank()) {
                out.add(new BigInteger(s.strip()));
            }
        }
        return out;
    }
}
