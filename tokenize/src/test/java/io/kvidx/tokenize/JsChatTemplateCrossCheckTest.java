package io.kvidx.tokenize;

import io.kvidx.client.json.MiniJson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A few hundred generated chat conversations (multi-turn, system prompts anywhere, unicode, whitespace runs, special
 * tokens and Jinja syntax in content, tool definitions, tool calls with arguments as objects and as JSON strings,
 * tool results, reasoning given as a field or as {@code <think>} text, content as parts or null,
 * {@code add_generation_prompt} and {@code enable_thinking} on and off) rendered with Qwen3's chat template: the
 * text kvidx renders from the OpenAI request ({@link ChatRequest} then {@link ChatTemplate}) and the token ids of it
 * (without special tokens) equal those of Hugging Face's JavaScript implementation given what vLLM passes to the
 * template ({@code tokenizer.apply_chat_template(messages, {tools, add_generation_prompt, tokenize: false})}).
 */
@Timeout(600)
class JsChatTemplateCrossCheckTest {
    private static final int CHATS = 300;

    @Test
    void shouldRenderAndTokenizeChatsLikeHuggingFacesJavaScript(@TempDir final Path dir)
        throws IOException, InterruptedException {
        NodeReference.require();
        final List<ChatConversations.Case> cases = ChatConversations.generate(20261123L, CHATS);
        final List<Map<String, Object>> chats = new ArrayList<>();
        for (final ChatConversations.Case c : cases) {
            final Map<String, Object> chat = new LinkedHashMap<>();
            chat.put("messages", c.messages());
            chat.put("tools", c.tools());
            chat.put("add_generation_prompt", c.addGenerationPrompt());
            chat.put("kwargs", c.kwargs());
            chats.add(chat);
        }
        final Path input = Files.writeString(dir.resolve("chats.json"),
            MiniJson.write(Map.of("chats", chats)));
        final List<?> js = (List<?>) ((Map<?, ?>) MiniJson.parse(NodeReference.encode(TestData.qwen3Dir(), input)))
            .get("chats");
        assertEquals(cases.size(), js.size());
        final ChatTemplate template = ChatTemplate.load(TestData.qwen3Dir());
        int withTools = 0;
        int tokens = 0;
        try (HfTokenizer qwen3 = HfTokenizer.load(TestData.qwen3Dir(), true)) {
            for (int i = 0; i < cases.size(); i++) {
                final Map<?, ?> ref = (Map<?, ?>) js.get(i);
                assertTrue(ref.containsKey("text"), "chat " + i + ": the JavaScript reference failed: " + ref);
                final String request = MiniJson.write(cases.get(i).request());
                final String text = template.render(ChatRequest.parse(request), Map.of());
                final String want = (String) ref.get("text");
                if (!want.equals(text)) {
                    int at = 0;
                    while (at < Math.min(want.length(), text.length()) && want.charAt(at) == text.charAt(at)) {
                        at++;
                    }
                    final int from = Math.max(0, at - 60);
                    throw new AssertionError("chat " + i + " renders differently at char " + at + "\n  request: "
                        + request + "\n  javascript: ..." + MiniJson.write(
                            want.substring(from, Math.min(want.length(), at + 60)))
                        + "\n  kvidx:      ..." + MiniJson.write(
                            text.substring(from, Math.min(text.length(), at + 60))));
                }
                final List<?> ids = (List<?>) ref.get("ids");
                final int[] wantIds = new int[ids.size()];
                for (int j = 0; j < wantIds.length; j++) {
                    wantIds[j] = ((Number) ids.get(j)).intValue();
                }
                final int[] got = qwen3.encode(text, false);
                if (!Arrays.equals(wantIds, got)) {
                    throw new AssertionError("chat " + i + " tokenizes differently\n  javascript: "
                        + Arrays.toString(wantIds) + "\n  kvidx:      " + Arrays.toString(got));
                }
                tokens += got.length;
                withTools += cases.get(i).tools() != null ? 1 : 0;
            }
        }
        assertTrue(withTools > CHATS / 5, "tools in " + withTools + " chats");
        assertTrue(tokens > CHATS * 50, "the chats are not trivially short: " + tokens + " tokens");
    }
}
