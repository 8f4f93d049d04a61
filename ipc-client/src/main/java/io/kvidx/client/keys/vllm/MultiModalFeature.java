package io.kvidx.client.keys.vllm;

import java.util.Objects;

/**
 * One multimodal input of a request as vLLM keys it: its identifier (vLLM's mm hash) and its placeholder range
 * {@code [offset, offset + length)} in the prompt's tokens.
 *
 * @param identifier the multimodal item's identifier.
 * @param offset     first placeholder token.
 * @param length     number of placeholder tokens, at least 1.
 */
public record MultiModalFeature(String identifier, int offset, int length) {
    /**
     * @param identifier the multimodal item's identifier.
     * @param offset     first placeholder token.
     * @param length     number of placeholder tokens.
     */
    public MultiModalFeature {
        Objects.requireNonNull(identifier, "identifier");
        if (offset < 0 || length < 1) {
            throw new IllegalArgumentException("bad multimodal range: offset " + offset + ", length " + length);
        }
    }
}
