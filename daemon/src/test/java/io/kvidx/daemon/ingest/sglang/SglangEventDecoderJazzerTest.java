package io.kvidx.daemon.ingest.sglang;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.kvidx.daemon.ingest.vllm.RecordingListener;
import io.kvidx.daemon.ingest.vllm.VllmDecodeException;
import org.agrona.concurrent.UnsafeBuffer;

import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Coverage-guided fuzzing (Jazzer) of {@link SglangEventDecoder}: any payload either decodes or throws
 * {@link io.kvidx.daemon.ingest.vllm.VllmDecodeException}, and nothing else. Seeds: SGLang batches of both event
 * generations (metadata map, cache salt) and the vLLM captures (the same msgpack family).
 */
class SglangEventDecoderJazzerTest {
    @FuzzTest(maxDuration = "10m")
    void shouldDecodeOrRejectAnyPayload(final byte[] payload) {
        final SglangEventDecoder decoder = new SglangEventDecoder(1 << 10, 1 << 14);
        try {
            decoder.decode(new UnsafeBuffer(payload), 0, payload.length, new RecordingListener());
        } catch (final VllmDecodeException expected) {
            assertNotNull(expected.getMessage());
        }
    }
}
