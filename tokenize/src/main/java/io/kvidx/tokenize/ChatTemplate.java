package io.kvidx.tokenize;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import io.kvidx.client.json.MiniJson;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A model's chat template (Jinja), rendered as transformers' {@code apply_chat_template(..., tokenize=False)} does
 * for vLLM's OpenAI server: template variables {@code messages}, {@code tools}, {@code add_generation_prompt}, the
 * tokenizer's special tokens ({@code bos_token}, {@code eos_token}, ... from {@code tokenizer_config.json}) and the
 * request's kwargs, in the Jinja environment of {@link HfJinja}. The rendered text is then tokenized without
 * special tokens ({@code add_special_tokens=False}: the template wrote them).
 *
 * <p>Loaded from a model directory: {@code chat_template.jinja} when present (recent models ship the template in
 * that file), else {@code tokenizer_config.json}'s {@code chat_template}, a string or a list of
 * {@code {"name", "template"}} (then {@code tool_use} serves requests with tools when present, else
 * {@code default}, as transformers chooses).
 *
 * <p><b>Note:</b> immutable and thread safe: each render runs in its own jinjava interpreter.
 */
public final class ChatTemplate {
    /** The tokenizer configuration file of a model directory. */
    public static final String CONFIG_FILE = "tokenizer_config.json";
    /** The template file of recent model directories. */
    public static final String JINJA_FILE = "chat_template.jinja";

    private static final List<String> SPECIAL_TOKENS = List.of("bos_token", "eos_token", "unk_token", "sep_token",
        "pad_token", "cls_token", "mask_token");
    private static final Jinjava JINJAVA = HfJinja.create();
    private static final Pattern FOR_LOOP = Pattern.compile("\\{%-?\\s*for\\s+(\\w+)\\s+in\\s+([^%]*?)\\s*-?%}");
    private static final Pattern SET_VAR = Pattern.compile("\\{%-?\\s*set\\s+(\\w+)\\s*=\\s*([^%]*?)\\s*-?%}");

    private final String source;
    private final String template;
    private final Map<String, String> named;
    private final Map<String, Object> specialTokens;

    private ChatTemplate(final String source, final String template, final Map<String, String> named,
        final Map<String, Object> specialTokens) {
        this.source = source;
        this.template = template;
        this.named = Map.copyOf(named);
        this.specialTokens = specialTokens;
    }

    /**
     * A template given as text.
     *
     * @param template      the Jinja template.
     * @param specialTokens variables such as {@code bos_token} (may be empty).
     * @return the template.
     */
    public static ChatTemplate of(final String template, final Map<String, ?> specialTokens) {
        return new ChatTemplate("(given)", Objects.requireNonNull(template, "template"), Map.of(),
            Map.copyOf(specialTokens));
    }

    /**
     * Loads a model's chat template.
     *
     * @param pathOrDir a model directory, its {@code tokenizer_config.json} or its {@code tokenizer.json} (the
     *                  directory holding it is read).
     * @return the template.
     * @throws IllegalArgumentException when the directory has no readable {@code chat_template.jinja} and its
     *                                  {@code tokenizer_config.json} has no {@code chat_template}, or a file is
     *                                  not valid.
     */
    public static ChatTemplate load(final Path pathOrDir) {
        final ChatTemplate t = loadIfPresent(pathOrDir);
        if (t == null) {
            final Path dir = Files.isDirectory(pathOrDir) ? pathOrDir : pathOrDir.toAbsolutePath().getParent();
            throw new IllegalArgumentException("no chat template for " + dir.toAbsolutePath() + ": neither "
                + JINJA_FILE + " nor a chat_template in " + CONFIG_FILE);
        }
        return t;
    }

    /**
     * Loads a model's chat template when it has one.
     *
     * @param pathOrDir as for {@link #load(Path)}.
     * @return the template, or null when the directory has neither {@code chat_template.jinja} nor a
     *         {@code chat_template} in {@code tokenizer_config.json}.
     * @throws IllegalArgumentException when a file is there but not valid.
     */
    public static ChatTemplate loadIfPresent(final Path pathOrDir) {
        Objects.requireNonNull(pathOrDir, "pathOrDir");
        final Path dir = Files.isDirectory(pathOrDir) ? pathOrDir : pathOrDir.toAbsolutePath().getParent();
        final Path config = Files.isRegularFile(pathOrDir) && pathOrDir.getFileName().toString().equals(CONFIG_FILE)
            ? pathOrDir : dir.resolve(CONFIG_FILE);
        final Map<?, ?> cfg = Files.isRegularFile(config) ? readConfig(config) : Map.of();
        final Map<String, Object> tokens = new LinkedHashMap<>();
        for (final String key : SPECIAL_TOKENS) {
            final String token = token(config, key, cfg.get(key));
            if (token != null && !token.isEmpty()) {
                tokens.put(key, token);
            }
        }
        if (cfg.get("additional_special_tokens") instanceof List<?> extra && !extra.isEmpty()) {
            tokens.put("additional_special_tokens", extra.stream().map(t -> token(config, "additional_special_tokens",
                t)).toList());
        }
        final Map<String, String> named = new HashMap<>();
        String template = null;
        String source = config.toAbsolutePath().toString();
        final Object raw = cfg.get("chat_template");
        if (raw instanceof String s) {
            template = s;
        } else if (raw instanceof List<?> list) {
            for (final Object o : list) {
                if (!(o instanceof Map<?, ?> m) || !(m.get("name") instanceof String name)
                    || !(m.get("template") instanceof String t)) {
                    throw new IllegalArgumentException(config.toAbsolutePath() + ": chat_template list entries must"
                        + " be {\"name\": ..., \"template\": ...}");
                }
                named.put(name, t);
            }
            template = named.get("default");
        } else if (raw != null) {
            throw new IllegalArgumentException(config.toAbsolutePath() + ": chat_template must be a string or a list"
                + " of named templates");
        }
        final Path jinja = dir.resolve(JINJA_FILE);
        if (Files.isRegularFile(jinja)) {
            try {
                template = Files.readString(jinja);
                source = jinja.toAbsolutePath().toString();
            } catch (final IOException ex) {
                throw new IllegalArgumentException("cannot read " + jinja.toAbsolutePath() + ": " + ex.getMessage(),
                    ex);
            }
        }
        if (template == null && named.isEmpty()) {
            return null;
        }
        return new ChatTemplate(source, template, named, Map.copyOf(tokens));
    }

    private static Map<?, ?> readConfig(final Path config) {
        try {
            final Object parsed;
            try {
                parsed = MiniJson.parse(Files.readString(config));
            } catch (final IllegalArgumentException ex) {
                throw new IllegalArgumentException(config.toAbsolutePath() + " is not valid JSON: " + ex.getMessage(),
                    ex);
            }
            if (parsed instanceof Map<?, ?> m) {
                return m;
            }
            throw new IllegalArgumentException(config.toAbsolutePath() + " is not a JSON object");
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read " + config.toAbsolutePath() + ": " + ex.getMessage(), ex);
        }
    }

    /** A special token: a string, or an AddedToken object's {@code content}. */
    private static String token(final Path config, final String key, final Object value) {
        if (value == null || value instanceof String) {
            return (String) value;
        }
        if (value instanceof Map<?, ?> m && m.get("content") instanceof String s) {
            return s;
        }
        throw new IllegalArgumentException(config.toAbsolutePath() + ": " + key + " must be a string or an object"
            + " with \"content\"");
    }

    /**
     * Renders a chat-completion request as vLLM does, including {@code continue_final_message}.
     *
     * @param request the request.
     * @param defaults template kwargs under the request's own (vLLM's {@code --default-chat-template-kwargs});
     *                 may be empty.
     * @return the prompt text.
     * @throws IllegalArgumentException when the template raises, fails, or the request is malformed.
     */
    public String render(final ChatRequest request, final Map<String, ?> defaults) {
        final String t = select(request.tools());
        final List<Map<String, Object>> messages = request.messages(contentFormat(t));
        final Map<String, Object> kwargs = new LinkedHashMap<>(defaults);
        kwargs.putAll(request.kwargs());
        final String rendered = renderWith(t, messages, request.tools(), request.addGenerationPrompt(), kwargs);
        return request.continueFinalMessage() ? cutAfterFinalMessage(rendered, messages) : rendered;
    }

    /**
     * Renders messages already in the template's shape.
     *
     * @param messages            the conversation ({@code role}, {@code content}, ...).
     * @param tools               tool definitions, or null.
     * @param addGenerationPrompt end with the assistant header.
     * @param kwargs              more template variables (e.g. {@code enable_thinking}); may be empty.
     * @return the prompt text.
     * @throws IllegalArgumentException when the template raises or fails.
     */
    public String render(final List<? extends Map<String, ?>> messages, final List<? extends Map<String, ?>> tools,
        final boolean addGenerationPrompt, final Map<String, ?> kwargs) {
        return renderWith(select(tools), messages, tools, addGenerationPrompt, kwargs);
    }

    private String select(final List<?> tools) {
        if (named.isEmpty() || template != null && tools == null) {
            if (template == null) {
                throw new IllegalArgumentException(source + " has several chat templates and no \"default\": "
                    + named.keySet());
            }
            return template;
        }
        if (tools != null && named.containsKey("tool_use")) {
            return named.get("tool_use");
        }
        if (template != null) {
            return template;
        }
        throw new IllegalArgumentException(source + " has several chat templates and no \"default\": "
            + named.keySet());
    }

    private String renderWith(final String t, final List<? extends Map<String, ?>> messages,
        final List<? extends Map<String, ?>> tools, final boolean addGenerationPrompt, final Map<String, ?> kwargs) {
        final Map<String, Object> vars = new HashMap<>(specialTokens);
        vars.putAll(kwargs);
        vars.put("messages", messages);
        vars.put("tools", tools);
        vars.putIfAbsent("documents", null);
        vars.put("add_generation_prompt", addGenerationPrompt);
        final RenderResult result = JINJAVA.renderForResult(HfJinja.source(t), vars);
        for (final TemplateError e : result.getErrors()) {
            if (e.getSeverity() == TemplateError.ErrorType.FATAL) {
                throw new IllegalArgumentException("chat template " + source + " failed: " + reason(e));
            }
        }
        return result.getOutput();
    }

    private static String reason(final TemplateError e) {
        for (Throwable c = e.getException(); c != null; c = c.getCause()) {
            if (c instanceof HfJinja.TemplateRaisedException r) {
                return r.getMessage();
            }
        }
        final String m = e.getMessage();
        final int at = m == null ? -1 : m.indexOf(HfJinja.RAISED);
        return at >= 0 ? m.substring(at) : m + (e.getLineno() > 0 ? " (line " + e.getLineno() + ")" : "");
    }

    /** transformers' continue_final_message: cut the rendered chat right after the final message's text. */
    private static String cutAfterFinalMessage(final String rendered, final List<Map<String, Object>> messages) {
        final Object content = messages.getLast().get("content");
        String fin = null;
        if (content instanceof String s) {
            fin = s;
        } else if (content instanceof List<?> parts) {
            for (int i = parts.size() - 1; i >= 0 && fin == null; i--) {
                if (parts.get(i) instanceof Map<?, ?> p && p.get("text") instanceof String s) {
                    fin = s;
                }
            }
        }
        if (fin == null) {
            throw new IllegalArgumentException("continue_final_message is set but the final message has no text");
        }
        final String stripped = PyStrings.strip(fin, null, true, true);
        final int at = rendered.lastIndexOf(stripped);
        if (at < 0) {
            throw new IllegalArgumentException("continue_final_message is set but the final message does not appear"
                + " in the rendered chat");
        }
        final String lstripped = PyStrings.strip(fin, null, true, false);
        final int end = at + lstripped.length();
        if (end <= rendered.length() && rendered.substring(at, end).equals(fin)) {
            return rendered.substring(0, end);
        }
        return rendered.substring(0, at + stripped.length());
    }

    /**
     * vLLM's content-format detection ({@code _detect_content_format}): a template that loops over a message's
     * {@code content} takes OpenAI-style parts, others a string. vLLM walks the Jinja AST; this walks the template's
     * {@code for} and {@code set} tags: variables assigned from {@code messages}, loops over them, and a loop over
     * such a loop variable's {@code .content} / {@code ['content']}.
     *
     * @param t a template.
     * @return its content format.
     */
    static ChatRequest.ContentFormat contentFormat(final String t) {
        final Set<String> messageLists = new java.util.HashSet<>(Set.of("messages"));
        boolean grew = true;
        while (grew) {
            grew = false;
            final Matcher set = SET_VAR.matcher(t);
            while (set.find()) {
                if (refersTo(set.group(2), messageLists, null) && messageLists.add(set.group(1))) {
                    grew = true;
                }
            }
        }
        final Set<String> messageVars = new java.util.HashSet<>();
        Matcher loop = FOR_LOOP.matcher(t);
        while (loop.find()) {
            if (refersTo(loop.group(2), messageLists, null)) {
                messageVars.add(loop.group(1));
            }
        }
        loop = FOR_LOOP.matcher(t);
        while (loop.find()) {
            if (refersTo(loop.group(2), messageVars, "content")) {
                return ChatRequest.ContentFormat.OPENAI;
            }
        }
        return ChatRequest.ContentFormat.STRING;
    }

    /** Whether an expression is {@code var}, {@code var[...]}, {@code var|filter} (or its {@code key} item). */
    private static boolean refersTo(final String expr, final Set<String> vars, final String key) {
        final String e = expr.strip();
        for (final String v : vars) {
            if (!e.startsWith(v)) {
                continue;
            }
            String rest = e.substring(v.length()).stripLeading();
            if (key != null) {
                if (rest.startsWith("." + key)) {
                    rest = rest.substring(key.length() + 1);
                } else if (rest.startsWith("['" + key + "']") || rest.startsWith("[\"" + key + "\"]")) {
                    rest = rest.substring(key.length() + 4);
                } else {
                    continue;
                }
                rest = rest.stripLeading();
            }
            if (rest.isEmpty() || rest.startsWith("|") || rest.startsWith("[") && key == null) {
                return true;
            }
            if (key != null && (rest.startsWith("|") || rest.isEmpty())) {
                return true;
            }
        }
        return false;
    }

    /**
     * @return where the template was read from.
     */
    public String source() {
        return source;
    }

    /**
     * @return the special-token variables given to the template.
     */
    public Map<String, Object> specialTokens() {
        return specialTokens;
    }

    @Override
    public String toString() {
        return "ChatTemplate[" + source + "]";
    }
}
