package io.kvidx.tokenize;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The test resources: Qwen3's tokenizer directory and the real vLLM capture (see their READMEs).
 */
final class TestData {
    private TestData() {
    }

    /** The directory holding Qwen3's tokenizer.json and tokenizer_config.json. */
    static Path qwen3Dir() {
        try {
            return Path.of(TestData.class.getResource("/qwen3/tokenizer.json").toURI()).getParent();
        } catch (final URISyntaxException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /** The capture's prompt and the token ids vLLM produced for it. */
    record Capture(String prompt, String model, int[] tokenIds) {
    }

    static Capture vllmCapture() {
        try (InputStream in = TestData.class.getResourceAsStream("/vllm/kv_event_base.json")) {
            final JsonObject o = JsonParser.parseString(new String(in.readAllBytes(), StandardCharsets.UTF_8))
                .getAsJsonObject();
            final JsonArray ids = o.getAsJsonArray("token_ids");
            final int[] tokens = new int[ids.size()];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = ids.get(i).getAsInt();
            }
            return new Capture(o.get("prompt").getAsString(), o.get("model_name").getAsString(), tokens);
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}
