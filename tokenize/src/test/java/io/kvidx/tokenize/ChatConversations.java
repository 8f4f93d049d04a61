package io.kvidx.tokenize;

import io.kvidx.client.json.MiniJson;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Generated chat conversations, each in two shapes: the OpenAI request a client sends ({@link Case#request()}:
 * tool-call arguments often as JSON strings, content sometimes as text parts or null, {@code reasoning_content},
 * tools without optional fields) and what vLLM passes to the template for it ({@link Case#messages()},
 * {@link Case#tools()}: arguments as objects, content as one string, {@code reasoning} and
 * {@code reasoning_content}, tools with {@code description}/{@code parameters} null when absent). The generator
 * writes both shapes itself, so a test of the request path checks kvidx's normalization as well as its rendering.
 */
final class ChatConversations {
    private static final String[] SYSTEM = {
        "You are a helpful assistant.", "Réponds en français.", "  Leading and trailing spaces  ",
        "Line one\nLine two\n\n", "Use <tool_call> tags {{ not jinja }} {% raw %}", "系统提示：简洁回答。",
    };
    private static final String[] TOOL_NAMES = {"get_weather", "search", "run_sql", "calc", "翻訳", "send_email"};
    private static final String[] DESCRIPTIONS = {
        "Get the weather", "Search \"the web\" for a query",
        "Run SQL; back\\slash and tab\there",
        "Control \u0001\u001f chars and DEL \u007f", "Ünïcödé — “quotes” ‘single’ \u2028 sep", "Line\nbreak",
    };

    private ChatConversations() {
    }

    /** One conversation: the request body, and the template's input vLLM makes of it. */
    record Case(Map<String, Object> request, List<Map<String, Object>> messages, List<Map<String, Object>> tools,
        boolean addGenerationPrompt, Map<String, Object> kwargs) {
    }

    static List<Case> generate(final long seed, final int n) {
        final Random r = new Random(seed);
        final List<String> texts = JsTokenizerCrossCheckTest.prompts(seed, 200);
        final List<Case> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(one(r, texts));
        }
        return out;
    }

    private static Case one(final Random r, final List<String> texts) {
        final List<Map<String, Object>> reqMessages = new ArrayList<>();
        final List<Map<String, Object>> tplMessages = new ArrayList<>();
        final boolean withTools = r.nextInt(3) == 0;
        if (r.nextInt(2) == 0) {
            add(r, reqMessages, tplMessages, "system", pick(r, SYSTEM, texts));
        }
        final int turns = 1 + r.nextInt(4);
        int callId = 0;
        for (int t = 0; t < turns; t++) {
            String user = text(r, texts);
            if (r.nextInt(8) == 0) {
                user = "<tool_response>" + user + "</tool_response>";
            }
            add(r, reqMessages, tplMessages, "user", user);
            if (t == turns - 1 && r.nextBoolean()) {
                break;
            }
            if (withTools && r.nextInt(2) == 0) {
                final int calls = 1 + r.nextInt(2);
                final List<Object> reqCalls = new ArrayList<>();
                final List<Object> tplCalls = new ArrayList<>();
                for (int c = 0; c < calls; c++) {
                    final String id = "call_" + callId++;
                    final Map<String, Object> args = object(r, 0);
                    final Map<String, Object> reqFn = new LinkedHashMap<>();
                    reqFn.put("name", TOOL_NAMES[r.nextInt(TOOL_NAMES.length)]);
                    reqFn.put("arguments", r.nextBoolean() ? json(args) : args);
                    final Map<String, Object> tplFn = new LinkedHashMap<>(reqFn);
                    tplFn.put("arguments", args);
                    reqCalls.add(map("id", id, "type", "function", "function", reqFn));
                    tplCalls.add(map("id", id, "type", "function", "function", tplFn));
                }
                final String content = r.nextBoolean() ? "" : said(r, texts);
                final Map<String, Object> req = map("role", "assistant", "content",
                    content.isEmpty() && r.nextBoolean() ? null : content);
                req.put("tool_calls", reqCalls);
                final Map<String, Object> tpl = map("role", "assistant", "content", content);
                tpl.put("tool_calls", tplCalls);
                reqMessages.add(req);
                tplMessages.add(tpl);
                for (int c = 0; c < calls; c++) {
                    final Map<String, Object> toolReq = map("role", "tool", "content", text(r, texts));
                    toolReq.put("tool_call_id", "call_" + (callId - calls + c));
                    final Map<String, Object> toolTpl = new LinkedHashMap<>(toolReq);
                    reqMessages.add(toolReq);
                    tplMessages.add(toolTpl);
                }
                if (r.nextBoolean()) {
                    add(r, reqMessages, tplMessages, "assistant", said(r, texts));
                }
            } else {
                final int kind = r.nextInt(4);
                if (kind == 0) {
                    final String reasoning = said(r, texts);
                    final String answer = said(r, texts);
                    final Map<String, Object> req = map("role", "assistant", "content", answer);
                    req.put(r.nextBoolean() ? "reasoning_content" : "reasoning", reasoning);
                    final Map<String, Object> tpl = map("role", "assistant", "content", answer);
                    tpl.put("reasoning", reasoning);
                    tpl.put("reasoning_content", reasoning);
                    reqMessages.add(req);
                    tplMessages.add(tpl);
                } else if (kind == 1) {
                    add(r, reqMessages, tplMessages, "assistant", "<think>\n" + said(r, texts) + "\n</think>\n\n"
                        + said(r, texts));
                } else {
                    add(r, reqMessages, tplMessages, "assistant", said(r, texts));
                }
            }
            if (r.nextInt(10) == 0) {
                add(r, reqMessages, tplMessages, "system", pick(r, SYSTEM, texts));
            }
        }
        List<Map<String, Object>> reqTools = null;
        List<Map<String, Object>> tplTools = null;
        if (withTools) {
            reqTools = new ArrayList<>();
            tplTools = new ArrayList<>();
            final int count = 1 + r.nextInt(3);
            for (int k = 0; k < count; k++) {
                final Map<String, Object> reqFn = map("name", TOOL_NAMES[r.nextInt(TOOL_NAMES.length)]);
                final Map<String, Object> tplFn = new LinkedHashMap<>(reqFn);
                final String description = r.nextInt(4) == 0 ? null : DESCRIPTIONS[r.nextInt(DESCRIPTIONS.length)];
                final Map<String, Object> parameters = r.nextInt(5) == 0 ? null : schema(r);
                if (description != null) {
                    reqFn.put("description", description);
                }
                if (parameters != null) {
                    reqFn.put("parameters", parameters);
                }
                tplFn.put("description", description);
                tplFn.put("parameters", parameters);
                final Map<String, Object> req = r.nextBoolean() ? map("type", "function", "function", reqFn)
                    : map("function", reqFn);
                reqTools.add(req);
                tplTools.add(map("type", "function", "function", tplFn));
            }
        }
        final boolean agp = r.nextInt(4) != 0;
        final Map<String, Object> body = new LinkedHashMap<>();
        body.put("model", "Qwen/Qwen3-0.6B");
        body.put("messages", reqMessages);
        if (reqTools != null) {
            body.put("tools", reqTools);
        }
        if (!agp || r.nextBoolean()) {
            body.put("add_generation_prompt", agp);
        }
        final Map<String, Object> kwargs = new LinkedHashMap<>();
        final int thinking = r.nextInt(3);
        if (thinking < 2) {
            kwargs.put("enable_thinking", thinking == 1);
            body.put("chat_template_kwargs", new LinkedHashMap<>(kwargs));
        }
        return new Case(body, tplMessages, tplTools, agp, kwargs);
    }

    /** Adds a plain message: content as a string, or (sometimes) as text parts joined by newlines. */
    private static void add(final Random r, final List<Map<String, Object>> req, final List<Map<String, Object>> tpl,
        final String role, final String content) {
        final String[] lines = content.split("\n", -1);
        boolean partsOk = lines.length > 1;
        for (final String l : lines) {
            partsOk &= !l.isEmpty();
        }
        if (partsOk && r.nextInt(3) == 0) {
            final List<Object> parts = new ArrayList<>();
            for (final String l : lines) {
                parts.add(map("type", "text", "text", l));
            }
            req.add(map("role", role, "content", parts));
        } else {
            req.add(map("role", role, "content", content));
        }
        tpl.add(map("role", role, "content", content));
    }

    private static String pick(final Random r, final String[] fixed, final List<String> texts) {
        return r.nextBoolean() ? fixed[r.nextInt(fixed.length)] : text(r, texts);
    }

    private static String text(final Random r, final List<String> texts) {
        return texts.get(r.nextInt(texts.size()));
    }

    /**
     * Assistant text: a generated text without whitespace at either end and without think tags. Qwen3's template calls
     * {@code strip('\n')}, {@code lstrip('\n')} and {@code rstrip('\n')} on assistant text; Python strips only
     * newlines there, but the JavaScript reference (@huggingface/jinja 0.5.11) ignores the argument and strips all
     * whitespace. Text without whitespace at its ends renders the same in both; {@link ChatTemplateTest} pins
     * Python's behaviour for text that has some.
     */
    private static String said(final Random r, final List<String> texts) {
        final String t = text(r, texts).replace("</think>", "").replace("<think>", "");
        int start = 0;
        int end = t.length();
        while (start < end && edgeSpace(t.codePointAt(start))) {
            start += Character.charCount(t.codePointAt(start));
        }
        while (end > start && edgeSpace(t.codePointBefore(end))) {
            end -= Character.charCount(t.codePointBefore(end));
        }
        return t.substring(start, end);
    }

    /** Whitespace to Python or to JavaScript's trim. */
    private static boolean edgeSpace(final int cp) {
        return PyStrings.isSpace(cp) || Character.isWhitespace(cp) || Character.isSpaceChar(cp) || cp == 0xFEFF;
    }

    private static Map<String, Object> schema(final Random r) {
        final Map<String, Object> props = new LinkedHashMap<>();
        final int n = 1 + r.nextInt(3);
        for (int i = 0; i < n; i++) {
            final Map<String, Object> p = map("type", r.nextBoolean() ? "string" : "number");
            if (r.nextBoolean()) {
                p.put("description", DESCRIPTIONS[r.nextInt(DESCRIPTIONS.length)]);
            }
            if (r.nextBoolean()) {
                p.put("minimum", r.nextBoolean() ? (Object) 0.5 : (Object) (-12));
            }
            props.put("p" + i + (r.nextBoolean() ? "_ü" : ""), p);
        }
        final Map<String, Object> s = map("type", "object", "properties", props);
        s.put("required", List.of("p0"));
        return s;
    }

    private static Map<String, Object> object(final Random r, final int depth) {
        final Map<String, Object> m = new LinkedHashMap<>();
        final int n = r.nextInt(4);
        for (int i = 0; i < n; i++) {
            m.put(i == 0 ? "city" : "k" + i + (r.nextBoolean() ? "ß" : ""), value(r, depth + 1));
        }
        return m;
    }

    private static Object value(final Random r, final int depth) {
        return switch (r.nextInt(depth > 2 ? 6 : 8)) {
            case 0 -> "Paris";
            case 1 -> "quote \" back\\ \n tab\t ünï 東京 \u0007";
            case 2 -> r.nextInt(2000) - 1000;
            case 3 -> new double[]{0.5, 2.25, -3.75, 1234.125}[r.nextInt(4)];
            case 4 -> r.nextBoolean();
            case 5 -> null;
            case 6 -> List.of(1, "two", List.of());
            default -> object(r, depth);
        };
    }

    private static String json(final Object v) {
        return MiniJson.write(v);
    }

    private static Map<String, Object> map(final Object... kv) {
        final Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }
}
