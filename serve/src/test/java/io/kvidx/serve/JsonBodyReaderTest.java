package io.kvidx.serve;

import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The body reader hands every top-level field to the caller, the token ids read by the scan or by jackson alike, and
 * refuses a body that is not one JSON object within the bounds with the API's code.
 */
class JsonBodyReaderTest {
    private static final StreamReadConstraints BOUNDS = StreamReadConstraints.builder().maxNestingDepth(4)
        .maxNumberLength(12).build();

    /** Reads a body; returns the fields seen and the ids (by the scan, or by a plain jackson loop). */
    private static String read(final JsonBodyReader reader, final String body) {
        final List<String> names = new ArrayList<>();
        final int[] count = {-1};
        reader.read(Unpooled.wrappedBuffer(body.getBytes(StandardCharsets.UTF_8)), (p, name) -> {
            names.add(name);
            if ("ids".equals(name) && p.currentToken() == JsonToken.START_ARRAY && reader.takePreparsed()) {
                p.skipChildren();
                count[0] = reader.preparsedCount();
            } else if ("ids".equals(name)) {
                int n = 0;
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    reader.tokens()[n++] = p.getIntValue();
                }
                count[0] = n;
            } else {
                p.skipChildren();
            }
        });
        return names + " " + Arrays.toString(Arrays.copyOf(reader.tokens(), Math.max(0, count[0])));
    }

    @Test
    void shouldReadTheSameIdsWithAndWithoutTheScan() {
        final String body = "{\"model\":\"m\",\"ids\":[3, 1,4,1,5],\"x\":{\"ids\":[9]}}";
        final String fast = read(new JsonBodyReader(BOUNDS, "ids", 1 << 16, true, "bad"), body);
        assertEquals("[model, ids, x] [3, 1, 4, 1, 5]", fast);
        assertEquals(fast, read(new JsonBodyReader(BOUNDS, "ids", 1 << 16, false, "bad"), body));
    }

    @Test
    void shouldRefuseWhatIsNotOneObjectWithinTheBounds() {
        final JsonBodyReader reader = new JsonBodyReader(BOUNDS, "ids", 1 << 16, true, "bad_json");
        for (final String body : List.of("[1]", "{\"a\":1} {}", "{\"a\":", "{\"a\":[[[[[1]]]]]}",
            "{\"a\":1234567890123}", "not json")) {
            final HttpError e = assertThrows(HttpError.class, () -> read(reader, body), body);
            assertEquals(400, e.status());
            assertEquals("bad_json", e.code());
        }
        assertTrue(read(reader, "{}").startsWith("[]"), "an empty object has no fields");
    }
}
