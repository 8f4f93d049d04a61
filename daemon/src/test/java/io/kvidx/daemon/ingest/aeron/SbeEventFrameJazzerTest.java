package io.kvidx.daemon.ingest.aeron;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.kvidx.sbe.events.AllBlocksClearedDecoder;
import io.kvidx.sbe.events.BlockRemovedDecoder;
import io.kvidx.sbe.events.BlockStoredDecoder;
import io.kvidx.sbe.events.MessageHeaderDecoder;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Coverage-guided fuzzing (Jazzer) of {@link SbeEventFrame#check}: it never throws, and whatever it accepts the
 * generated SBE decoders read to exactly the message's end, although the message sits in a larger buffer (an Aeron
 * term) where reading past it would not throw. Seeds: real captures encoded as every template.
 */
class SbeEventFrameJazzerTest {
    private static final int SLACK = 1 << 17;

    @FuzzTest(maxDuration = "10m")
    void shouldAcceptOnlyMessagesTheDecoderReadsInBounds(final byte[] message) {
        checkInBounds(message);
    }

    /**
     * The frame check's property, shared with {@link SbeEventFrameFuzzTest}: a message it accepts is read by the
     * generated decoder exactly to its end.
     */
    static void checkInBounds(final byte[] message) {
        final SbeEventFrame frame = new SbeEventFrame();
        final UnsafeBuffer buffer = new UnsafeBuffer(Arrays.copyOf(message, message.length + SLACK));
        final int result = frame.check(buffer, 0, message.length);
        assertTrue(result >= SbeEventFrame.OK && result <= SbeEventFrame.NO_POD, "result " + result);
        if (result != SbeEventFrame.OK) {
            return;
        }
        final MessageHeaderDecoder header = new MessageHeaderDecoder();
        final int limit;
        switch (frame.templateId()) {
            case BlockStoredDecoder.TEMPLATE_ID -> {
                final BlockStoredDecoder d = new BlockStoredDecoder().wrapAndApplyHeader(buffer, 0, header);
                final BlockStoredDecoder.BlocksDecoder blocks = d.blocks();
                while (blocks.hasNext()) {
                    blocks.next().hash();
                }
                final BlockStoredDecoder.TokensDecoder tokens = d.tokens();
                while (tokens.hasNext()) {
                    tokens.next().token();
                }
                d.skipPodId();
                d.skipModel();
                d.skipLoraName();
                limit = d.limit();
            }
            case BlockRemovedDecoder.TEMPLATE_ID -> {
                final BlockRemovedDecoder d = new BlockRemovedDecoder().wrapAndApplyHeader(buffer, 0, header);
                final BlockRemovedDecoder.BlocksDecoder blocks = d.blocks();
                while (blocks.hasNext()) {
                    blocks.next().hash();
                }
                d.skipPodId();
                d.skipModel();
                limit = d.limit();
            }
            default -> {
                // AllBlocksCleared, PodRegister, PodHeartbeat, PodDown: the same layout (root block, pod id, model);
                // wrap() rather than wrapAndApplyHeader(), which would refuse the other templates' ids.
                header.wrap(buffer, 0);
                final AllBlocksClearedDecoder d = new AllBlocksClearedDecoder().wrap(buffer,
                    MessageHeaderDecoder.ENCODED_LENGTH, header.blockLength(), header.version());
                d.skipPodId();
                d.skipModel();
                limit = d.limit();
            }
        }
        assertEquals(message.length, limit);
    }
}
