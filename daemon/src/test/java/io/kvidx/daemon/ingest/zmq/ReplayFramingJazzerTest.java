package io.kvidx.daemon.ingest.zmq;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Coverage-guided fuzzing (Jazzer) of {@link ReplayFraming}: for any frame count, every framing either rejects the
 * reply (-1) or names a sequence frame after the empty delimiter with a payload frame after it, at the index its
 * layout documents ({@code ["", seq, payload]}: 1; {@code ["", topic, seq, payload]}: 2), and describes itself.
 */
class ReplayFramingJazzerTest {
    @FuzzTest(maxDuration = "10m")
    void shouldNameASequenceFrameInsideTheReply(final FuzzedDataProvider data) {
        final ReplayFraming framing = data.pickValue(ReplayFraming.values());
        final int frames = data.consumeInt();
        final int seq = framing.sequenceFrame(frames);
        assertTrue(!framing.describe().isEmpty());
        if (seq < 0) {
            assertEquals(-1, seq);
            assertTrue(frames != 3 || framing == ReplayFraming.TOPIC_SEQ_PAYLOAD, "3 frames rejected by " + framing);
            assertTrue(frames != 4 || framing == ReplayFraming.SEQ_PAYLOAD, "4 frames rejected by " + framing);
            return;
        }
        assertTrue(seq >= 1 && seq + 1 < frames, framing + ": sequence frame " + seq + " of " + frames);
        assertEquals(frames == 3 ? 1 : 2, seq);
    }
}
