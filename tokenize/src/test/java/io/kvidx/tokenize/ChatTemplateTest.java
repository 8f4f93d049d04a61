package io.kvidx.tokenize;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(60)
class ChatTemplateTest {
    private static String render(final String template, final Map<String, Object> vars) {
        return ChatTemplate.of(template, Map.of()).render(List.of(), null, false, vars);
    }

    private static ChatTemplate qwen3() {
        return ChatTemplate.load(TestData.qwen3Dir());
    }

    @Test
    void shouldFailClearlyWhenTheTemplateRaises() {
        final ChatTemplate t = ChatTemplate.of("{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}"
            + "{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{{ m.content }}"
            + "{% endfor %}", Map.of());
        assertEquals("hi", t.render(List.of(Map.of("role", "user", "content", "hi")), null, true, Map.of()));
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> t.render(
            List.of(Map.of("role", "system", "content", "x")), null, true, Map.of()));
        assertTrue(ex.getMessage().contains("raise_exception: Only user and assistant roles are supported!"),
            ex.getMessage());
    }

    @Test
    void shouldRefuseAModelWithoutATemplate(@TempDir final Path dir) throws IOException {
        Files.writeString(dir.resolve(ChatTemplate.CONFIG_FILE), "{\"eos_token\": \"</s>\"}");
        assertNull(ChatTemplate.loadIfPresent(dir));
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> ChatTemplate.load(dir));
        assertTrue(ex.getMessage().startsWith("no chat template for "), ex.getMessage());
        assertTrue(ex.getMessage().contains("chat_template.jinja"), ex.getMessage());
        final Path empty = Files.createDirectory(dir.resolve("empty"));
        assertThrows(IllegalArgumentException.class, () -> ChatTemplate.load(empty));
        Files.writeString(dir.resolve(ChatTemplate.CONFIG_FILE), "{\"chat_template\": 7}");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ChatTemplate.load(dir)).getMessage()
            .contains("chat_template must be a string"));
    }

    @Test
    void shouldLoadTheJinjaFileNamedTemplatesAndSpecialTokens(@TempDir final Path dir) throws IOException {
        Files.writeString(dir.resolve(ChatTemplate.CONFIG_FILE), "{\"bos_token\": {\"content\": \"<s>\","
            + " \"lstrip\": false}, \"eos_token\": \"</s>\", \"chat_template\": [{\"name\": \"default\","
            + " \"template\": \"D{{ bos_token }}\"}, {\"name\": \"tool_use\","
            + " \"template\": \"T{{ tools|length }}{{ eos_token }}\"}]}");
        final ChatTemplate named = ChatTemplate.load(dir);
        final List<Map<String, Object>> msgs = List.of(Map.of("role", "user", "content", "x"));
        assertEquals("D<s>", named.render(msgs, null, true, Map.of()));
        assertEquals("T1</s>", named.render(msgs, List.of(Map.of("type", "function")), true, Map.of()));
        Files.writeString(dir.resolve(ChatTemplate.JINJA_FILE), "J{{ messages[0].content }}\n");
        assertEquals("Jx", ChatTemplate.load(dir).render(msgs, null, true, Map.of()), "the .jinja file wins");
    }

    @Test
    void shouldReadTemplatesAsJinja2Does() {
        assertEquals("a", render("a\n", Map.of()), "one trailing newline of the source is dropped");
        assertEquals("a\n", render("{{ 'a\\n' }}", Map.of()), "but not one the template writes");
        assertEquals("x\ny", render("x\r\ny", Map.of()));
        assertEquals("A\nB", render("{%- if true %}\n  {{- 'A\\n' + y }}\n{%- endif %}", Map.of("y", "B")));
        assertEquals("{{ x }}", render("{{ c }}", Map.of("c", "{{ x }}", "x", "no")), "no nested interpretation");
        assertEquals("a\u0000b\u0001", render("{{ c }}", Map.of("c", "a\u0000b\u0001")),
            "control characters as they are");
        assertEquals("6", render("{% set ns = namespace(i=xs|length - 1) %}{% set ns.i = ns.i * 2 %}{{ ns.i }}",
            Map.of("xs", List.of(1, 2, 3, 4))));
        assertEquals("1,2,|", render("{% for x in [1, 2, 3] %}{% if x == 3 %}{% break %}{% endif %}"
            + "{{ x }}{% if not loop.last %},{% endif %}{% endfor %}|", Map.of()));
    }

    @Test
    void shouldStripBlockIndentOnlyAtTheStartOfALine() {
        assertEquals("a, x|\ny|\n  z", render("a, {% if true %}x{% endif %}|\n  {% if true %}y{% endif %}|\n"
            + "  {%+ if true %}z{% endif %}", Map.of()));
        assertEquals("  {% raw %}", render("{% raw %}  {% raw %}{% endraw %}", Map.of()));
    }

    @Test
    void shouldCallPythonStringMethodsAndSlices() {
        assertEquals("['a', '']", render("[{% for p in s.split('</think>') %}'{{ p }}'{% if not loop.last %}, "
            + "{% endif %}{% endfor %}]", Map.of("s", "a</think>")), "trailing empty strings kept");
        assertEquals("[a.b]", render("[{{ 'a.b'.split('.')|join('.') }}]", Map.of()), "not a regular expression");
        assertEquals("|    x|", render("|{{ s.lstrip('\\n') }}|", Map.of("s", "\n\n    x")), "only newlines");
        assertEquals("|x|", render("|{{ s.strip() }}|", Map.of("s", "\u3000\u00a0 x\u2009\n")), "Python whitespace");
        assertEquals("cba|3,2,1|2,4|é", render("{{ 'abc'[::-1] }}|{{ [1, 2, 3][::-1]|join(',') }}|"
            + "{{ [1, 2, 3, 4, 5][1:4:2]|join(',') }}|{{ 'aé'[-1:] }}", Map.of()));
        assertEquals("yes|no|x-y", render("{{ 'yes' if 'ab'.startswith(('x', 'a')) }}|"
            + "{{ 'no' if not 'ab'.endswith('a') }}|{{ '-'.join(['x', 'y']) }}", Map.of()));
    }

    @Test
    void shouldPrintJsonAsPythonsJsonDumps() {
        final Map<String, Object> v = new LinkedHashMap<>();
        v.put("z", 1.0);
        v.put("a", List.of(1e-5, 1e16, 0.1, -0.0, new BigInteger("123456789012345678901234567890")));
        v.put("s", "é\"\\\n\u0001\u007f");
        v.put("n", null);
        v.put("e", Map.of());
        assertEquals("{\"z\": 1.0, \"a\": [1e-05, 1e+16, 0.1, -0.0, 123456789012345678901234567890], "
            + "\"s\": \"é\\\"\\\\\\n\\u0001\u007f\", \"n\": null, \"e\": {}}",
            render("{{ v|tojson }}", Map.of("v", v)));
        assertEquals("{\n  \"a\": [\n    1\n  ],\n  \"b\": \"\\u00e9\"\n}",
            render("{{ v|tojson(indent=2, ensure_ascii=true, sort_keys=true) }}",
                Map.of("v", Map.of("b", "é", "a", List.of(1)))));
    }

    @Test
    void shouldNormalizeARequestAsVllmDoes() {
        final ChatRequest r = ChatRequest.parse("{\"messages\": ["
            + "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"text\","
            + " \"text\": \"\"}, \"b\"], \"extra\": 1},"
            + "{\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"r\", \"tool_calls\": ["
            + "{\"id\": \"1\", \"type\": \"function\", \"function\": {\"name\": \"f\","
            + " \"arguments\": \"{\\\"x\\\": 1}\"}},"
            + "{\"id\": \"2\", \"type\": \"function\", \"function\": {\"name\": \"g\", \"arguments\": \"not json\"}}]},"
            + "{\"role\": \"tool\", \"tool_call_id\": \"1\", \"content\": \"ok\"}],"
            + "\"tools\": [{\"function\": {\"name\": \"f\"}}], \"reasoning_effort\": \"none\"}");
        final List<Map<String, Object>> m = r.messages(ChatRequest.ContentFormat.STRING);
        assertEquals(Map.of("role", "user", "content", "a\nb"), m.get(0));
        assertEquals("", m.get(1).get("content"));
        assertEquals("r", m.get(1).get("reasoning_content"));
        assertEquals("r", m.get(1).get("reasoning"));
        final List<?> calls = (List<?>) m.get(1).get("tool_calls");
        assertEquals(Map.of("x", 1L), ((Map<?, ?>) ((Map<?, ?>) calls.get(0)).get("function"))
            .get("arguments"));
        assertEquals(Map.of(), ((Map<?, ?>) ((Map<?, ?>) calls.get(1)).get("function")).get("arguments"));
        assertEquals("1", m.get(2).get("tool_call_id"));
        final Map<String, Object> fn = new LinkedHashMap<>();
        fn.put("name", "f");
        fn.put("description", null);
        fn.put("parameters", null);
        assertEquals(List.of(Map.of("type", "function", "function", fn)), r.tools());
        assertEquals(true, r.addGenerationPrompt());
        assertEquals(false, r.kwargs().get("enable_thinking"), "reasoning_effort none turns thinking off");
        assertEquals(List.of(Map.of("type", "text", "text", "a"), Map.of("type", "text", "text", "b")),
            r.messages(ChatRequest.ContentFormat.OPENAI).get(0).get("content"));
    }

    @Test
    void shouldRejectBadRequestsClearly() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ChatRequest.parse("{\"messages\": ["))
            .getMessage().startsWith("chat request is not valid JSON"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ChatRequest.parse("{\"prompt\": \"x\"}"))
            .getMessage().contains("\"messages\""));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ChatRequest.parse("{\"messages\": [{}]}")
            .messages(ChatRequest.ContentFormat.STRING)).getMessage().contains("messages[0] needs a string"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ChatRequest.parse("{\"messages\": [{\"role\":"
            + " \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": {\"url\": \"x\"}}]}]}")
            .messages(ChatRequest.ContentFormat.STRING)).getMessage().contains("only text parts"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ChatRequest.parse("{\"messages\": [{\"role\":"
            + " \"user\", \"content\": \"x\"}], \"add_generation_prompt\": true, \"continue_final_message\": true}"))
            .getMessage().contains("cannot both be true"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ChatRequest.parse("{\"messages\": [{\"role\":"
            + " \"user\", \"content\": \"x\"}], \"chat_template_kwargs\": {\"tools\": []}}")).getMessage()
            .contains("may not set \"tools\""));
    }

    @Test
    void shouldRenderQwen3AsPythonWhereTheJavaScriptReferenceDiffers() {
        // Python's lstrip('\n') keeps the spaces; @huggingface/jinja 0.5.11 strips them too.
        final String text = qwen3().render(ChatRequest.parse("{\"messages\": [{\"role\": \"user\", \"content\":"
            + " \"q\"}, {\"role\": \"assistant\", \"content\": \"<think>\\n  why \\n</think>\\n\\n  answer \"}],"
            + " \"add_generation_prompt\": false}"), Map.of());
        assertEquals("<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n  why \n</think>\n\n  answer "
            + "<|im_end|>\n", text);
    }

    @Test
    void shouldAddTheGenerationPromptAndContinueTheFinalMessage() {
        final String user = "{\"role\": \"user\", \"content\": \"Hi\"}";
        assertEquals("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", qwen3().render(
            ChatRequest.parse("{\"messages\": [" + user + "]}"), Map.of()), "add_generation_prompt defaults to true");
        assertEquals("<|im_start|>user\nHi<|im_end|>\n", qwen3().render(
            ChatRequest.parse("{\"messages\": [" + user + "], \"add_generation_prompt\": false}"), Map.of()));
        assertEquals("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", qwen3().render(
            ChatRequest.parse("{\"messages\": [" + user + "]}"), Map.of("enable_thinking", false)));
        assertEquals("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nSure, here",
            qwen3().render(ChatRequest.parse("{\"messages\": [" + user + ", {\"role\": \"assistant\", \"content\":"
                + " \"Sure, here\"}], \"add_generation_prompt\": false, \"continue_final_message\": true}"), Map.of()));
    }

    @Test
    void shouldDetectTheContentFormatAsVllmDoes() {
        assertEquals(ChatRequest.ContentFormat.STRING, ChatTemplate.contentFormat(
            "{%- for message in messages %}{{ message.content }}{%- endfor %}"));
        assertEquals(ChatRequest.ContentFormat.OPENAI, ChatTemplate.contentFormat("{% set msgs = messages[1:] %}"
            + "{% for message in msgs %}{% for part in message['content'] %}{{ part.text }}{% endfor %}{% endfor %}"));
        assertEquals("ab", ChatTemplate.of("{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}"
            + "{% endfor %}", Map.of()).render(ChatRequest.parse("{\"messages\": [{\"role\": \"user\", \"content\":"
            + " \"a\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"b\"}]}]}"), Map.of()));
    }

    @Test
    void shouldRenderFromManyThreads() throws Exception {
        final ChatTemplate t = qwen3();
        final List<ChatConversations.Case> cases = ChatConversations.generate(7L, 40);
        final List<String> expected = new ArrayList<>();
        for (final ChatConversations.Case c : cases) {
            expected.add(t.render(c.messages(), c.tools(), c.addGenerationPrompt(), c.kwargs()));
        }
        final ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            final List<Future<Boolean>> done = new ArrayList<>();
            for (int k = 0; k < 4; k++) {
                done.add(pool.submit(() -> {
                    for (int round = 0; round < 5; round++) {
                        for (int i = 0; i < cases.size(); i++) {
                            final ChatConversations.Case c = cases.get(i);
                            if (!expected.get(i).equals(t.render(c.messages(), c.tools(), c.addGenerationPrompt(),
                                c.kwargs()))) {
                                return false;
                            }
                        }
                    }
                    return true;
                }));
            }
            for (final Future<Boolean> f : done) {
                assertTrue(f.get());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
