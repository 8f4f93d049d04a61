package io.kvidx.daemon.ingest.vllm;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.agrona.concurrent.UnsafeBuffer;

import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Coverage-guided fuzzing (Jazzer) of the vLLM msgpack batch decoder ({@link VllmEventDecoder} over
 * {@link KvBatchDecoder}): any payload either decodes, delivering events whose every field the listener copies, or
 * throws {@link VllmDecodeException}; nothing else escapes, nothing hangs, nothing allocates beyond the limits.
 * Seeds: the real vLLM captures encoded in every shape (src/test/resources/.../VllmEventDecoderJazzerTestInputs,
 * written by {@code FuzzSeeds}). Without {@code JAZZER_FUZZ} this runs on the seeds only (docs/testing.md).
 */
class VllmEventDecoderJazzerTest {
    @FuzzTest(maxDuration = "10m")
    void shouldDecodeOrRejectAnyPayload(final byte[] payload) {
        final VllmEventDecoder decoder = new VllmEventDecoder(1 << 10, 1 << 14);
        try {
            decoder.decode(new UnsafeBuffer(payload), 0, payload.length, new RecordingListener());
        } catch (final VllmDecodeException expected) {
            assertNotNull(expected.getMessage());
        }
    }
}
