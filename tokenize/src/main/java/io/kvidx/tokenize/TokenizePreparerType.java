package io.kvidx.tokenize;

import io.kvidx.client.routing.Preparer;
import io.kvidx.client.routing.yaml.PluginParameters;
import io.kvidx.client.routing.yaml.PreparerType;

import java.nio.file.Path;
import java.util.Map;

/**
 * The {@code tokenize} preparer of YAML profiles (found by {@link java.util.ServiceLoader} when this module is on
 * the class path):
 *
 * <pre>
 * prepare:
 *   - type: tokenize
 *     models:                          # model name: tokenizer.json, or the directory holding it
 *       Qwen/Qwen3-0.6B: /models/qwen3
 *     tokenizer: /models/default       # optional: for any model not listed
 *     add-special-tokens: true         # default, as vLLM tokenizes completion prompts
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
        return b.build();
    }
}
