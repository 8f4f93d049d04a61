package io.kvidx.routing;

import io.kvidx.client.keys.RequestExtras;

/**
 * A request's model, LoRA adapter, cache salt, multimodal items, prompt size, prompt text or chat request, and
 * headers (names compared case-insensitively), set by the router before a decision. Holds references to the
 * caller's strings; multimodal identifiers are copied into {@link #extras()}, whose arrays are reused across
 * requests.
 *
 * <p><b>Note:</b> not thread safe; owned by one {@link RoutingContext}.
 */
public final class RequestMeta {
    private static final int MAX_HEADERS = 32;

    private final String[] names = new String[MAX_HEADERS];
    private final String[] values = new String[MAX_HEADERS];
    private int headerCount;
    private String model;
    private String lora;
    private String cacheSalt;
    private int promptTokens = -1;
    private String prompt;
    private String chat;
    private final RequestExtras extras = new RequestExtras();

    /**
     * Forgets everything.
     */
    public void clear() {
        for (int i = 0; i < headerCount; i++) {
            names[i] = null;
            values[i] = null;
        }
        headerCount = 0;
        model = null;
        lora = null;
        cacheSalt = null;
        promptTokens = -1;
        prompt = null;
        chat = null;
        extras.clear();
    }

    /**
     * @param name  header name.
     * @param value header value.
     * @return this.
     */
    public RequestMeta header(final String name, final String value) {
        if (headerCount == MAX_HEADERS) {
            throw new IllegalStateException("more than " + MAX_HEADERS + " routing headers");
        }
        names[headerCount] = name;
        values[headerCount] = value;
        headerCount++;
        return this;
    }

    /**
     * @param name header name (case-insensitive).
     * @return its first value, or null.
     */
    public String header(final String name) {
        for (int i = 0; i < headerCount; i++) {
            if (names[i].equalsIgnoreCase(name)) {
                return values[i];
            }
        }
        return null;
    }

    /**
     * @param model model name, or null for any.
     * @return this.
     */
    public RequestMeta model(final String model) {
        this.model = model;
        return this;
    }

    /**
     * @return model name, or null.
     */
    public String model() {
        return model;
    }

    /**
     * @param lora LoRA adapter name, or null for the base model.
     * @return this.
     */
    public RequestMeta lora(final String lora) {
        this.lora = lora;
        return this;
    }

    /**
     * @return LoRA adapter name, or null.
     */
    public String lora() {
        return lora;
    }

    /**
     * @param salt the request's cache salt (vLLM's {@code cache_salt}), or null.
     * @return this.
     */
    public RequestMeta cacheSalt(final String salt) {
        this.cacheSalt = salt;
        return this;
    }

    /**
     * @return cache salt, or null.
     */
    public String cacheSalt() {
        return cacheSalt;
    }

    /**
     * @param tokens prompt length in tokens when no token ids are given (e.g. routing by keys); -1 for unknown.
     * @return this.
     */
    public RequestMeta promptTokens(final int tokens) {
        this.promptTokens = tokens;
        return this;
    }

    /**
     * @return prompt length set with {@link #promptTokens(int)}, or -1.
     */
    public int promptTokens() {
        return promptTokens;
    }

    /**
     * Sets the request's prompt as text, for a profile whose Prepare stage tokenizes it (a text preparer writes
     * {@link Slots#TOKENS} from it; kvidx-tokenize's {@code tokenize} preparer). Requests given as token ids leave it
     * null.
     *
     * @param text the prompt text, or null.
     * @return this.
     */
    public RequestMeta prompt(final String text) {
        this.prompt = text;
        return this;
    }

    /**
     * @return the prompt text set with {@link #prompt(String)}, or null.
     */
    public String prompt() {
        return prompt;
    }

    /**
     * Sets the request as a chat: the OpenAI chat-completion request body (JSON text holding {@code messages} and,
     * optionally, {@code tools}, {@code add_generation_prompt} (default true), {@code continue_final_message},
     * {@code chat_template_kwargs}, {@code documents}, {@code reasoning_effort}), for a profile whose Prepare stage
     * renders it with the model's chat template and tokenizes the result (kvidx-tokenize's {@code tokenize}
     * preparer). The text is kept as given and read only by such a preparer; it takes precedence over
     * {@link #prompt(String)}.
     *
     * @param requestJson the chat-completion request body, or null.
     * @return this.
     */
    public RequestMeta chat(final String requestJson) {
        this.chat = requestJson;
        return this;
    }

    /**
     * @return the chat request body set with {@link #chat(String)}, or null.
     */
    public String chat() {
        return chat;
    }

    /**
     * Adds a multimodal item of the prompt (an image, audio clip, ...): its identifier (vLLM's multimodal hash, or
     * the UUID the client gave it) and its placeholder tokens {@code [offset, offset + length)}. Blocks that overlap
     * it are keyed with it (docs/keys.md), so identical placeholder tokens of different items never share keys.
     *
     * @param identifier the item's identifier (copied).
     * @param offset     first placeholder token.
     * @param length     number of placeholder tokens.
     * @return this.
     */
    public RequestMeta multiModal(final CharSequence identifier, final int offset, final int length) {
        extras.addMultiModal(identifier, offset, length);
        return this;
    }

    /**
     * @return the request's multimodal items and prompt-embeds digests (cleared by {@link #clear()}).
     */
    public RequestExtras extras() {
        return extras;
    }
}
