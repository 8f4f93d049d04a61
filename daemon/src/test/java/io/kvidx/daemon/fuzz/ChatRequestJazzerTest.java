package io.kvidx.daemon.fuzz;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.kvidx.tokenize.ChatRequest;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Coverage-guided fuzzing (Jazzer) of the tokenize module's {@link ChatRequest#parse} (here because the daemon
 * module already carries Jazzer): any body is a request, whose messages, tools and kwargs can be read in every
 * content format, or is refused with an {@link IllegalArgumentException}; nothing else escapes.
 */
class ChatRequestJazzerTest {
    @FuzzTest(maxDuration = "10m")
    void shouldReadOrRefuseAnyBody(final byte[] body) {
        final ChatRequest request;
        try {
            request = ChatRequest.parse(new String(body, StandardCharsets.UTF_8));
        } catch (final IllegalArgumentException expected) {
            assertNotNull(expected.getMessage());
            return;
        }
        for (final ChatRequest.ContentFormat format : ChatRequest.ContentFormat.values()) {
            try {
                assertNotNull(request.messages(format));
            } catch (final IllegalArgumentException malformedMessage) {
                assertNotNull(malformedMessage.getMessage()); // documented: messages are checked when read
            }
        }
        request.tools(); // null without "tools"
        assertNotNull(request.kwargs());
        request.addGenerationPrompt();
        request.continueFinalMessage();
    }
}
