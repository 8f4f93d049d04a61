package io.kvidx.bench.trace;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TraceFileTest {
    @Test
    void shouldReadTheLineFormatSortedByTimestamp() throws IOException {
        final String text = "{\"timestamp\": 9, \"input_length\": 1000, \"output_length\": 5, \"hash_ids\": [0, 7]}\n"
            + "\n{\"hash_ids\":[3], \"timestamp\": 2, \"input_length\": 10, \"output_length\": 1}\n";
        final List<TraceRequest> r = TraceFile.read(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)),
            "t");
        assertEquals(2, r.size());
        assertEquals(2, r.get(0).timestampMs());
        assertArrayEquals(new long[] {0, 7}, r.get(1).hashIds());
        assertEquals(1000, r.get(1).promptTokens());
        assertEquals(10, r.get(0).promptTokens());
    }

    @Test
    void shouldNameTheLineOfAMalformedRequest() {
        final String text = "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n"
            + "{\"timestamp\": 1, \"input_length\": \"x\", \"output_length\": 1, \"hash_ids\": [1]}\n";
        final IOException ex = assertThrows(IOException.class, () -> TraceFile.read(
            new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "t"));
        assertTrue(ex.getMessage().startsWith("t:2: "), ex.getMessage());
    }

    @Test
    void shouldLoadTheCommittedMooncakeTrace() throws IOException {
        final List<TraceRequest> r = TraceFile.loadDefault();
        assertEquals(12_031, r.size());
        long blocks = 0;
        for (final TraceRequest q : r) {
            blocks += q.hashIds().length;
        }
        assertTrue(blocks / r.size() >= 20 && blocks / r.size() <= 30, "about 24 blocks per request: " + blocks);
    }
}
