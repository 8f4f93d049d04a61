package io.kvidx.daemon.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.kvidx.client.json.MiniJson;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Coverage-guided fuzzing (Jazzer) of the ipc-client's {@link MiniJson} (here because the daemon module already
 * carries Jazzer): any text parses within small limits or is refused with an {@link IllegalArgumentException}
 * (a {@link io.kvidx.client.json.JsonLimitException} past a limit); what parses writes back to text that parses to
 * the same value (or, for a number past a double's range, is refused by the writer as an infinity).
 */
class MiniJsonJazzerTest {
    private static final MiniJson.Limits LIMITS = new MiniJson.Limits(1 << 16, 16, 4096, 4096, 64);

    @FuzzTest(maxDuration = "10m")
    void shouldParseOrRefuseAndRoundTrip(final byte[] input) {
        final Object value;
        try {
            value = MiniJson.parse(new String(input, StandardCharsets.UTF_8), LIMITS);
        } catch (final IllegalArgumentException expected) {
            assertNotNull(expected.getMessage());
            return;
        }
        final String text;
        try {
            text = MiniJson.write(value);
        } catch (final IllegalArgumentException nonFinite) {
            // A number past a double's range (1e400) parses to an infinity, which JSON cannot write back.
            assertTrue(nonFinite.getMessage().contains("Infinity"), nonFinite.getMessage());
            return;
        }
        assertEquals(text, MiniJson.write(MiniJson.parse(text, MiniJson.Limits.DEFAULT)));
    }
}
