package io.kvidx.daemon.serve;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.Unpooled;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Coverage-guided fuzzing (Jazzer) of the HTTP API's {@link RequestBody}: any body is read or refused with an
 * {@link ApiException} (nothing else escapes, nothing grows past the limits), and the token-id fast path reads
 * exactly what jackson-core alone reads. Seeds: the bodies of the API's endpoints (docs/service-api.md).
 */
class RequestBodyJazzerTest {
    @FuzzTest(maxDuration = "10m")
    void shouldReadOrRefuseAnyBodyAlikeWithAndWithoutTheFastPath(final byte[] body) {
        assertEquals(outcome(body, false), outcome(body, true));
    }

    private static String outcome(final byte[] body, final boolean fastPath) {
        final RequestBody b = new RequestBody(256, fastPath);
        try {
            b.read(Unpooled.wrappedBuffer(body));
        } catch (final ApiException ex) {
            return "refused " + ex.status() + " " + ex.code();
        }
        return "tokens " + b.hasTokens + " " + Arrays.toString(Arrays.copyOf(b.tokens, b.tokenCount))
            + " hashes " + b.hasHashes + " " + b.hashKind + " " + Arrays.toString(Arrays.copyOf(b.hashes,
            b.hashCount)) + " model " + b.model + " lora " + b.lora + " salt " + b.salt + " group " + b.group
            + " instance " + b.instanceId + " endpoint " + b.endpoint + " replay " + b.replayEndpoint + " type "
            + b.type + " additionalSalt " + b.additionalSalt + " blockSize " + b.blockSize + " dpRank " + b.dpRank;
    }
}
