package io.kvidx.tokenize;

import io.kvidx.client.json.MiniJson;
import io.kvidx.routing.Preparer;
import io.kvidx.routing.yaml.PluginParameters;
import io.kvidx.routing.yaml.PreparerType;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code tokenize} preparer of YAML profiles (found by {@link java.util.ServiceLoader} when this module is on
 * the class path):
 *
 * <pre>
 * prepare:
 *   - type: tokenize
 *     models:                          # model name: its directory (tokenizer.json, and for chats
 *       Qwen/Qwen3-0.6B: /models/qwen3  #   tokenizer_config.json or chat_template.jinja), or its tokenizer.json
 *     tokenizer: /models/default       # optional: for any model not listed
 *     add-special-tokens: true         # default, as vLLM tokenizes completion prompts (chats: never)
 *     chat-template-kwargs: '{"enable_thinking": false}'   # optional JSON object: template variables under
 *                                      #   each request's chat_template_kwargs (vLLM's --default-chat-template-kwargs)
 *     prefix-cache-entries: 4096       # optional: cache token ids of prefixes ending after a special token, per
 *     prefix-cache-tokens: 1048576     #   tokenizer (default 0 entries: off; tokens default 1048576)
 *   - type: router-keys
 * </pre>
 * Relative paths are resolved against the YAML file's directory.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class TokenizePreparerType implements PreparerType {
    /** The type name. */
    public static final String TYPE = "tokenize";

    @Override
    public String type() {
        return TYPE;
    }

    @Override
    public Preparer create(final String name, final PluginParameters params) {
        final TokenizePreparer.Builder b = TokenizePreparer.builder(name);
        for (final Map.Entry<String, String> e : params.stringMap("models").entrySet()) {
            b.model(e.getKey(), params.resolve(e.getValue()));
        }
        final Path any = params.path("tokenizer");
        if (any != null) {
            b.anyModel(any);
        }
        b.addSpecialTokens(params.bool("add-special-tokens", true));
        final int cacheEntries = params.integer("prefix-cache-entries", 0);
        if (cacheEntries == 0 && params.string("prefix-cache-tokens", null) != null) {
            throw new IllegalArgumentException("preparer '" + name + "': prefix-cache-tokens needs"
                + " prefix-cache-entries > 0 (the cache is off without it)");
        }
        b.prefixCache(cacheEntries,
            params.integer("prefix-cache-tokens", (int) TokenizePreparer.Builder.DEFAULT_PREFIX_CACHE_TOKENS));
        final String kwargs = params.string("chat-template-kwargs", null);
        if (kwargs != null) {
            final Object parsed;
            try {
                parsed = MiniJson.parse(kwargs);
            } catch (final IllegalArgumentException ex) {
                throw new IllegalArgumentException("preparer '" + name + "': chat-template-kwargs is not JSON: "
                    + ex.getMessage(), ex);
            }
            if (!(parsed instanceof Map<?, ?> m)) {
                throw new IllegalArgumentException("preparer '" + name + "': chat-template-kwargs must be a JSON"
                    + " object");
            }
            final Map<String, Object> kw = new LinkedHashMap<>();
            m.forEach((k, v) -> kw.put(String.valueOf(k), v));
            b.chatTemplateKwargs(kw);
        }
        return b.build();
    }
}
