package io.kvidx.tokenize;


import io.kvidx.client.json.JsonLimitException;
import io.kvidx.client.json.MiniJson;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A chat-completion request as vLLM hands it to a chat template: the OpenAI request body's {@code messages},
 * {@code tools}, {@code add_generation_prompt} (default true), {@code continue_final_message} (default false),
 * {@code documents}, {@code reasoning_effort} and {@code chat_template_kwargs}, normalized the way vLLM's OpenAI
 * server does before it calls transformers' {@code apply_chat_template} (vLLM's
 * {@code vllm/entrypoints/chat_utils.py} {@code _parse_chat_message_content} and {@code _postprocess_messages},
 * {@code ChatCompletionRequest.build_chat_params}, {@code FunctionDefinition}; see docs/routing.md for the commits
 * read):
 * <ul>
 *   <li>each message becomes {@code {role, content, ...}}: content {@code null} becomes {@code ""}; content parts
 *       become one string (the text parts joined with {@code "\n"}) for templates that treat content as a string,
 *       or a list of {@code {"type": "text", "text": ...}} for templates that loop over it
 *       ({@link ContentFormat}); only text parts are accepted (no multimodal items);</li>
 *   <li>an assistant message keeps its {@code tool_calls} (an empty list is dropped) and its {@code reasoning}
 *       (also {@code reasoning_content}, the deprecated name vLLM accepts, is renamed) under both names, which
 *       Qwen3's template reads; tool-call {@code arguments} given as a JSON string are parsed (an invalid string
 *       or a non-object becomes {@code {}}), since templates iterate or {@code tojson} them;</li>
 *   <li>a tool message keeps its {@code tool_call_id}; {@code name} is kept when it is a string; other fields are
 *       dropped;</li>
 *   <li>each tool becomes {@code {"type": "function", "function": {"name", "description", "parameters"}}}, the
 *       last two {@code null} when absent, as vLLM's pydantic model dumps it;</li>
 *   <li>template variables are {@code chat_template_kwargs} (over the configured defaults), then
 *       {@code add_generation_prompt}, {@code documents}, {@code reasoning_effort} and, when a reasoning effort is
 *       given and the kwargs have no {@code enable_thinking}, {@code enable_thinking = effort != "none"}.</li>
 * </ul>
 * JSON is read with {@link MiniJson} within {@link #LIMITS} (a body of at most {@link #MAX_BODY_CHARS}, nesting,
 * string, number and element counts at {@link MiniJson.Limits#DEFAULT}): integers stay integers (up to 64 chars),
 * other numbers are doubles (as Python's {@code json.loads}). A body over a limit, or a tool call's
 * {@code arguments} string over one, is refused with an {@link IllegalArgumentException} whose message starts with
 * {@code "chat request refused"} and whose cause is the {@link JsonLimitException}.
 *
 * <p><b>Note:</b> immutable after {@link #parse}; its maps and lists must not be changed by the caller.
 */
public final class ChatRequest {
    /** How a template reads message content; vLLM detects it from the template ({@code "auto"}). */
    public enum ContentFormat {
        /** Content is one string (text parts joined with a newline). */
        STRING,
        /** Content is a list of {@code {"type": "text", "text": ...}} parts. */
        OPENAI
    }

    /** The longest body {@link #parse} reads, in chars: 8 Mi (about two million tokens of English text). */
    public static final int MAX_BODY_CHARS = 8 << 20;

    /** What {@link #parse} accepts: {@link MiniJson.Limits#DEFAULT} within a body of {@link #MAX_BODY_CHARS}. */
    public static final MiniJson.Limits LIMITS = MiniJson.Limits.DEFAULT.withMaxInputChars(MAX_BODY_CHARS);

    private static final List<String> RESERVED_KWARGS = List.of("messages", "tools", "chat_template", "tokenize");

    private final Object rawMessages;
    private final List<Map<String, Object>> tools;
    private final boolean addGenerationPrompt;
    private final boolean continueFinalMessage;
    private final Map<String, Object> kwargs;

    private ChatRequest(final Object rawMessages, final List<Map<String, Object>> tools,
        final boolean addGenerationPrompt, final boolean continueFinalMessage, final Map<String, Object> kwargs) {
        this.rawMessages = rawMessages;
        this.tools = tools;
        this.addGenerationPrompt = addGenerationPrompt;
        this.continueFinalMessage = continueFinalMessage;
        this.kwargs = kwargs;
    }

    /**
     * Reads a chat-completion request body.
     *
     * @param json an OpenAI chat-completion request ({@code {"messages": [...], "tools": [...], ...}}).
     * @return the request.
     * @throws IllegalArgumentException when it is not such a request (the message says where), or it exceeds
     *                                  {@link #LIMITS} (the cause is the {@link JsonLimitException}).
     */
    public static ChatRequest parse(final String json) {
        Objects.requireNonNull(json, "json");
        final Object root;
        try {
            root = MiniJson.parse(json, LIMITS);
        } catch (final JsonLimitException ex) {
            throw refused("", ex);
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException("chat request is not valid JSON: " + ex.getMessage(), ex);
        }
        if (!(root instanceof Map<?, ?> body)) {
            throw new IllegalArgumentException("chat request must be a JSON object with \"messages\"");
        }
        return of(body);
    }

    private static IllegalArgumentException refused(final String where, final JsonLimitException ex) {
        return new IllegalArgumentException("chat request refused: " + where + ex.getMessage(), ex);
    }

    /**
     * @param body a parsed request body (maps, lists, strings, numbers, booleans, nulls).
     * @return the request.
     * @throws IllegalArgumentException when it is not a chat-completion request.
     */
    public static ChatRequest of(final Map<?, ?> body) {
        final Object messages = body.get("messages");
        if (!(messages instanceof List<?> list) || list.isEmpty()) {
            throw new IllegalArgumentException("chat request needs \"messages\": a non-empty array of messages");
        }
        final List<Map<String, Object>> tools = tools(body.get("tools"));
        final boolean addGenerationPrompt = bool(body, "add_generation_prompt", true);
        final boolean continueFinalMessage = bool(body, "continue_final_message", false);
        if (addGenerationPrompt && continueFinalMessage) {
            throw new IllegalArgumentException("chat request: continue_final_message and add_generation_prompt"
                + " cannot both be true");
        }
        final Map<String, Object> kwargs = new LinkedHashMap<>();
        final Object userKwargs = body.get("chat_template_kwargs");
        if (userKwargs != null) {
            if (!(userKwargs instanceof Map<?, ?> m)) {
                throw new IllegalArgumentException("chat request: chat_template_kwargs must be an object");
            }
            m.forEach((k, v) -> kwargs.put(String.valueOf(k), v));
        }
        for (final String reserved : RESERVED_KWARGS) {
            if (kwargs.containsKey(reserved)) {
                throw new IllegalArgumentException("chat request: chat_template_kwargs may not set \"" + reserved
                    + "\"");
            }
        }
        kwargs.put("add_generation_prompt", addGenerationPrompt);
        final Object documents = body.get("documents");
        if (documents != null) {
            if (!(documents instanceof List<?>)) {
                throw new IllegalArgumentException("chat request: documents must be an array of objects");
            }
            kwargs.put("documents", documents);
        }
        final Object effort = body.get("reasoning_effort");
        if (effort != null) {
            if (!(effort instanceof String e)) {
                throw new IllegalArgumentException("chat request: reasoning_effort must be a string");
            }
            kwargs.put("reasoning_effort", e);
            if (userKwargs == null || !((Map<?, ?>) userKwargs).containsKey("enable_thinking")) {
                kwargs.put("enable_thinking", !"none".equals(e));
            }
        }
        return new ChatRequest(messages, tools, addGenerationPrompt, continueFinalMessage,
            Collections.unmodifiableMap(kwargs));
    }

    private static boolean bool(final Map<?, ?> body, final String key, final boolean dflt) {
        final Object v = body.get(key);
        if (v == null) {
            return dflt;
        }
        if (!(v instanceof Boolean b)) {
            throw new IllegalArgumentException("chat request: " + key + " must be true or false");
        }
        return b;
    }

    private static List<Map<String, Object>> tools(final Object raw) {
        if (raw == null) {
            return null;
        }
        if (!(raw instanceof List<?> list)) {
            throw new IllegalArgumentException("chat request: tools must be an array");
        }
        final List<Map<String, Object>> out = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            if (!(list.get(i) instanceof Map<?, ?> tool)) {
                throw new IllegalArgumentException("chat request: tools[" + i + "] must be an object");
            }
            final Object type = tool.get("type");
            if (type != null && !"function".equals(type)) {
                throw new IllegalArgumentException("chat request: tools[" + i + "].type must be \"function\"");
            }
            if (!(tool.get("function") instanceof Map<?, ?> fn) || !(fn.get("name") instanceof String name)) {
                throw new IllegalArgumentException("chat request: tools[" + i + "] needs function.name");
            }
            final Object description = fn.get("description");
            if (description != null && !(description instanceof String)) {
                throw new IllegalArgumentException("chat request: tools[" + i + "].function.description must be a"
                    + " string");
            }
            final Object parameters = fn.get("parameters");
            if (parameters != null && !(parameters instanceof Map<?, ?>)) {
                throw new IllegalArgumentException("chat request: tools[" + i + "].function.parameters must be an"
                    + " object");
            }
            final Map<String, Object> f = new LinkedHashMap<>();
            f.put("name", name);
            f.put("description", description);
            f.put("parameters", parameters);
            final Object deferTool = tool.get("defer_loading");
            if (fn.get("strict") != null) {
                f.put("strict", fn.get("strict"));
            }
            final Object deferFn = fn.get("defer_loading") != null ? fn.get("defer_loading") : deferTool;
            if (deferFn != null) {
                f.put("defer_loading", deferFn);
            }
            final Map<String, Object> t = new LinkedHashMap<>();
            t.put("type", "function");
            t.put("function", f);
            if (deferTool != null) {
                t.put("defer_loading", deferTool);
            }
            out.add(t);
        }
        return out;
    }

    /**
     * The messages as vLLM passes them to the template.
     *
     * @param format how the template reads content.
     * @return the conversation (new maps; the caller may not change shared values).
     * @throws IllegalArgumentException for a malformed message.
     */
    public List<Map<String, Object>> messages(final ContentFormat format) {
        final List<?> list = (List<?>) rawMessages;
        final List<Map<String, Object>> out = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            out.add(message(i, list.get(i), format));
        }
        return out;
    }

    private static Map<String, Object> message(final int i, final Object raw, final ContentFormat format) {
        if (!(raw instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException("chat request: messages[" + i + "] must be an object");
        }
        if (!(m.get("role") instanceof String role)) {
            throw new IllegalArgumentException("chat request: messages[" + i + "] needs a string \"role\"");
        }
        final Map<String, Object> msg = new LinkedHashMap<>();
        msg.put("role", role);
        msg.put("content", content(i, m.get("content"), format));
        Object reasoning = m.get("reasoning");
        if (reasoning == null) {
            reasoning = m.get("reasoning_content");
        }
        if ("assistant".equals(role)) {
            final Object calls = m.get("tool_calls");
            if (calls != null) {
                msg.put("tool_calls", toolCalls(i, calls));
            }
            if (reasoning != null) {
                if (!(reasoning instanceof String)) {
                    throw new IllegalArgumentException("chat request: messages[" + i + "].reasoning must be a"
                        + " string");
                }
                msg.put("reasoning", reasoning);
                msg.put("reasoning_content", reasoning);
            }
        } else if ("tool".equals(role)) {
            if (m.containsKey("tool_call_id")) {
                msg.put("tool_call_id", m.get("tool_call_id"));
            }
            if (msg.get("content") instanceof List<?> parts) {
                msg.put("content", join(parts));
            }
        }
        if (m.get("name") instanceof String name) {
            msg.put("name", name);
        }
        if (m.get("task") instanceof String task) {
            msg.put("task", task);
        }
        if ("developer".equals(role)) {
            msg.put("tools", m.get("tools"));
        }
        if (msg.get("tool_calls") instanceof List<?> l && l.isEmpty()) {
            msg.remove("tool_calls");
        }
        return msg;
    }

    private static Object content(final int i, final Object content, final ContentFormat format) {
        final List<String> texts = new ArrayList<>();
        if (content instanceof String s) {
            texts.add(s);
        } else if (content instanceof List<?> parts) {
            for (int p = 0; p < parts.size(); p++) {
                final String text = partText(i, p, parts.get(p));
                if (text != null && !text.isEmpty()) {
                    texts.add(text);
                }
            }
        } else if (content != null) {
            throw new IllegalArgumentException("chat request: messages[" + i + "].content must be a string, an"
                + " array of parts or null");
        }
        if (format == ContentFormat.STRING) {
            return String.join("\n", texts);
        }
        final List<Map<String, Object>> out = new ArrayList<>(texts.size());
        for (final String t : texts) {
            final Map<String, Object> part = new LinkedHashMap<>();
            part.put("type", "text");
            part.put("text", t);
            out.add(part);
        }
        return out;
    }

    /** A text part's text, null for a text part without text (vLLM skips it, and empty ones). */
    private static String partText(final int i, final int p, final Object part) {
        if (part instanceof String s) {
            return s;
        }
        if (!(part instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException("chat request: messages[" + i + "].content[" + p + "] must be an"
                + " object");
        }
        if (!(m.get("type") instanceof String type)) {
            throw new IllegalArgumentException("chat request: messages[" + i + "].content[" + p
                + "] needs a string \"type\"");
        }
        final Object text = switch (type) {
            case "text", "input_text", "output_text" -> m.get("text");
            case "refusal" -> m.get("refusal");
            case "thinking" -> m.get("thinking");
            default -> throw new IllegalArgumentException("chat request: messages[" + i + "].content[" + p
                + "] is of type " + type + "; only text parts are supported (no multimodal items)");
        };
        if (text != null && !(text instanceof String)) {
            throw new IllegalArgumentException("chat request: messages[" + i + "].content[" + p + "] text must be"
                + " a string");
        }
        return (String) text;
    }

    private static String join(final List<?> parts) {
        final List<String> texts = new ArrayList<>();
        for (final Object p : parts) {
            if (p instanceof Map<?, ?> m && "text".equals(m.get("type"))) {
                final Object t = m.get("text");
                texts.add(t == null ? "" : t.toString());
            }
        }
        return String.join("\n", texts);
    }

    private static List<Object> toolCalls(final int i, final Object raw) {
        if (!(raw instanceof List<?> calls)) {
            throw new IllegalArgumentException("chat request: messages[" + i + "].tool_calls must be an array");
        }
        final List<Object> out = new ArrayList<>(calls.size());
        for (int c = 0; c < calls.size(); c++) {
            if (!(calls.get(c) instanceof Map<?, ?> call) || !(call.get("function") instanceof Map<?, ?> fn)) {
                throw new IllegalArgumentException("chat request: messages[" + i + "].tool_calls[" + c + "] needs a"
                    + " \"function\" object");
            }
            final Map<String, Object> f = new LinkedHashMap<>();
            fn.forEach((k, v) -> f.put(String.valueOf(k), v));
            f.put("arguments", arguments(fn.get("arguments")));
            final Map<String, Object> copy = new LinkedHashMap<>();
            call.forEach((k, v) -> copy.put(String.valueOf(k), v));
            copy.put("function", f);
            out.add(copy);
        }
        return out;
    }

    /**
     * vLLM's rule: a JSON string is parsed (invalid: {@code {}}); objects and arrays stay; anything else: {}. A string
     * over {@link #LIMITS} is refused.
     */
    static Object arguments(final Object args) {
        if (args instanceof String s) {
            try {
                return MiniJson.parse(s, LIMITS);
            } catch (final JsonLimitException ex) {
                throw refused("tool call arguments: ", ex);
            } catch (final IllegalArgumentException ex) {
                return new LinkedHashMap<String, Object>();
            }
        }
        if (args instanceof Map<?, ?> || args instanceof List<?>) {
            return args;
        }
        return new LinkedHashMap<String, Object>();
    }

    /**
     * @return the tools as vLLM dumps them, or null when the request has no {@code tools}.
     */
    public List<Map<String, Object>> tools() {
        return tools;
    }

    /**
     * @return whether to end with the assistant header (default true, as vLLM).
     */
    public boolean addGenerationPrompt() {
        return addGenerationPrompt;
    }

    /**
     * @return whether to leave the final message open (cut after its content).
     */
    public boolean continueFinalMessage() {
        return continueFinalMessage;
    }

    /**
     * @return the template variables besides messages, tools and special tokens.
     */
    public Map<String, Object> kwargs() {
        return kwargs;
    }
}
