package io.kvidx.client.keys.vllm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.HexFormat;

import org.junit.jupiter.api.Test;

class VllmCaptureTest {
    @Test
    void shouldReproduceNoneHashFromWireFacts() {
        final VllmBlockHasher hasher = new VllmBlockHasher(VllmHashAlgorithm.SHA256_CBOR, 16);
        assertEquals("9fa6eb003f14425eb9c8e6baacfbcaab26257357b829c7bfa74ffcc4f31c1780",
            HexFormat.of().formatHex(hasher.noneHash("42")));
    }

    @Test
    void shouldReproduceEveryBlockHashOfTheBaseCapture() throws Exception {
        final VllmCaptures capture = VllmCaptures.load("kv_event_base.json");
        assertNull(capture.loraName);
        assertEquals(25, capture.blockHashes.length);
        final long[] values = reproduce(capture);
        assertArrayEquals(capture.blockHashes, values);
        assertEquals("17705339885301241772", Long.toUnsignedString(values[0]));
        assertEquals("13360521540053240825", Long.toUnsignedString(values[1]));
        assertEquals("1652464311825922890", Long.toUnsignedString(values[2]));
    }

    @Test
    void shouldReproduceEveryBlockHashOfTheLoraCapture() throws Exception {
        final VllmCaptures capture = VllmCaptures.load("kv_event_lora.json");
        assertEquals("Alice", capture.loraName);
        assertEquals(25, capture.blockHashes.length);
        assertArrayEquals(capture.blockHashes, reproduce(capture));
    }

    @Test
    void shouldNotMatchTheLoraCaptureWithoutTheLoraName() throws Exception {
        final VllmCaptures capture = VllmCaptures.load("kv_event_lora.json");
        final VllmBlockHasher hasher = new VllmBlockHasher(VllmHashAlgorithm.SHA256_CBOR, capture.blockSize);
        final long[] values = new long[capture.blockHashes.length];
        hasher.hashRequest(hasher.noneHash(capture.hashSeed), capture.tokens, capture.tokens.length,
            VllmExtraKeys.NONE, null, values);
        for (int i = 0; i < values.length; i++) {
            assertNotEquals(capture.blockHashes[i], values[i]);
        }
    }

    static long[] reproduce(final VllmCaptures capture) {
        final VllmBlockHasher hasher = new VllmBlockHasher(VllmHashAlgorithm.SHA256_CBOR, capture.blockSize);
        final long[] values = new long[capture.tokens.length / capture.blockSize];
        final int n = hasher.hashRequest(hasher.noneHash(capture.hashSeed), capture.tokens, capture.tokens.length,
            VllmExtraKeys.of(capture.loraName, null), null, values);
        assertEquals(capture.blockHashes.length, n);
        return values;
    }
}
