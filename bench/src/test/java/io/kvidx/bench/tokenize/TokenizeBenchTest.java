package io.kvidx.bench.tokenize;

import io.kvidx.client.json.MiniJson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TokenizeBenchTest {
    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void shouldReportPercentilesAndAllocationOfEachPathAsTheLastLine() throws Exception {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        TokenizeBench.run(new String[] {"--forks", "0", "--warmup-iterations", "1", "--iterations", "1",
            "--time-ms", "300", "--texts", "4", "--json"}, out);

        final List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
        final Map<String, Object> json = object(MiniJson.parse(lines.getLast()), "report");
        final Map<String, Object> workload = object(json.get("workload"), "workload");
        assertEquals(2048.0, number(workload, "tokens"));
        assertEquals(128.0, number(workload, "keys"));
        assertEquals(4.0, number(workload, "texts"));
        assertTrue(number(workload, "mean_chars") > 2048, "mean chars: " + workload);
        for (final String row : List.of("kvidx_text_to_keys", "djl_text_to_keys", "router_keys_only")) {
            final Map<String, Object> r = object(json.get(row), row);
            assertTrue(number(r, "samples") > 0, row + ": " + r);
            assertTrue(number(r, "p50_ns") > 0 && number(r, "p99_ns") >= number(r, "p50_ns"), row + ": " + r);
        }
        final double kvidxAlloc = number(object(json.get("kvidx_text_to_keys"), "kvidx"), "alloc_bytes_per_op");
        final double djlAlloc = number(object(json.get("djl_text_to_keys"), "djl"), "alloc_bytes_per_op");
        final double keysAlloc = number(object(json.get("router_keys_only"), "keys"), "alloc_bytes_per_op");
        // kvidx's path receives the ids as one long[2048] from the native call (16 KiB); DJL's Encoding holds that
        // and much more (type ids, token strings, word ids, masks, offsets); hashing the keys allocates nothing.
        assertTrue(kvidxAlloc >= 2048 * 8, "kvidx's path must show the native call's long[]: " + kvidxAlloc);
        assertTrue(djlAlloc > 4 * kvidxAlloc, "DJL's Encoding must cost more than kvidx's path: " + djlAlloc
            + " vs " + kvidxAlloc);
        assertTrue(keysAlloc < 64, "router keys alone must not allocate: " + keysAlloc);
        // Tokenizing 2048 tokens costs far more than hashing them.
        final double kvidx50 = number(object(json.get("kvidx_text_to_keys"), "kvidx"), "p50_ns");
        final double keys50 = number(object(json.get("router_keys_only"), "keys"), "p50_ns");
        assertTrue(kvidx50 > keys50, "tokenizing must cost more than hashing: " + kvidx50 + " vs " + keys50);
        assertTrue(number(json, "tokenization_share_p50") > 0.5, "share: " + json);
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("kvidx_text_to_keys ")), "table row missing");
    }

    @Test
    void shouldRefuseBadOptions() {
        final PrintStream out = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        assertThrows(IllegalArgumentException.class, () -> TokenizeBench.run(new String[] {"--texts", "3"}, out));
        assertThrows(IllegalArgumentException.class, () -> TokenizeBench.run(new String[] {"--bogus", "1"}, out));
        assertThrows(IllegalArgumentException.class, () -> TokenizeBench.run(new String[] {"--forks"}, out));
    }

    /** The JSON object at a value, or a failed assertion naming it. */
    static Map<String, Object> object(final Object value, final String what) {
        @SuppressWarnings("unchecked")
        final Map<String, Object> m = (Map<String, Object>) assertInstanceOf(Map.class, value, what);
        return m;
    }

    /** A number field of a JSON object, or a failed assertion naming it. */
    static double number(final Map<String, Object> json, final String key) {
        return assertInstanceOf(Number.class, json.get(key), key + " in " + json).doubleValue();
    }
}
