package io.kvidx.tokenize;

import io.kvidx.client.json.JsonLimitException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A chat-completion body over {@link ChatRequest#LIMITS} is refused as a bad request carrying the typed JSON limit
 * error; one just inside them is read.
 */
@Timeout(30)
class ChatRequestTest {
    private static final String USER = "{\"messages\": [{\"role\": \"user\", \"content\": \"";

    private static JsonLimitException refused(final JsonLimitException.Limit limit, final String body) {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> ChatRequest.parse(body));
        assertTrue(ex.getMessage().startsWith("chat request refused: "), ex.getMessage());
        final JsonLimitException cause = assertInstanceOf(JsonLimitException.class, ex.getCause());
        assertEquals(limit, cause.limit(), cause.getMessage());
        return cause;
    }

    @Test
    void shouldRefuseAHostilyNestedBodyWithTheTypedError() {
        final String body = "{\"messages\": [{\"role\": \"user\", \"content\": " + "[".repeat(10_000);
        final JsonLimitException cause = refused(JsonLimitException.Limit.DEPTH, body);
        assertEquals(ChatRequest.LIMITS.maxDepth(), cause.max());
    }

    @Test
    void shouldRefuseAHundredThousandDigitNumberWithTheTypedError() {
        refused(JsonLimitException.Limit.NUMBER_CHARS, USER + "x\"}], \"seed\": " + "7".repeat(100_000) + "}");
    }

    @Test
    void shouldRefuseABodyOverTheBoundAndReadOneAtIt() {
        final String head = USER;
        final String tail = "\"}]}";
        final String content = "x".repeat(ChatRequest.MAX_BODY_CHARS - head.length() - tail.length());
        final String atBound = head + content + tail;
        assertEquals(ChatRequest.MAX_BODY_CHARS, atBound.length());
        assertEquals(content, ChatRequest.parse(atBound).messages(ChatRequest.ContentFormat.STRING).get(0)
            .get("content"));
        final JsonLimitException cause = refused(JsonLimitException.Limit.INPUT_CHARS, atBound + " ");
        assertEquals(ChatRequest.MAX_BODY_CHARS, cause.max());
    }

    @Test
    void shouldRefuseHostileToolCallArgumentsButKeepVllmsRuleForInvalidOnes() {
        final String calls = "{\"messages\": [{\"role\": \"assistant\", \"content\": null,"
            + " \"tool_calls\": [{\"id\": \"c\", \"type\": \"function\","
            + " \"function\": {\"name\": \"f\", \"arguments\": \"%s\"}}]}]}";
        final ChatRequest hostile = ChatRequest.parse(calls.formatted("[".repeat(10_000)));
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> hostile.messages(ChatRequest.ContentFormat.STRING));
        assertTrue(ex.getMessage().startsWith("chat request refused: tool call arguments: "), ex.getMessage());
        assertEquals(JsonLimitException.Limit.DEPTH, assertInstanceOf(JsonLimitException.class, ex.getCause()).limit());
        assertEquals(Map.of(), ChatRequest.arguments("{\"a\": "), "invalid arguments become {} as in vLLM");
        assertEquals(Map.of("a", 1L), ChatRequest.arguments("{\"a\": 1}"));
    }

    @Test
    void shouldStillCallAMalformedBodyInvalidJson() {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> ChatRequest.parse(USER + "x\"}"));
        assertTrue(ex.getMessage().startsWith("chat request is not valid JSON"), ex.getMessage());
    }
}
